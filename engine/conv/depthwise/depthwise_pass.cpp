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
    // An application's buffer is never read through texel views (its usage may not allow them).
    DepthwisePlan depthwise = plan.depthwise;
    const Device& device = *context.device;
    for (const Operand* op : {&ops.input, &ops.filter, &ops.bias, &ops.output})
        if (*op && device.foreign_buffer(op->allocation.buffer)) depthwise.texel = false;
    switch (plan.pass) {
        case Pass::Forward:
            record_depthwise_forward(context, stream, p, ops, depthwise);
            break;
        case Pass::BackwardData:
            record_depthwise_backward_data(context, stream, p, ops.output, ops.filter, ops.input, depthwise);
            break;
        case Pass::BackwardFilter:
            record_depthwise_backward_filter(context, stream, p, ops.input, ops.output, ops.filter, depthwise,
                                             workspace[Slot::Lowered]);
            break;
        case Pass::BackwardBias:
            break;
    }
}

}  // namespace

const AlgorithmEntry depthwise_algorithm{Algorithm::Depthwise, plan_depthwise_pass, record_depthwise_pass};

}  // namespace vkconv::detail
