// The depthwise kernels as a row of the algorithm table (conv/algorithm_plan.hpp): every pass of a problem
// with one input channel per group, backward-filter's partial sums in the Lowered slot.
#pragma once

#include "conv/algorithm_plan.hpp"

namespace vkconv::detail {

Planned<AlgorithmPlan> plan_depthwise_pass(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                           const ForwardOptions& options);
void record_depthwise_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const AlgorithmPlan& plan, const ConvOperands& operands, Workspace workspace);

}  // namespace vkconv::detail
