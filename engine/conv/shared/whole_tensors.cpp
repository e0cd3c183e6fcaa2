#include "conv/shared/whole_tensors.hpp"

#include <algorithm>
#include <string>

#include "context/context_impl.hpp"
#include "vulkan/device.hpp"

namespace vkconv::detail {

std::optional<Refusal> whole_tensors_refusal(const ContextImpl& context, const ConvProblem& problem,
                                             const char* algorithm) {
    const uint64_t range = context.device->limits().maxStorageBufferRange;
    const uint64_t bytes = element_bytes(problem.data_type);
    const uint64_t filter_bytes = std::max<uint64_t>(bytes, element_bytes(problem.weight_gradient_type()));
    for (const auto& [size, role] : {std::pair{uint64_t(problem.input_elements()) * bytes, "input"},
                                     {uint64_t(problem.filter_elements()) * filter_bytes, "filter"},
                                     {uint64_t(problem.output_elements()) * bytes, "output"}})
        if (size > range)
            return unsupported(std::string(algorithm) + " binds whole tensors, and the " + role + "-shaped one (" +
                               std::to_string(size) + " bytes) exceeds the device's maxStorageBufferRange (" +
                               std::to_string(range) + " bytes): " + problem.str());
    return std::nullopt;
}

}  // namespace vkconv::detail
