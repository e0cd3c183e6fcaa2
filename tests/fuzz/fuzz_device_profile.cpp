// Fuzz target: the device-profile reader (detail::device_model_from_profile, what DeviceProfile::load and
// `vkconv plan --device-profile` run on a file's text) on arbitrary text. Every input must either give a
// model a planner can use (a name, at least one compute unit, the limits the planner divides by nonzero
// where the document set them so), or be refused with Error(InvalidArgument) naming the profile.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "vkconv/error.hpp"
#include "vulkan/device_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace vkconv::detail;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const DeviceModel model = device_model_from_profile(text, "'fuzz.json'");
        if (model.info.compute_units == 0) std::abort();
        if (model.info.name.empty()) std::abort();
        if (model.info.type.empty()) std::abort();
    } catch (const vkconv::Error& e) {
        if (e.category() != vkconv::ErrorCategory::InvalidArgument) std::abort();
        if (!std::string_view(e.what()).starts_with("device profile 'fuzz.json': ")) std::abort();
    }
    return 0;
}
