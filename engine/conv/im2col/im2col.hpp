// im2col: a chunk of the input lowered into col[g][m][k] (m = (n, p, q), k = the filter's taps in its own
// order) and one batched GEMM per group against the filter as the user gave it, in the chunks of
// lowered/lowered.hpp; the backward passes on the same matrix.
#pragma once

#include "conv/gemm_mapping.hpp"
#include "conv/lowered/lowered.hpp"
#include "gemm/splitk_reduce.hpp"

namespace vkconv::detail {

// Records the whole pass (every chunk) into `stream`, using `scratch` (plan.scratch_floats). `wide`: a 16-bit
// forward whose reduction runs in pieces sums each chunk's images (a band's whole image) into this fp32 copy
// (Slot::WideOutput; y's layout, from the chunk's first image), the epilogue applied there, its residual
// widened into it first; the copy is rounded into y once, after the image's last band. None: the GEMM writes y.
void record_im2col_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const ConvOperands& operands, const LoweredPlan& plan, const Operand& scratch,
                           const Operand& wide = {});
// The im2col lowering of one chunk (images [n0, n0 + images) bound through `x`, output rows
// [p0, p0 + rows)) into `col` ([g][m][k], or [g][k][m] when `transposed`), in elements of `col_type`.
void record_im2col_lowering(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, bool transposed,
                            const Window& x, const BufferRange& col, DataType col_type, int64_t p0, int64_t rows,
                            int64_t images);

// im2col backward passes, in the forward's chunks. Backward-data: dcol = dy * w per group through the
// GEMM, then col2im gathers dx (bands of rows add into it in order). Backward-filter: dw = dy^T * col(x)
// per group, accumulated over chunks in order (beta = 1 after the first): deterministic. A 16-bit dw
// accumulates in `wide_filter` (fp32, conv/shared/wide_output.hpp), rounded into dw at the end.
void record_im2col_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                                 const Operand& grad_output, const Operand& filter, const Operand& grad_input,
                                 const LoweredPlan& plan, const Operand& scratch, bool add_into_dx = false,
                                 const Operand& wide_image = {});
void record_im2col_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                                   const Operand& input, const Operand& grad_output, const Operand& grad_filter,
                                   const LoweredPlan& plan, const Operand& scratch, uint32_t splits,
                                   const Operand& partials, const Operand& wide_filter);

// Deterministic split-K for im2col backward-filter: the product dw = dy^T * col(x) is only (K/G) x
// (R*S*C/G) but reduces over a chunk's N*P*Q positions, so one GEMM fills few workgroups. The reduction is
// cut into `splits` pieces whose partial products (splits * K/G * R*S*C/G floats of workspace) are added
// in a fixed order by splitk_reduce. 1 = no split.
uint32_t backward_filter_splits(ContextImpl& context, const ConvProblem& problem, const LoweredPlan& plan,
                                uint64_t binding_limit);
inline uint64_t backward_filter_partial_floats(const ConvProblem& p, uint32_t splits) {
    return splits > 1 ? uint64_t(splits) * uint64_t(group_filter_floats(p)) : 0;
}

}  // namespace vkconv::detail
