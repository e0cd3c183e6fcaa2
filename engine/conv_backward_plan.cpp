#include "conv_backward_plan.hpp"

#include <optional>
#include <string>

#include "conv_constants.hpp"
#include "conv_pass.hpp"
#include "elementwise.hpp"

namespace vkconv::detail {
namespace {

uint64_t binding_limit(const ContextImpl& context, const ForwardOptions& options) {
    const uint64_t range = context.device->limits().maxStorageBufferRange;
    return options.max_binding_bytes ? std::min(range, options.max_binding_bytes) : range;
}

DepthwisePass depthwise_pass(BackwardPass pass) {
    return pass == BackwardPass::Data ? DepthwisePass::BackwardData : DepthwisePass::BackwardFilter;
}

BackwardPlan plan_for(ContextImpl& context, const ConvProblem& p, BackwardPass pass, Algorithm algorithm,
                      const ForwardOptions& options) {
    BackwardPlan plan;
    plan.pass = pass;
    plan.algorithm = algorithm;
    const bool filter = pass == BackwardPass::Filter;
    switch (algorithm) {
        case Algorithm::Direct:
        case Algorithm::Auto:
            break;
        case Algorithm::Depthwise:
            plan.depthwise = plan_depthwise(context, p, depthwise_pass(pass), options);
            plan.slots[0] = plan.depthwise.workspace_floats;
            plan.chunks = plan.depthwise.chunks;
            break;
        case Algorithm::Im2col:
            plan.lowered = plan_lowered(context, p, Algorithm::Im2col, options);
            plan.slots[0] = plan.lowered.scratch_floats;
            if (filter) {
                plan.im2col_splits = backward_filter_splits(context, p, plan.lowered, binding_limit(context, options));
                plan.slots[2] = backward_filter_partial_floats(p, plan.im2col_splits);
            }
            plan.chunks = plan.lowered.chunks;
            break;
        case Algorithm::Mec: {
            // Backward runs Solution B's chunks: the lowered buffer holds L (or dL) and nothing else.
            ForwardOptions b = options;
            b.mec_schedule = MecSchedule::B;
            plan.lowered = plan_lowered(context, p, Algorithm::Mec, b);
            plan.slots[0] = plan.lowered.scratch_floats;
            // Backward-data reads w through a copy with its taps reordered (both layouts); backward-filter
            // builds an OIHW gradient in OHWI order first.
            plan.slots[1] = filter ? plan.lowered.filter_floats : uint64_t(p.filter_elements());
            if (filter) {
                plan.mec_split = mec_backward_filter_split(context, p, plan.lowered, binding_limit(context, options));
                plan.slots[2] =
                    plan.mec_split.slots * uint64_t(p.filters_per_group() * p.R * p.S * p.channels_per_group());
            }
            plan.chunks = plan.lowered.chunks;
            break;
        }
    }
    plan.workspace_bytes = workspace_bytes_of(context, plan.slots);
    return plan;
}

// The plan, or nothing when the algorithm cannot run this problem (Unsupported).
std::optional<BackwardPlan> try_plan(ContextImpl& context, const ConvProblem& p, BackwardPass pass, Algorithm algorithm,
                                     const ForwardOptions& options) {
    try {
        return plan_for(context, p, pass, algorithm, options);
    } catch (const Error& e) {
        if (e.category() != ErrorCategory::Unsupported) throw;
        return std::nullopt;
    }
}

void record_direct(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const char* shader,
                   const Operand& a, const Operand& b, const Operand& out, uint64_t elements) {
    PipelineDesc desc;
    desc.shader = shader;
    desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(DirectSizes);
    desc.specialization = geometry_constants(p);
    const std::array<Binding, 3> bindings{Binding{a.whole(), false}, Binding{b.whole(), false},
                                          Binding{out.whole(), true}};
    dispatch_elements(context, stream, context.pipelines->get(desc), bindings, direct_sizes(p), elements);
}

struct BiasPush {
    uint32_t dy_offset, images, accumulate;
    uint32_t base, count;
};

}  // namespace

uint64_t workspace_bytes_of(const ContextImpl& context, const std::array<uint64_t, 3>& slots) {
    uint64_t bytes = 0;
    for (uint64_t floats : slots)
        if (floats) bytes += context.pool->round(floats * 4);
    return bytes;
}

BackwardPlan plan_backward(ContextImpl& context, const ConvProblem& p, BackwardPass pass, Algorithm algorithm,
                           const ForwardOptions& options) {
    if (algorithm != Algorithm::Auto) return plan_for(context, p, pass, algorithm, options);
    // One input channel per group: a GEMM with a reduction of R*S (backward-data: K/G) is all overhead.
    if (is_depthwise(p)) {
        if (auto plan = try_plan(context, p, pass, Algorithm::Depthwise, options)) return *plan;
        return plan_for(context, p, pass, Algorithm::Direct, options);
    }
    // Otherwise, as forward: the lowering with the smaller workspace, direct when neither fits.
    auto im2col = try_plan(context, p, pass, Algorithm::Im2col, options);
    auto mec = try_plan(context, p, pass, Algorithm::Mec, options);
    if (mec && (!im2col || mec->workspace_bytes < im2col->workspace_bytes)) return *mec;
    if (im2col) return *im2col;
    return plan_for(context, p, pass, Algorithm::Direct, options);
}

void check_plan_bindings(const ContextImpl& context, const BackwardPlan& plan,
                         std::initializer_list<const Operand*> operands) {
    if (plan.algorithm != Algorithm::Direct) return;
    static constexpr const char* kRoles[2][3] = {{"grad_output", "filter", "grad_input"},
                                                 {"input", "grad_output", "grad_filter"}};
    int i = 0;
    for (const Operand* op : operands)
        check_whole_binding(context, *op, kRoles[plan.pass == BackwardPass::Filter][i++]);
}

void record_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const BackwardPlan& plan,
                          const Operand& dy, const Operand& w, const Operand& dx, std::span<const Operand> workspace) {
    switch (plan.algorithm) {
        case Algorithm::Direct:
        case Algorithm::Auto:
            record_direct(context, stream, p, "conv2d_backward_data_direct", dy, w, dx, uint64_t(p.input_elements()));
            break;
        case Algorithm::Depthwise:
            record_depthwise_backward_data(context, stream, p, dy, w, dx, plan.depthwise);
            break;
        case Algorithm::Im2col:
            record_im2col_backward_data(context, stream, p, dy, w, dx, plan.lowered, workspace[0]);
            break;
        case Algorithm::Mec:
            record_mec_backward_data(context, stream, p, dy, w, dx, plan.lowered, workspace[0], workspace[1]);
            break;
    }
}

