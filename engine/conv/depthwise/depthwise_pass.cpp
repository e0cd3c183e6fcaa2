#include "conv/depthwise/depthwise_pass.hpp"

namespace vkconv::detail {
namespace {

Planned<AlgorithmPlan> plan_depthwise_pass(ContextImpl& context, const ConvProblem& p, Pass pass,
                                           const PassOptions& options) {
    auto depthwise = plan_depthwise(context, p, pass, options);
    if (!depthwise) return depthwise.refusal();
    AlgorithmPlan plan;
    plan.pass = pass;
    plan.algorithm = Algorithm::Depthwise;
    plan.depthwise = *depthwise;
    plan.slot(Slot::Lowered) = plan.depthwise.workspace_floats;
    plan.chunks = plan.depthwise.chunks;
    return plan;
}

void record_depthwise_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                           const ConvOperands& ops, Workspace workspace) {
    switch (plan.pass) {
        case Pass::Forward:
            record_depthwise_forward(context, stream, p, ops, plan.depthwise);
            break;
        case Pass::BackwardData:
            record_depthwise_backward_data(context, stream, p, ops.output, ops.filter, ops.input, plan.depthwise);
            break;
        case Pass::BackwardFilter:
            record_depthwise_backward_filter(context, stream, p, ops.input, ops.output, ops.filter, plan.depthwise,
                                             workspace[Slot::Lowered]);
            break;
        case Pass::BackwardBias:
            break;
    }
}

}  // namespace

const AlgorithmEntry depthwise_algorithm{Algorithm::Depthwise, plan_depthwise_pass, record_depthwise_pass};

}  // namespace vkconv::detail
