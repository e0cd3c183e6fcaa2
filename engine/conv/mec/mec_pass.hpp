// MEC as a row of the algorithm table (conv/algorithm_plan.hpp): forward in Solution A or B, the backward
// passes on Solution B's chunks with a reordered filter copy, backward-filter with its split reduction.
#pragma once

#include "conv/algorithm_plan.hpp"

namespace vkconv::detail {

Planned<AlgorithmPlan> plan_mec_pass(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                     const ForwardOptions& options);
void record_mec_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const AlgorithmPlan& plan,
                     const ConvOperands& operands, Workspace workspace);

}  // namespace vkconv::detail
