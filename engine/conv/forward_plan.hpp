// The plan of a forward pass for one algorithm, and its recording: what forward() runs, and what the
// tiled path (tiled/tiled.hpp) runs on each tile.
#pragma once

#include <array>
#include <span>

#include "conv/depthwise/depthwise.hpp"
#include "conv/lowered/lowered.hpp"

namespace vkconv::detail {

struct ForwardPlan {
    Algorithm algorithm = Algorithm::Direct;  // never Auto
    LoweredPlan lowered;                      // im2col, mec
    DepthwisePlan depthwise;                  // depthwise
    std::array<uint64_t, 2> slots{};          // workspace in floats: lowered scratch (or depthwise's), filter copy
    uint64_t workspace_bytes = 0;
    uint32_t chunks = 1;
};

// Plans `algorithm` (not Auto). Unsupported where it cannot run the problem (direct: a tensor beyond the
// binding range; a lowering whose smallest chunk does not fit).
ForwardPlan plan_forward(ContextImpl& context, const ConvProblem& problem, Algorithm algorithm,
                         const ForwardOptions& options);

void record_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const ForwardPlan& plan,
                    const ForwardOperands& operands, std::span<const Operand> workspace);

// The heuristic behind Auto (README): depthwise for one channel per group, else the lowering with the
// smaller workspace, direct where neither fits.
Algorithm heuristic_forward_algorithm(ContextImpl& context, const ConvProblem& problem, const ForwardOptions& options);

}  // namespace vkconv::detail
