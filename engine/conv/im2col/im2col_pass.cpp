// im2col: every pass on the lowered matrix col, backward-filter with its split-K.
// Its entry in the algorithm table (conv/algorithm_plan.hpp).
#include "conv/algorithm_plan.hpp"
#include "conv/im2col/im2col.hpp"
#include "conv/lowered/lowered.hpp"

namespace vkconv::detail {
namespace {

// im2col's own plan: its chunks and backward-filter's split-K pieces.
struct Im2colPlan {
    LoweredPlan lowered;
    uint32_t splits = 1;
};

Planned<AlgorithmPlan> plan_im2col_pass(ContextImpl& context, const ConvProblem& p, Pass pass,
                                        const PassOptions& options) {
    auto lowered = plan_lowered(context, p, Algorithm::Im2col, options);
    if (!lowered) return lowered.refusal();
    AlgorithmPlan plan = lowered_pass_plan(pass, *lowered);
    Im2colPlan& own = plan.own.emplace<Im2colPlan>(Im2colPlan{*lowered});
    if (pass == Pass::BackwardFilter) {
        own.splits = backward_filter_splits(context, p, own.lowered, storage_binding_limit(context, options));
        plan.slot(Slot::Partials) = backward_filter_partial_floats(p, own.splits);
        // Under a workspace limit, fewer split pieces (down to none).
        while (options.workspace_limit && own.splits > 1 &&
               workspace_bytes_of(context, plan.slots) > options.workspace_limit) {
            --own.splits;
            plan.slot(Slot::Partials) = backward_filter_partial_floats(p, own.splits);
        }
        plan.partial_products = own.splits > 1 ? own.splits : 0;
    }
    return plan;
}

void record_im2col_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                        const ConvOperands& ops, Workspace workspace) {
    const auto& [lowered, splits] = plan.own_as<Im2colPlan>();
    switch (plan.pass) {
        case Pass::Forward:
            record_im2col_forward(context, stream, p, ops, lowered, workspace[Slot::Lowered]);
            break;
        case Pass::BackwardData:
            record_im2col_backward_data(context, stream, p, ops.output, ops.filter, ops.input, lowered,
                                        workspace[Slot::Lowered]);
            break;
        case Pass::BackwardFilter:
            record_im2col_backward_filter(context, stream, p, ops.input, ops.output, ops.filter, lowered,
                                          workspace[Slot::Lowered], splits, workspace[Slot::Partials]);
            break;
        case Pass::BackwardBias:
            break;
    }
}

}  // namespace

extern const AlgorithmEntry im2col_algorithm{.plan = plan_im2col_pass, .record = record_im2col_pass};

}  // namespace vkconv::detail
