#include "conv_backward_plan.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "conv_constants.hpp"
#include "conv_direct.hpp"
#include "gemm_config.hpp"
#include "elementwise.hpp"
#include "shader_limits.hpp"

namespace vkconv::detail {
namespace {

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
            check_direct_bindings(context, p);
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
                plan.slots[2] =
                    plan.mec_split.slots * uint64_t(p.filters_per_group() * p.R * p.S * p.channels_per_group());
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
                   const Operand& a, const Operand& b, const Operand& out, uint64_t elements, uint64_t extent,
                   uint64_t unit_iterations) {
    PipelineDesc desc;
    desc.shader = shader;
    desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(DirectSizes);
    desc.specialization = geometry_constants(p);
    const std::array<Binding, 3> bindings{Binding{a.whole(), false}, Binding{b.whole(), false},
                                          Binding{out.whole(), true}};
    dispatch_direct(context, stream, context.pipelines->get(desc), bindings, direct_sizes(p), elements, extent,
                    unit_iterations);
}

struct BiasPush {
    uint32_t dy_offset, positions, piece, accumulate, first_piece;
    uint32_t base, count;
};

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
    if (auto direct = try_plan(context, p, pass, Algorithm::Direct, options)) return *direct;
    throw_nothing_fits(context, p, options);
}

void record_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const BackwardPlan& plan,
                          const Operand& dy, const Operand& w, const Operand& dx, std::span<const Operand> workspace) {
    switch (plan.algorithm) {
        case Algorithm::Direct:
        case Algorithm::Auto:
            record_direct(context, stream, p, "conv2d_backward_data_direct", dy, w, dx, uint64_t(p.input_elements()),
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
            record_direct(context, stream, p, "conv2d_backward_filter_direct", x, dy, dw, uint64_t(p.filter_elements()),
                          uint64_t(p.N * p.P() * p.Q()), 1);
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

int64_t bias_pieces_for_loop_limit(const ConvProblem& p, int64_t images) {
    const int64_t positions = images * p.P() * p.Q();
    return std::max<int64_t>(1, (positions + kMaxLoopIterations - 1) / kMaxLoopIterations);
}

BiasPlan plan_bias_grad(ContextImpl& context, const ConvProblem& p, uint64_t max_binding_bytes) {
    const uint64_t y_image = uint64_t(p.K * p.P() * p.Q()), align = context.pool->alignment();
    uint64_t limit = context.device->limits().maxStorageBufferRange;
    if (max_binding_bytes) limit = std::min(limit, max_binding_bytes);
    if (y_image * 4 + align > limit)
        throw Error(ErrorCategory::Unsupported, "one image of grad_output (" + std::to_string(y_image * 4) +
                                                    " bytes) exceeds the binding limit of " + std::to_string(limit) +
                                                    " bytes");
    BiasPlan plan;
    plan.images = std::max<int64_t>(1, std::min<int64_t>(p.N, int64_t((limit - align) / (y_image * 4))));
    // Enough (piece, channel) invocations to fill the device four times over (measured on lavapipe: fewer
    // leave the long per-invocation sums latency-bound), each summing at least 256 positions.
    const int64_t wanted = 4 * int64_t(context.gemm_configs().wanted_workgroups) * kElementwiseWorkgroup;
    const int64_t positions = plan.images * p.P() * p.Q();
    plan.pieces = std::clamp<int64_t>((wanted + p.K - 1) / p.K, 1, std::max<int64_t>(1, positions / 256));
    // No invocation may loop over more positions than lavapipe lets it (shader_limits.hpp).
    plan.pieces = std::max<int64_t>(plan.pieces, bias_pieces_for_loop_limit(p, plan.images));
    plan.partial_floats = plan.pieces > 1 ? uint64_t(plan.pieces * p.K) : 0;
    return plan;
}

void record_bias_grad(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const BiasPlan& plan,
                      const Operand& dy, const Operand& db, const Operand& partials) {
    const uint64_t y_image = uint64_t(p.K * p.P() * p.Q()), align = context.pool->alignment();
    PipelineDesc desc;
    desc.shader = "bias_grad";
    desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(BiasPush);
    // Every chunk's window starts a whole number of images in, so K % 4 == 0 keeps its delta vec4-aligned.
    const bool channels4 = p.layout == Layout::NHWC && p.K % 4 == 0;
    desc.specialization = {kElementwiseWorkgroup, static_cast<uint32_t>(p.K), static_cast<uint32_t>(p.P() * p.Q()),
                           p.layout == Layout::NHWC ? 1u : 0u, channels4 ? 1u : 0u};
    const Pipeline& pipeline = context.pipelines->get(desc);
    const uint64_t lanes = channels4 ? uint64_t(p.K / 4) : uint64_t(p.K);
    for (int64_t n0 = 0; n0 < p.N; n0 += plan.images) {
        const int64_t images = std::min(plan.images, p.N - n0);
        const Window w = window(dy, n0 * y_image, images * y_image, align);
        const int64_t positions = images * p.P() * p.Q();
        const int64_t piece = (positions + plan.pieces - 1) / plan.pieces;
        const int64_t pieces = (positions + piece - 1) / piece;
        BiasPush push{
            static_cast<uint32_t>(w.delta), static_cast<uint32_t>(positions), static_cast<uint32_t>(piece), 0, 0, 0, 0};
        if (pieces == 1 || plan.in_place) {
            // Straight into db, one piece after another, each adding to the pieces and chunks before it.
            const std::array<Binding, 3> bindings{Binding{w.range, false}, Binding{db.whole(), true},
                                                  Binding{w.range, false}};
            for (int64_t s = 0; s < pieces; ++s) {
                push.accumulate = n0 > 0 || s > 0 ? 1u : 0u;
                push.first_piece = static_cast<uint32_t>(s);
                dispatch_elements(stream, pipeline, bindings, push, lanes);
            }
        } else {
            // Partial sums of every piece at once, added in order.
            const std::array<Binding, 3> bindings{Binding{w.range, false}, Binding{partials.whole(), true},
                                                  Binding{w.range, false}};
            dispatch_elements(stream, pipeline, bindings, push, uint64_t(pieces) * lanes);
            record_splitk_reduce(context, stream, partials.whole(), db.whole(), 0, uint64_t(p.K), pieces, n0 > 0);
        }
    }
}

}  // namespace vkconv::detail
