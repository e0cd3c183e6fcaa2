// The direct algorithm as a row of the algorithm table (conv/algorithm_plan.hpp): every pass, no workspace.
#pragma once

#include "conv/algorithm_plan.hpp"

namespace vkconv::detail {

// Refused where one of the problem's tensors exceeds maxStorageBufferRange (the passes then run direct in
// tiles, tiled/tiled.hpp).
Planned<AlgorithmPlan> plan_direct_pass(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                        const ForwardOptions& options);
void record_direct_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                        const AlgorithmPlan& plan, const ConvOperands& operands, Workspace workspace);

}  // namespace vkconv::detail
