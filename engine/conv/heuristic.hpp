// The heuristic behind Algorithm::Auto (the measured choice is select/find's): one input channel per group
// runs the depthwise kernels; otherwise the lowering with the smaller workspace (less memory, and on every
// device measured also the one that moves fewer bytes); direct where no lowering fits; tiles where the
// tensors are too large to bind. The same rule for every pass.
#pragma once

#include "conv/algorithm_plan.hpp"

namespace vkconv::detail {

// The heuristic's plan among algorithms that bind the problem's tensors whole (what a tile runs), or why
// none fits.
Planned<AlgorithmPlan> heuristic_whole_plan(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                            const PassOptions& options);

// The heuristic's algorithm for the pass, tiles included: the algorithm the tiles run where the problem's
// tensors are too large to bind; direct in tiles where nothing else fits.
Planned<Algorithm> heuristic_algorithm(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                       const PassOptions& options);

// Why no algorithm fits the problem under options.workspace_limit (InvalidArgument) or at all
// (Unsupported): the smallest workspace any algorithm needs, and the limit.
Refusal nothing_fits(ContextImpl& context, const ConvProblem& problem, const PassOptions& options);

}  // namespace vkconv::detail
