// The depthwise algorithm: convolutions with one input channel per group (groups == C, K = m·C, m the
// channel multiplier), forward, backward-data and backward-filter, with kernels that keep each
// invocation's input window in registers instead of running a GEMM whose reduction is only R·S long.
//
// A pass runs in chunks of whole images so every binding stays within maxStorageBufferRange (or
// PassOptions::max_binding_bytes) and, read through texel views, maxTexelBufferElements.
// Backward-filter splits its N·P·Q reduction into pieces whose partial sums (the workspace) are added in
// a fixed order: results are bit-identical from run to run.
#pragma once

#include "conv/operands.hpp"
#include "conv/planned.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/conv.hpp"  // Pass

namespace vkconv::detail {

inline bool is_depthwise(const ConvProblem& p) {
    return p.channels_per_group() == 1;
}

struct DepthwisePlan {
    int64_t images = 1;             // images per chunk
    uint32_t chunks = 1;            // number of chunks
    uint32_t splits = 1;            // backward-filter: reduction pieces per filter value
    uint32_t column_parts = 1;      // backward-filter: parts each output row is cut into (units of the pieces)
    uint64_t workspace_floats = 0;  // backward-filter: the pieces' partial sums; 0 otherwise
    uint64_t workspace_bytes = 0;   // workspace_floats as the pool counts them (allocation rounding)
    bool texel = false;             // read-only operands through texel-buffer views (else storage buffers)
    uint32_t data_rows = 0;         // backward-data: dx rows per block where rows are streamed (0: chosen
                                    // from the problem and device; tests set it to reach every block shape)
};

// Refused, naming the problem, when it is not depthwise, or when one image's tensors exceed the binding
// limit.
Planned<DepthwisePlan> plan_depthwise(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                      const PassOptions& options);

void record_depthwise_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                              const ConvOperands& operands, const DepthwisePlan& plan);
void record_depthwise_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                                    const Operand& grad_output, const Operand& filter, const Operand& grad_input,
                                    const DepthwisePlan& plan, bool add_into_dx = false);
// `workspace` holds plan.workspace_floats (empty when 0).
void record_depthwise_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                                      const Operand& input, const Operand& grad_output, const Operand& grad_filter,
                                      const DepthwisePlan& plan, const Operand& workspace);

}  // namespace vkconv::detail
