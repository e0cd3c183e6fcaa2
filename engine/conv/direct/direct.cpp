#include "conv/direct/direct.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "conv/constants.hpp"
#include "context/element_build.hpp"
#include "conv/epilogue.hpp"
#include "conv/shared/wide_output.hpp"
#include "conv/tiled/copy_run.hpp"
#include "vulkan/shader_limits.hpp"

namespace vkconv::detail {

DirectReduction direct_reduction(const ConvProblem& p, Pass pass) {
    const uint64_t taps = uint64_t(p.R * p.S);
    if (pass == Pass::Forward) return {uint64_t(p.channels_per_group()), taps};
    if (pass == Pass::BackwardData) return {uint64_t(p.filters_per_group()), taps};
    return {uint64_t(p.N * p.P() * p.Q()), 1};
}

uint64_t DirectReduction::piece() const {
    return std::max<uint64_t>(1, kMaxLoopIterations / std::max<uint64_t>(1, unit_iterations));
}

template <typename Push>
void dispatch_direct(ContextImpl&, CommandStream& stream, const Pipeline& pipeline, std::span<const Binding> bindings,
                     Push push, uint64_t elements, uint64_t extent, uint64_t unit_iterations, bool add_first) {
    const uint64_t piece = DirectReduction{extent, unit_iterations}.piece();
    for (uint64_t begin = 0; begin < extent; begin += piece) {
        push.reduce_begin = static_cast<uint32_t>(begin);
        push.reduce_end = static_cast<uint32_t>(std::min(extent, begin + piece));
        push.accumulate = begin > 0 || add_first ? 1u : 0u;
        const uint64_t macs = (std::min(extent, begin + piece) - begin) * unit_iterations;
        dispatch_elements(stream, pipeline, bindings, push, elements, {2.0 * double(macs), macs});
    }
}
template void dispatch_direct(ContextImpl&, CommandStream&, const Pipeline&, std::span<const Binding>, DirectSizes,
                              uint64_t, uint64_t, uint64_t, bool);
template void dispatch_direct(ContextImpl&, CommandStream&, const Pipeline&, std::span<const Binding>,
                              DirectForwardPush, uint64_t, uint64_t, uint64_t, bool);

void record_direct_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const ConvOperands& operands, const Operand& wide) {
    using Id = contract::conv2d_direct::spec;
    const FusedEpilogue& epilogue = operands.epilogue;
    const uint64_t elements = uint64_t(problem.output_elements());
    // A device that allows fewer than 5 storage buffers per stage runs the variant without the residual's
    // binding: z is copied into y (widened into the copy) first, and the kernel reads it there (in place in y,
    // nothing to copy).
    const bool four = context.device->limits().maxPerStageDescriptorStorageBuffers < 5;
    if (four && wide && epilogue.has_residual())
        record_run(context, stream, epilogue.residual, 0, wide, 0, elements, false, problem.data_type, DataType::F32);
    else if (four)
        copy_residual_into_output(context, stream, epilogue, operands.output, problem.data_type);
    PipelineDesc desc;
    desc.shader = std::string(four ? "conv2d_direct_4" : "conv2d_direct") + element_build(context, problem.data_type);
    desc.bindings.assign(four ? 4 : 5, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(DirectForwardPush);
    Specialization<contract::conv2d_direct> spec;
    set_geometry(spec, problem);
    spec.set(Id::HAS_BIAS, problem.has_bias);
    spec.set(Id::ACTIVATION, activation_constant(epilogue.activation)).set(Id::HAS_RESIDUAL, epilogue.has_residual());
    const uint32_t type = element_constant(problem.data_type);
    for (uint32_t id : {Id::X_TYPE, Id::W_TYPE, Id::BIAS_TYPE, Id::Z_TYPE}) spec.set(id, type);
    spec.set(Id::Y_TYPE, wide ? element_constant(DataType::F32) : type);
    desc.specialization = spec.values();
    const Pipeline& pipeline = context.pipelines->get(desc);

    // Without a bias (a residual) the shader never reads binding 2 (4), but Vulkan wants it bound: the filter
    // stands in.
    const Window x = operands.input.whole(), w = operands.filter.whole(), b = operands.bias_or(operands.filter),
                 y = (wide ? wide : operands.output).whole();
    const Window z = epilogue.has_residual() ? epilogue.residual.whole() : w;
    const std::array<Binding, 5> all{Binding{x.range, false}, Binding{w.range, false}, Binding{b.range, false},
                                     Binding{y.range, true}, Binding{z.range, false}};
    const std::span<const Binding> bindings(all.data(), four ? 4 : 5);
    const DirectSizes sizes = direct_sizes(problem);
    DirectForwardPush push{};
    push.N = sizes.N, push.C = sizes.C, push.H = sizes.H, push.W = sizes.W, push.K = sizes.K;
    push.P = sizes.P, push.Q = sizes.Q;
    push.channels_per_group = sizes.channels_per_group, push.filters_per_group = sizes.filters_per_group;
    push.first0 = uint32_t(x.delta), push.first1 = uint32_t(w.delta), push.first2 = uint32_t(b.delta);
    push.first3 = uint32_t(y.delta), push.first4 = uint32_t(z.delta);
    push.alpha = epilogue.alpha, push.beta = epilogue.beta, push.negative_slope = epilogue.negative_slope;
    const DirectReduction reduction = direct_reduction(problem, Pass::Forward);
    dispatch_direct(context, stream, pipeline, bindings, push, elements, reduction.extent, reduction.unit_iterations);
    round_wide_output(context, stream, wide, operands.output, elements, problem.data_type);
}

}  // namespace vkconv::detail
