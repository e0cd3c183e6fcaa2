// The plan of one backward pass: which algorithm runs, in what chunks, with which workspace, and its
// recording. The public calls (conv/backward.cpp) run one plan, or both of a layer's in one submission
// sharing their workspace.
#pragma once

#include <array>

#include "conv/depthwise/depthwise.hpp"
#include "conv/lowered/lowered.hpp"
#include "conv/mec/mec.hpp"
#include "conv/shared/bias_grad.hpp"
#include "vkconv/backward.hpp"
#include "vkconv/find.hpp"

namespace vkconv::detail {

using WorkspaceSlots = std::array<uint64_t, 4>;

struct BackwardPlan {
    Pass pass = Pass::BackwardData;
    Algorithm algorithm = Algorithm::Direct;  // never Auto
    LoweredPlan lowered;                      // im2col, mec
    DepthwisePlan depthwise;                  // depthwise
    uint32_t im2col_splits = 1;               // im2col backward-filter's split-K
    MecFilterSplit mec_split;                 // mec backward-filter's split
    BiasPlan bias;                            // backward-filter with a bias: the bias gradient
    // Workspace slots in floats: the lowered matrix (or depthwise partials), the filter copy, split
    // partials, the bias gradient's partial sums (backward-filter of a problem with a bias). A layer's two
    // passes run one after the other and share each slot.
    WorkspaceSlots slots{};
    uint64_t workspace_bytes = 0;  // the slots as the pool counts them
    uint32_t chunks = 1;
};

// Resolves Auto (README: depthwise for one channel per group, else the lowering with the smaller
// workspace) and plans. Throws Unsupported where `algorithm` cannot run this problem (direct: where a
// tensor exceeds maxStorageBufferRange).
BackwardPlan plan_backward(ContextImpl& context, const ConvProblem& problem, Pass pass, Algorithm algorithm,
                           const ForwardOptions& options);

uint64_t workspace_bytes_of(const ContextImpl& context, const WorkspaceSlots& slots);

// What RunStats reports of a plan's split reductions (RunStats::partial_products and bias_pieces).
inline uint32_t partial_products_of(const BackwardPlan& plan) {
    if (plan.pass != Pass::BackwardFilter) return 0;
    switch (plan.algorithm) {
        case Algorithm::Im2col:
            return plan.im2col_splits > 1 ? plan.im2col_splits : 0;
        case Algorithm::Mec:
            return static_cast<uint32_t>(plan.mec_split.slots);
        case Algorithm::Depthwise:
            return plan.depthwise.splits;
        default:
            return 0;
    }
}
inline uint32_t bias_pieces_of(const ConvProblem& problem, const BackwardPlan& plan) {
    if (plan.pass != Pass::BackwardFilter || !problem.has_bias) return 0;
    return plan.bias.in_place ? 1u : static_cast<uint32_t>(plan.bias.pieces);  // in place: no partial sums
}

// The error when no algorithm fits a problem under options.workspace_limit (and direct cannot bind it):
// InvalidArgument stating the smallest workspace any algorithm needs and the limit.
[[noreturn]] void throw_nothing_fits(ContextImpl& context, const ConvProblem& problem, const ForwardOptions& options);

void record_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                          const BackwardPlan& plan, const Operand& grad_output, const Operand& filter,
                          const Operand& grad_input, std::span<const Operand> workspace);
void record_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                            const BackwardPlan& plan, const Operand& input, const Operand& grad_output,
                            const Operand& grad_filter, std::span<const Operand> workspace);

}  // namespace vkconv::detail
