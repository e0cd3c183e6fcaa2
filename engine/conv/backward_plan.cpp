#include "conv/backward_plan.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "conv/constants.hpp"
#include "conv/direct/direct.hpp"
#include "conv/gemm_mapping.hpp"
#include "conv/im2col/im2col.hpp"
#include "gemm/gemm_config.hpp"
#include "vulkan/dispatch.hpp"
#include "vulkan/shader_limits.hpp"

namespace vkconv::detail {
namespace {

BackwardPlan plan_for(ContextImpl& context, const ConvProblem& p, Pass pass, Algorithm algorithm,
                      const ForwardOptions& options) {
    BackwardPlan plan;
    plan.pass = pass;
    plan.algorithm = algorithm;
    const bool filter = pass == Pass::BackwardFilter;
    switch (algorithm) {
        case Algorithm::Direct:
        case Algorithm::Auto:
            check_direct_bindings(context, p);
            break;
        case Algorithm::Depthwise:
            plan.depthwise = plan_depthwise(context, p, pass, options);
            plan.slots[0] = plan.depthwise.workspace_floats;
            plan.chunks = plan.depthwise.chunks;
            break;
        case Algorithm::Im2col:
            plan.lowered = plan_lowered(context, p, Algorithm::Im2col, options);
            plan.slots[0] = plan.lowered.scratch_floats;
            if (filter) {
                plan.im2col_splits =
                    backward_filter_splits(context, p, plan.lowered, storage_binding_limit(context, options));
                plan.slots[2] = backward_filter_partial_floats(p, plan.im2col_splits);
                // Under a workspace limit, fewer split pieces (down to none).
                while (options.workspace_limit && plan.im2col_splits > 1 &&
                       workspace_bytes_of(context, plan.slots) > options.workspace_limit) {
                    --plan.im2col_splits;
                    plan.slots[2] = backward_filter_partial_floats(p, plan.im2col_splits);
                }
            }
            plan.chunks = plan.lowered.chunks;
            break;
        case Algorithm::Mec: {
            // Backward runs Solution B's chunks: the lowered buffer holds L (or dL) and nothing else.
            ForwardOptions b = options;
            b.mec_schedule = MecSchedule::B;
            // Backward-data's reordered filter copy is workspace besides L in NHWC too.
            const uint64_t data_copy =
                !filter && p.layout == Layout::NHWC ? context.pool->round(uint64_t(p.filter_elements()) * 4) : 0;
            plan.lowered = plan_lowered(context, p, Algorithm::Mec, b, data_copy);
            plan.slots[0] = plan.lowered.scratch_floats;
            // Backward-data reads w through a copy with its taps reordered (both layouts); backward-filter
            // builds an OIHW gradient in OHWI order first.
            plan.slots[1] = filter ? plan.lowered.filter_floats : uint64_t(p.filter_elements());
            if (filter) {
                plan.mec_split =
                    mec_backward_filter_split(context, p, plan.lowered, storage_binding_limit(context, options));
                plan.slots[2] = plan.mec_split.slots * uint64_t(group_filter_floats(p));
                if (options.workspace_limit && workspace_bytes_of(context, plan.slots) > options.workspace_limit) {
                    // No split: each image's product adds into dw in turn, with no partial products.
                    plan.mec_split = MecFilterSplit{plan.lowered.rows, 1, 0};
                    plan.slots[2] = 0;
                }
            }
            plan.chunks = plan.lowered.chunks;
            break;
        }
    }
    if (filter && p.has_bias) {
        plan.bias = plan_bias_grad(context, p, options.max_binding_bytes);
        plan.slots[3] = plan.bias.partial_floats;
        if (options.workspace_limit && workspace_bytes_of(context, plan.slots) > options.workspace_limit) {
            // No partial sums: the fewest pieces one invocation's loop allows, added straight into db in turn.
            plan.bias.pieces = bias_pieces_for_loop_limit(p, plan.bias.images);
            plan.bias.in_place = plan.bias.pieces > 1;
            plan.bias.partial_floats = 0;
            plan.slots[3] = 0;
        }
    }
    plan.workspace_bytes = workspace_bytes_of(context, plan.slots);
    if (options.workspace_limit && plan.workspace_bytes > options.workspace_limit)
        throw Error(ErrorCategory::Unsupported,
                    std::string(to_string(algorithm)) + ": needs " + std::to_string(plan.workspace_bytes) +
                        " bytes of workspace, above the workspace limit of " + std::to_string(options.workspace_limit) +
                        " bytes (" + p.str() + ")");
    return plan;
}

// The plan, or nothing when the algorithm cannot run this problem (Unsupported).
std::optional<BackwardPlan> try_plan(ContextImpl& context, const ConvProblem& p, Pass pass, Algorithm algorithm,
                                     const ForwardOptions& options) {
    try {
        return plan_for(context, p, pass, algorithm, options);
    } catch (const Error& e) {
        if (e.category() != ErrorCategory::Unsupported) throw;
        return std::nullopt;
    }
}

template <typename Shader>
void record_direct(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const Operand& a,
                   const Operand& b, const Operand& out, uint64_t elements, uint64_t extent, uint64_t unit_iterations) {
    PipelineDesc desc;
    desc.shader = Shader::name;
    desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(DirectSizes);
    Specialization<Shader> spec;
    set_geometry(spec, p);
    desc.specialization = spec.values();
    const std::array<Binding, 3> bindings{Binding{a.whole(), false}, Binding{b.whole(), false},
                                          Binding{out.whole(), true}};
    dispatch_direct(context, stream, context.pipelines->get(desc), bindings, direct_sizes(p), elements, extent,
                    unit_iterations);
}

}  // namespace

void throw_nothing_fits(ContextImpl& context, const ConvProblem& p, const ForwardOptions& options) {
    const uint64_t im2col = smallest_lowered_workspace(context, p, Algorithm::Im2col);
    const uint64_t mec = smallest_lowered_workspace(context, p, Algorithm::Mec);
    const bool mec_smaller = mec < im2col;
    throw Error(
        options.workspace_limit ? ErrorCategory::InvalidArgument : ErrorCategory::Unsupported,
        "no algorithm fits: the smallest workspace any algorithm needs is " + std::to_string(std::min(im2col, mec)) +
            " bytes (" + (mec_smaller ? "mec" : "im2col") + ", one output row a chunk), the workspace limit is " +
            (options.workspace_limit ? std::to_string(options.workspace_limit) + " bytes" : "none") +
            ", and direct cannot bind these tensors whole within maxStorageBufferRange nor run them in tiles within "
            "the limit (" +
            p.str() + ")");
}

uint64_t workspace_bytes_of(const ContextImpl& context, const WorkspaceSlots& slots) {
    uint64_t bytes = 0;
    for (uint64_t floats : slots)
        if (floats) bytes += context.pool->round(floats * 4);
    return bytes;
}

BackwardPlan plan_backward(ContextImpl& context, const ConvProblem& p, Pass pass, Algorithm algorithm,
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
    if (auto direct = try_plan(context, p, pass, Algorithm::Direct, options)) return *direct;
    throw_nothing_fits(context, p, options);
}

void record_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const BackwardPlan& plan,
                          const Operand& dy, const Operand& w, const Operand& dx, std::span<const Operand> workspace) {
    switch (plan.algorithm) {
        case Algorithm::Direct:
        case Algorithm::Auto:
            record_direct<contract::conv2d_backward_data_direct>(context, stream, p, dy, w, dx,
                                                                 uint64_t(p.input_elements()),
                                                                 uint64_t(p.filters_per_group()), uint64_t(p.R * p.S));
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
            record_direct<contract::conv2d_backward_filter_direct>(
                context, stream, p, x, dy, dw, uint64_t(p.filter_elements()), uint64_t(p.N * p.P() * p.Q()), 1);
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

}  // namespace vkconv::detail
