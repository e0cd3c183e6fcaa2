// The depthwise kernels: every pass of a problem with one input channel per group, backward-filter's
// partial sums in the Lowered slot.
// Its entry in the algorithm table (conv/algorithm_plan.hpp).
#include "conv/algorithm_plan.hpp"
#include "conv/depthwise/depthwise.hpp"

namespace vkconv::detail {
namespace {

Planned<AlgorithmPlan> plan_depthwise_pass(ContextImpl& context, const ConvProblem& p, Pass pass,
                                           const PassOptions& options) {
    auto depthwise = plan_depthwise(context, p, pass, options);
    if (!depthwise) return depthwise.refusal();
    AlgorithmPlan plan;
    plan.pass = pass;
    plan.algorithm = Algorithm::Depthwise;
    plan.own = *depthwise;
    plan.slot(Slot::Lowered) = depthwise->workspace_floats;
    plan.chunks = depthwise->chunks;
    // Its sums are workspace even as one piece (RunStats::partial_products).
    if (pass == Pass::BackwardFilter) plan.partial_products = depthwise->splits;
    return plan;
}

void record_depthwise_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                           const ConvOperands& ops, Workspace workspace) {
    // An application's buffer is never read through texel views (its usage may not allow them).
    DepthwisePlan depthwise = plan.own_as<DepthwisePlan>();
    const Device& device = *context.device;
    for (const Operand* op : {&ops.input, &ops.filter, &ops.bias, &ops.output})
        if (*op && device.foreign_buffer(op->allocation.buffer)) depthwise.texel = false;
    switch (plan.pass) {
        case Pass::Forward:
            record_depthwise_forward(context, stream, p, ops, depthwise);
            break;
        case Pass::BackwardData:
            record_depthwise_backward_data(context, stream, p, ops.output, ops.filter, ops.input, depthwise,
                                           ops.add_into_dx);
            break;
        case Pass::BackwardFilter:
            record_depthwise_backward_filter(context, stream, p, ops.input, ops.output, ops.filter, depthwise,
                                             workspace[Slot::Lowered]);
            break;
        case Pass::BackwardBias:
            break;
    }
}

bool one_channel_per_group(const ConvProblem& p) { return is_depthwise(p); }

// The heuristic's first pick wherever it applies: a GEMM with a reduction of R·S per group is all overhead.
bool always(const ContextImpl&, const ConvProblem&, Pass) { return true; }

}  // namespace

extern const AlgorithmEntry depthwise_algorithm{.applies = one_channel_per_group,
                                         .requirement = "one input channel per group, groups == C",
                                         .plan = plan_depthwise_pass,
                                         .record = record_depthwise_pass,
                                         .preferred = always,
                                         .passes_16bit = kConvPasses};

}  // namespace vkconv::detail
