#include "conv/direct/direct.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "conv/constants.hpp"
#include "vulkan/shader_limits.hpp"

namespace vkconv::detail {

std::optional<Refusal> direct_binding_refusal(const ContextImpl& context, const ConvProblem& problem) {
    const uint64_t range = context.device->limits().maxStorageBufferRange;
    for (const auto& [elements, role] : {std::pair{problem.input_elements(), "input"},
                                         {problem.filter_elements(), "filter"},
                                         {problem.output_elements(), "output"}})
        if (uint64_t(elements) * 4 > range)
            return unsupported("direct binds whole tensors, and the " + std::string(role) + "-shaped one (" +
                               std::to_string(uint64_t(elements) * 4) + " bytes) exceeds the device's " +
                               "maxStorageBufferRange (" + std::to_string(range) + " bytes): " + problem.str());
    return std::nullopt;
}

void dispatch_direct(ContextImpl&, CommandStream& stream, const Pipeline& pipeline,
                     std::span<const Binding> bindings, DirectSizes push, uint64_t elements, uint64_t extent,
                     uint64_t unit_iterations) {
    const uint64_t piece = std::max<uint64_t>(1, kMaxLoopIterations / std::max<uint64_t>(1, unit_iterations));
    for (uint64_t begin = 0; begin < extent; begin += piece) {
        push.reduce_begin = static_cast<uint32_t>(begin);
        push.reduce_end = static_cast<uint32_t>(std::min(extent, begin + piece));
        push.accumulate = begin > 0 ? 1u : 0u;
        dispatch_elements(stream, pipeline, bindings, push, elements);
    }
}

void record_direct_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const ConvOperands& operands) {
    PipelineDesc desc;
    desc.shader = "conv2d_direct";
    desc.bindings.assign(4, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(DirectSizes);
    Specialization<contract::conv2d_direct> spec;
    set_geometry(spec, problem);
    spec.set(contract::conv2d_direct::spec::HAS_BIAS, problem.has_bias);
    desc.specialization = spec.values();
    const Pipeline& pipeline = context.pipelines->get(desc);

    // Without a bias the shader never reads binding 2, but Vulkan wants it bound: the filter stands in.
    const Window x = operands.input.whole(), w = operands.filter.whole(), b = operands.bias_or(operands.filter),
                 y = operands.output.whole();
    const std::array<Binding, 4> bindings{Binding{x.range, false}, Binding{w.range, false}, Binding{b.range, false},
                                          Binding{y.range, true}};
    DirectSizes push = direct_sizes(problem);
    push.first0 = uint32_t(x.delta), push.first1 = uint32_t(w.delta), push.first2 = uint32_t(b.delta);
    push.first3 = uint32_t(y.delta);
    dispatch_direct(context, stream, pipeline, bindings, push, static_cast<uint64_t>(problem.output_elements()),
                    uint64_t(problem.channels_per_group()), uint64_t(problem.R * problem.S));
}

}  // namespace vkconv::detail
