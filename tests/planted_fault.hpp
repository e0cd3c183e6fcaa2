// A fault planted in the engine for as long as a test holds it: the dispatches of the shaders it names go wrong
// (engine/vulkan/device.hpp, PlantedFault), repeatably. For tests that the checks which trust a result (find's
// and tune's verification) reject a wrong one.
#pragma once

#include <string>

#include "context/context_impl.hpp"

namespace vkt {

class PlantedFault {
public:
    using Kind = vkconv::detail::PlantedFault::Kind;
    // `shaders`: a shader's name, or "prefix*" for every shader whose name starts so.
    PlantedFault(vkconv::Context& context, std::string shaders, Kind kind)
        : device_(*vkconv::detail::impl_of(context).device) {
        device_.planted_fault = {std::move(shaders), kind};
    }
    ~PlantedFault() { device_.planted_fault = {}; }
    PlantedFault(const PlantedFault&) = delete;
    PlantedFault& operator=(const PlantedFault&) = delete;

private:
    vkconv::detail::Device& device_;
};

inline const char* name_of(PlantedFault::Kind kind) {
    return kind == PlantedFault::Kind::Skip ? "skipped" : "scrambled";
}

}  // namespace vkt
