// The plan of one backward pass: which algorithm runs, in what chunks, with which workspace, and its
// recording. The public calls (conv_backward.cpp) run one plan, or both of a layer's in one submission
// sharing their workspace.
#pragma once

#include <array>

#include "conv_depthwise.hpp"
#include "conv_lowered.hpp"
#include "vkconv/backward.hpp"

namespace vkconv::detail {

enum class BackwardPass { Data, Filter };

struct BackwardPlan {
    BackwardPass pass = BackwardPass::Data;
    Algorithm algorithm = Algorithm::Direct;  // never Auto
    LoweredPlan lowered;                      // im2col, mec
    DepthwisePlan depthwise;                  // depthwise
    uint32_t im2col_splits = 1;               // im2col backward-filter's split-K
    MecFilterSplit mec_split;                 // mec backward-filter's split
    // Workspace slots in floats: the lowered matrix (or depthwise partials), the OHWI filter copy, split
    // partials. A layer's two passes run one after the other and share each slot.
    std::array<uint64_t, 3> slots{};
    uint64_t workspace_bytes = 0;  // the slots as the pool counts them
    uint32_t chunks = 1;
};

// Resolves Auto (README: depthwise for one channel per group, else the lowering with the smaller
// workspace) and plans. Throws Unsupported where `algorithm` cannot run this problem.
BackwardPlan plan_backward(ContextImpl& context, const ConvProblem& problem, BackwardPass pass, Algorithm algorithm,
                           const ForwardOptions& options);

uint64_t workspace_bytes_of(const ContextImpl& context, const std::array<uint64_t, 3>& slots);

// Checks that operands bound whole (direct) fit a binding.
void check_plan_bindings(const ContextImpl& context, const BackwardPlan& plan,
                         std::initializer_list<const Operand*> operands);

void record_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                          const BackwardPlan& plan, const Operand& grad_output, const Operand& filter,
                          const Operand& grad_input, std::span<const Operand> workspace);
void record_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                            const BackwardPlan& plan, const Operand& input, const Operand& grad_output,
                            const Operand& grad_filter, std::span<const Operand> workspace);
// db in chunks of whole images whose dy fits one binding, added up in order.
void record_bias_grad(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                      const Operand& grad_output, const Operand& grad_bias, uint64_t max_binding_bytes);

}  // namespace vkconv::detail
