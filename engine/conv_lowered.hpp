// The lowered forward algorithms, im2col and MEC: their chunk plan, exact workspace, and recording.
//
// Both lower a chunk of the input into a workspace matrix and run the tiled GEMM against the filter as
// the user gave it (im2col lowers in the filter's own tap order; MEC needs (r, s, c) order and so copies
// OIHW filters into OHWI, a copy counted in the workspace). A chunk is a run of whole images, or, when one
// image's lowered matrix is too large to bind, a band of output rows of one image: every binding stays
// within maxStorageBufferRange (or ForwardOptions::max_binding_bytes) and maxTexelBufferElements.
#pragma once

#include <array>
#include <vector>

#include "conv_operands.hpp"
#include "vkconv/conv.hpp"

namespace vkconv::detail {

struct LoweredPlan {
    Algorithm algorithm = Algorithm::Im2col;
    MecSchedule schedule = MecSchedule::B;  // MEC only: A or B
    bool transposed = false;                // im2col only: col stored [g][k][m] (when K % 4 != 0 but M % 4 == 0)
    int64_t images = 1;                     // images per chunk
    int64_t rows = 1;                       // output rows per chunk (< P only when images == 1)
    uint64_t lowered_floats = 0;            // the lowered matrix of a full chunk
    uint64_t scratch_floats = 0;            // its allocation (Solution A also parks the chunk's output there)
    uint64_t filter_floats = 0;             // MEC with OIHW filters: the OHWI copy
    uint64_t workspace_bytes = 0;           // both allocations as the pool counts them
    uint32_t chunks = 1;
};

// One chunk of a plan: images [n0, n0 + images), output rows [p0, p0 + rows), and windows over the
// chunk's images of an input-shaped and an output-shaped operand.
struct Chunk {
    int64_t n0, images, p0, rows;
    Window input, output;
    bool first;  // the plan's first chunk (passes that add up over chunks start from it)
};

// Calls visit(chunk) for every chunk of `plan`, in order.
template <typename Visit>
void for_each_chunk(const ConvProblem& p, const LoweredPlan& plan, uint64_t alignment, const Operand& input_like,
                    const Operand& output_like, Visit&& visit) {
    const int64_t P = p.P();
    const uint64_t x_image = uint64_t(p.C * p.H * p.W), y_image = uint64_t(p.K * P * p.Q());
    bool first = true;
    for (int64_t n0 = 0; n0 < p.N; n0 += plan.images) {
        const int64_t images = std::min(plan.images, p.N - n0);
        for (int64_t p0 = 0; p0 < P; p0 += plan.rows) {
            visit(Chunk{n0, images, p0, std::min(plan.rows, P - p0),
                        window(input_like, n0 * x_image, images * x_image, alignment),
                        window(output_like, n0 * y_image, images * y_image, alignment), first});
            first = false;
        }
    }
}

// Bytes one storage-buffer binding may span: maxStorageBufferRange, or options.max_binding_bytes if lower.
uint64_t storage_binding_limit(const ContextImpl& context, const ForwardOptions& options);
// The same, also readable through an r32f texel view (4 * maxTexelBufferElements): the limit of what the
// lowered algorithms and the tiles bind.
uint64_t texel_binding_limit(const ContextImpl& context, const ForwardOptions& options);

// Throws Unsupported when not even one output row of one image fits the binding limit.
// Under options.workspace_limit the chunks shrink until the plan's workspace plus `fixed_workspace_bytes`
// (what the pass needs besides the lowered matrix and MEC's OIHW filter copy) fits; Unsupported when even
// one output row of one image does not.
LoweredPlan plan_lowered(ContextImpl& context, const ConvProblem& problem, Algorithm algorithm,
                         const ForwardOptions& options, uint64_t fixed_workspace_bytes = 0);
// The workspace of the smallest chunk (one output row of one image) of an im2col or MEC pass.
uint64_t smallest_lowered_workspace(ContextImpl& context, const ConvProblem& problem, Algorithm algorithm);

// Records the whole pass (every chunk) into `stream`, using `scratch` (plan.scratch_floats) and, for MEC
// with OIHW filters, `filter_copy` (plan.filter_floats).
void record_im2col_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const ForwardOperands& operands, const LoweredPlan& plan, const Operand& scratch);
// The im2col lowering of one chunk (images [n0, n0 + images) bound through `x`, output rows
// [p0, p0 + rows)) into `col` ([g][m][k], or [g][k][m] when `transposed`).
void record_im2col_lowering(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, bool transposed,
                            const Window& x, const BufferRange& col, int64_t p0, int64_t rows, int64_t images);

