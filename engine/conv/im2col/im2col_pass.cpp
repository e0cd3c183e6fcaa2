// im2col: every pass on the lowered matrix col, backward-filter with its split-K.
// Its entry in the algorithm table (conv/algorithm_plan.hpp).
#include "conv/algorithm_plan.hpp"
#include "conv/im2col/im2col.hpp"
#include "conv/lowered/lowered.hpp"
#include "vulkan/shader_limits.hpp"

#include <optional>
#include <string>

namespace vkconv::detail {
namespace {

// im2col's own plan: its chunks and backward-filter's split-K pieces.
struct Im2colPlan {
    LoweredPlan lowered;
    uint32_t splits = 1;
};

// A 16-bit forward whose GEMM's reduction runs in pieces (each adding into its C) sums into an fp32 copy of the
// chunk's images instead (Slot::WideOutput), rounded into y once. (Backward-filter sums into an fp32 dw,
// backward-data's bands into an fp32 dx image, each rounded once, likewise.)
bool needs_wide_output(const ConvProblem& p, Pass pass) {
    return pass == Pass::Forward && p.data_type != DataType::F32 && filter_taps(p) > kMaxLoopIterations;
}

// A 16-bit dw sums into an fp32 copy (Slot::WideOutput) where it would otherwise be rounded more than once:
// added up over several chunks, or written by a GEMM whose reduction runs in pieces (one chunk, no split).
bool needs_wide_filter(const ConvProblem& p, const LoweredPlan& lowered, uint32_t splits) {
    if (p.weight_gradient_type() == DataType::F32) return false;
    const int64_t positions = lowered.images * lowered.rows * p.Q();
    return lowered.chunks > 1 || (splits <= 1 && positions > int64_t(kMaxLoopIterations));
}

Planned<AlgorithmPlan> plan_im2col_pass(ContextImpl& context, const ConvProblem& p, Pass pass,
                                        const PassOptions& options) {
    // A 16-bit x lowers into a 16-bit col; backward-data's dcol is a GEMM's output summed again: fp32.
    const bool sixteen = p.data_type != DataType::F32, filter = pass == Pass::BackwardFilter;
    const uint32_t lowered_bytes = sixteen && pass != Pass::BackwardData ? element_bytes(p.data_type) : 4;
    const uint64_t wide_floats = uint64_t(p.filter_elements());
    uint64_t wide_output_floats = 0;
    auto lowered = needs_wide_output(p, pass)
                       ? plan_wide_forward(context, p, Algorithm::Im2col, options, wide_output_floats)
                       : plan_lowered(context, p, Algorithm::Im2col, options, 0, lowered_bytes);
    // In several chunks a 16-bit dw needs its fp32 copy: chunks that leave room for it.
    if (lowered && filter && p.weight_gradient_type() != DataType::F32 && lowered->chunks > 1)
        lowered = plan_lowered(context, p, Algorithm::Im2col, options, context.pool->round(wide_floats * 4),
                               lowered_bytes);
    // In bands of rows a 16-bit dx needs its image's fp32 copy: bands that leave room for it.
    const uint64_t image_floats = uint64_t(p.C * p.H * p.W);
    if (lowered && pass == Pass::BackwardData && sixteen && lowered->rows < p.P())
        lowered = plan_lowered(context, p, Algorithm::Im2col, options, context.pool->round(image_floats * 4),
                               lowered_bytes);
    if (!lowered) return lowered.refusal();
    AlgorithmPlan plan = lowered_pass_plan(pass, *lowered);
    Im2colPlan& own = plan.own.emplace<Im2colPlan>(Im2colPlan{*lowered});
    if (wide_output_floats) plan.slot(Slot::WideOutput) = wide_output_floats;
    if (pass == Pass::BackwardData && sixteen && own.lowered.rows < p.P()) {
        if (auto refusal = wide_image_refusal(context, p, options, "im2col")) return *refusal;
        plan.slot(Slot::WideOutput) = image_floats;
    }
    if (!filter) return plan;
    own.splits = backward_filter_splits(context, p, own.lowered, storage_binding_limit(context, options));
    if (needs_wide_filter(p, own.lowered, own.splits)) plan.slot(Slot::WideOutput) = wide_floats;
    plan.slot(Slot::Partials) = backward_filter_partial_floats(p, own.splits);
    // Under a workspace limit, fewer split pieces (down to none).
    while (options.workspace_limit && own.splits > 1 && workspace_bytes_of(context, plan.slots) > options.workspace_limit) {
        --own.splits;
        plan.slot(Slot::Partials) = backward_filter_partial_floats(p, own.splits);
        if (needs_wide_filter(p, own.lowered, own.splits)) plan.slot(Slot::WideOutput) = wide_floats;
    }
    plan.partial_products = own.splits > 1 ? own.splits : 0;
    return plan;
}

void record_im2col_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                        const ConvOperands& ops, Workspace workspace) {
    const auto& [lowered, splits] = plan.own_as<Im2colPlan>();
    switch (plan.pass) {
        case Pass::Forward:
            record_im2col_forward(context, stream, p, ops, lowered, workspace[Slot::Lowered],
                                  plan.own_slot(workspace, Slot::WideOutput));
            break;
        case Pass::BackwardData:
            record_im2col_backward_data(context, stream, p, ops.output, ops.filter, ops.input, lowered,
                                        workspace[Slot::Lowered], ops.add_into_dx,
                                        plan.own_slot(workspace, Slot::WideOutput));
            break;
        case Pass::BackwardFilter:
            record_im2col_backward_filter(context, stream, p, ops.input, ops.output, ops.filter, lowered,
                                          workspace[Slot::Lowered], splits, workspace[Slot::Partials],
                                          plan.own_slot(workspace, Slot::WideOutput));
            break;
        case Pass::BackwardBias:
            break;
    }
}

}  // namespace

extern const AlgorithmEntry im2col_algorithm{
    .plan = plan_im2col_pass, .record = record_im2col_pass, .passes_16bit = kConvPasses};

}  // namespace vkconv::detail
