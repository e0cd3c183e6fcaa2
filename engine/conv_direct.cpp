#include "conv_direct.hpp"

#include <array>
#include <string>

#include "conv_constants.hpp"

namespace vkconv::detail {

void check_direct_bindings(const ContextImpl& context, const ConvProblem& problem) {
    const uint64_t range = context.device->limits().maxStorageBufferRange;
    for (const auto& [elements, role] : {std::pair{problem.input_elements(), "input"},
                                         {problem.filter_elements(), "filter"},
                                         {problem.output_elements(), "output"}})
        if (uint64_t(elements) * 4 > range)
            throw Error(ErrorCategory::Unsupported, "direct binds whole tensors, and the " + std::string(role) +
                                                        "-shaped one (" + std::to_string(uint64_t(elements) * 4) +
                                                        " bytes) exceeds the device's "
                                                        "maxStorageBufferRange (" +
                                                        std::to_string(range) + " bytes): " + problem.str());
}

void record_direct_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const ForwardOperands& operands) {
    PipelineDesc desc;
    desc.shader = "conv2d_direct";
    desc.bindings.assign(4, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(DirectSizes);
    desc.specialization = geometry_constants(problem);
    desc.specialization.push_back(problem.has_bias ? 1u : 0u);
    const Pipeline& pipeline = context.pipelines->get(desc);

    // Without a bias the shader never reads binding 2, but Vulkan wants it bound: the filter stands in.
    const std::array<Binding, 4> bindings{
        Binding{operands.input.whole(), false}, Binding{operands.filter.whole(), false},
        Binding{operands.bias_or(operands.filter), false}, Binding{operands.output.whole(), true}};
    const DirectSizes push = direct_sizes(problem);
    dispatch_elements(context, stream, pipeline, bindings, push, static_cast<uint64_t>(problem.output_elements()));
}

}  // namespace vkconv::detail