// im2col backward passes, in the forward's chunks. Backward-data: dcol = dy * w per group through the
// GEMM, then col2im gathers dx (bands of rows add into it in order). Backward-filter: dw = dy^T * col(x)
// per group, accumulated over chunks in order (beta = 1 after the first): deterministic.
void record_im2col_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                                 const Operand& grad_output, const Operand& filter, const Operand& grad_input,
                                 const LoweredPlan& plan, const Operand& scratch);
void record_im2col_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                                   const Operand& input, const Operand& grad_output, const Operand& grad_filter,
                                   const LoweredPlan& plan, const Operand& scratch, uint32_t splits,
                                   const Operand& partials);

// Deterministic split-K for im2col backward-filter: the product dw = dy^T * col(x) is only (K/G) x
// (R*S*C/G) but reduces over a chunk's N*P*Q positions, so one GEMM fills few workgroups. The reduction is
// cut into `splits` pieces whose partial products (splits * K/G * R*S*C/G floats of workspace) are added
// in a fixed order by splitk_reduce. 1 = no split.
uint32_t backward_filter_splits(ContextImpl& context, const ConvProblem& problem, const LoweredPlan& plan,
                                uint64_t binding_limit);
inline uint64_t backward_filter_partial_floats(const ConvProblem& p, uint32_t splits) {
    return splits > 1 ? uint64_t(splits) * uint64_t(p.filters_per_group() * p.R * p.S * p.channels_per_group()) : 0;
}

// out[i0][i1][i2][i3] (contiguous from out_offset, extents d) = in[in_offset + sum(i * s)]: the filter
// copies between OIHW and OHWI.
void record_permute(ContextImpl& context, CommandStream& stream, const BufferRange& in, uint64_t in_offset,
                    const BufferRange& out, uint64_t out_offset, std::array<int64_t, 4> d, std::array<int64_t, 4> s);

// MEC's lowered matrix of one chunk within the scratch: L[g][n][q][h][s][c] over `rows` lowered rows
// (the padded input rows the chunk's output rows read).
struct MecLowered {
    int64_t rows = 0;
    uint64_t image_floats = 0;  // L[g][n] of one image
    uint64_t group_floats = 0;  // L[g] of the chunk's images
    BufferRange range;          // all groups
};
MecLowered mec_lowered(const ConvProblem& problem, const Chunk& chunk, const Operand& scratch);
// Specialization constants 0-13 of mec_lower and mec_gather for a chunk of `images` images whose
// lowered matrix has `lowered_rows` rows.
std::vector<uint32_t> mec_constants(const ConvProblem& problem, int64_t lowered_rows, int64_t images);

// out[out_offset + i] (+)= sum over s < splits of partials[s * count + i] for i < count, in order of s:
// the fixed-order half of a deterministic split-K.
void record_splitk_reduce(ContextImpl& context, CommandStream& stream, const BufferRange& partials,
                          const BufferRange& out, uint64_t out_offset, uint64_t count, int64_t splits, bool accumulate);

// MEC's lowering of one chunk (images [n0, n0 + images) bound through `x`, output rows [p0, p0 + rows))
// into L[g][n][q][h][s][c] at `lowered`.
void record_mec_lowering(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const Window& x,
                         const BufferRange& lowered, int64_t p0, int64_t rows, int64_t images);

void record_mec_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                        const ForwardOperands& operands, const LoweredPlan& plan, const Operand& scratch,
                        const Operand& filter_copy);

// MEC backward passes, in the forward's chunks (plan_lowered with Solution B: the lowered buffer holds L or
// dL, `filter_copy` a copy of the filter or gradient in the order the GEMM needs). Backward-data: dL = dy * w
// into L-shaped scratch, without two invocations ever adding into one value (conv_mec_backward.cpp), then
// mec_gather sums dL into dx.
// Backward-filter: dw = sum over (p, q) of window(p)^T * dy(p, q), reduced over a chunk's images and row
// pieces through `partials` (split.slots products) in a fixed order.
struct MecFilterSplit {
    int64_t piece_rows = 1;      // output rows per reduction piece
    int64_t images_at_once = 1;  // images whose pieces one GEMM computes
    uint64_t slots = 0;          // partial products (0: no split, the GEMMs add into dw in order)
};
MecFilterSplit mec_backward_filter_split(ContextImpl& context, const ConvProblem& problem, const LoweredPlan& plan,
                                         uint64_t binding_limit);
void record_mec_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                              const Operand& grad_output, const Operand& filter, const Operand& grad_input,
                              const LoweredPlan& plan, const Operand& scratch, const Operand& filter_copy);
void record_mec_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                                const Operand& input, const Operand& grad_output, const Operand& grad_filter,
                                const LoweredPlan& plan, const Operand& scratch, const Operand& filter_copy,
                                const MecFilterSplit& split, const Operand& partials);

}  // namespace vkconv::detail