void record_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const BackwardPlan& plan,
                            const Operand& x, const Operand& dy, const Operand& dw,
                            std::span<const Operand> workspace) {
    switch (plan.algorithm) {
        case Algorithm::Direct:
        case Algorithm::Auto:
            record_direct(context, stream, p, "conv2d_backward_filter_direct", x, dy, dw,
                          uint64_t(p.filter_elements()));
            break;
        case Algorithm::Depthwise:
            record_depthwise_backward_filter(context, stream, p, x, dy, dw, plan.depthwise, workspace[0]);
            break;
        case Algorithm::Im2col:
            record_im2col_backward_filter(context, stream, p, x, dy, dw, plan.lowered, workspace[0], plan.im2col_splits,
                                          workspace[2]);
            break;
        case Algorithm::Mec:
            record_mec_backward_filter(context, stream, p, x, dy, dw, plan.lowered, workspace[0], workspace[1],
                                       plan.mec_split, workspace[2]);
            break;
    }
}

void record_bias_grad(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const Operand& dy,
                      const Operand& db, uint64_t max_binding_bytes) {
    const uint64_t y_image = uint64_t(p.K * p.P() * p.Q()), align = context.pool->alignment();
    uint64_t limit = context.device->limits().maxStorageBufferRange;
    if (max_binding_bytes) limit = std::min(limit, max_binding_bytes);
    if (y_image * 4 + align > limit)
        throw Error(ErrorCategory::Unsupported, "one image of grad_output (" + std::to_string(y_image * 4) +
                                                    " bytes) exceeds the device's maxStorageBufferRange");
    const int64_t per_chunk = std::max<int64_t>(1, std::min<int64_t>(p.N, int64_t((limit - align) / (y_image * 4))));
    PipelineDesc desc;
    desc.shader = "bias_grad";
    desc.bindings.assign(2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(BiasPush);
    // Channels a workgroup (along the contiguous dimension in NHWC) times position lanes = 64 invocations.
    const uint32_t channels = p.layout == Layout::NHWC ? 16 : 1;
    static_assert(kElementwiseWorkgroup == 64);
    desc.specialization = {channels, static_cast<uint32_t>(p.K), static_cast<uint32_t>(p.P() * p.Q()),
                           p.layout == Layout::NHWC ? 1u : 0u, kElementwiseWorkgroup / channels};
    const Pipeline& pipeline = context.pipelines->get(desc);
    const uint64_t invocations = (uint64_t(p.K) + channels - 1) / channels * kElementwiseWorkgroup;
    for (int64_t n0 = 0; n0 < p.N; n0 += per_chunk) {
        const int64_t images = std::min(per_chunk, p.N - n0);
        const Window w = window(dy, n0 * y_image, images * y_image, align);
        const std::array<Binding, 2> bindings{Binding{w.range, false}, Binding{db.whole(), true}};
        dispatch_elements(
            context, stream, pipeline, bindings,
            BiasPush{static_cast<uint32_t>(w.delta), static_cast<uint32_t>(images), n0 > 0 ? 1u : 0u, 0, 0},
            invocations);
    }
}

}  // namespace vkconv::detail
