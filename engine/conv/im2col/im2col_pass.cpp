#include "conv/im2col/im2col_pass.hpp"

#include "conv/im2col/im2col.hpp"

namespace vkconv::detail {
namespace {

Planned<AlgorithmPlan> plan_im2col_pass(ContextImpl& context, const ConvProblem& p, Pass pass,
                                        const PassOptions& options) {
    auto lowered = plan_lowered(context, p, Algorithm::Im2col, options);
    if (!lowered) return lowered.refusal();
    AlgorithmPlan plan = lowered_pass_plan(pass, *lowered);
    if (pass == Pass::BackwardFilter) {
        plan.im2col_splits = backward_filter_splits(context, p, plan.lowered, storage_binding_limit(context, options));
        plan.slot(Slot::Partials) = backward_filter_partial_floats(p, plan.im2col_splits);
        // Under a workspace limit, fewer split pieces (down to none).
        while (options.workspace_limit && plan.im2col_splits > 1 &&
               workspace_bytes_of(context, plan.slots) > options.workspace_limit) {
            --plan.im2col_splits;
            plan.slot(Slot::Partials) = backward_filter_partial_floats(p, plan.im2col_splits);
        }
    }
    return plan;
}

void record_im2col_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                        const ConvOperands& ops, Workspace workspace) {
    switch (plan.pass) {
        case Pass::Forward:
            record_im2col_forward(context, stream, p, ops, plan.lowered, workspace[Slot::Lowered]);
            break;
        case Pass::BackwardData:
            record_im2col_backward_data(context, stream, p, ops.output, ops.filter, ops.input, plan.lowered,
                                        workspace[Slot::Lowered]);
            break;
        case Pass::BackwardFilter:
            record_im2col_backward_filter(context, stream, p, ops.input, ops.output, ops.filter, plan.lowered,
                                          workspace[Slot::Lowered], plan.im2col_splits, workspace[Slot::Partials]);
            break;
        case Pass::BackwardBias:
            break;
    }
}

}  // namespace

const AlgorithmEntry im2col_algorithm{Algorithm::Im2col, plan_im2col_pass, record_im2col_pass};

}  // namespace vkconv::detail
