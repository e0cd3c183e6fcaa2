// im2col as a row of the algorithm table (conv/algorithm_plan.hpp): every pass on the lowered matrix col,
// backward-filter with its split-K.
#pragma once

#include "conv/algorithm_plan.hpp"

namespace vkconv::detail {

Planned<AlgorithmPlan> plan_im2col_pass(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                        const ForwardOptions& options);
void record_im2col_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                        const AlgorithmPlan& plan, const ConvOperands& operands, Workspace workspace);

}  // namespace vkconv::detail
