// MEC (Cho & Brand 2017): a chunk of the input lowered into L[g][n][q][h][s][c], and every output row a GEMM
// over an overlapping window of L, in the chunks of lowered/lowered.hpp; the backward passes on L.
#pragma once

#include "conv/gemm_mapping.hpp"
#include "conv/lowered/lowered.hpp"
#include "conv/shared/permute.hpp"
#include "gemm/splitk_reduce.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {

// Records the whole pass (every chunk) into `stream`, using `scratch` (plan.scratch_floats) and, for OIHW
// filters, `filter_copy` (plan.filter_floats).
// MEC's lowered matrix of one chunk within the scratch: L[g][n][q][h][s][c] over `rows` lowered rows
// (the padded input rows the chunk's output rows read).
struct MecLowered {
    int64_t rows = 0;
    MecWindows windows;         // its strides, and the windows output rows read (conv/gemm_mapping.hpp)
    uint64_t image_floats = 0;  // L[g][n] of one image
    uint64_t group_floats = 0;  // L[g] of the chunk's images
    BufferRange range;          // all groups
};
// `l_type`: its elements' (x's type where it holds a lowered x, fp32 for backward-data's dL).
MecLowered mec_lowered(const ConvProblem& problem, const Chunk& chunk, const Operand& scratch, DataType l_type);
// The constants mec_lower and mec_gather share, by name, for a chunk of `images` images whose lowered matrix
// has `lowered_rows` rows.
template <typename Shader>
Specialization<Shader> mec_specialization(const ConvProblem& p, int64_t lowered_rows, int64_t images) {
    using Id = typename Shader::spec;
    Specialization<Shader> spec;
    spec.set(Id::LOCAL_SIZE_X, kElementwiseWorkgroup).set(Id::S, p.S).set(Id::STRIDE_W, p.stride_w);
    spec.set(Id::PAD_H, p.pad_h).set(Id::PAD_W, p.pad_w).set(Id::DIL_W, p.dilation_w);
    spec.set(Id::NHWC, p.layout == Layout::NHWC).set(Id::C, p.C).set(Id::H, p.H).set(Id::W, p.W);
    spec.set(Id::CG, p.channels_per_group()).set(Id::Q, p.Q()).set(Id::HL, lowered_rows).set(Id::IMAGES, images);
    return spec;
}

// MEC's lowering of one chunk (images [n0, n0 + images) bound through `x`, output rows [p0, p0 + rows))
// into L[g][n][q][h][s][c] at `lowered`.
void record_mec_lowering(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const Window& x,
                         const BufferRange& lowered, int64_t p0, int64_t rows, int64_t images);

// `wide`: a 16-bit forward whose reduction runs in pieces (Solution B) sums into this fp32 copy of each chunk's
// images (a band's whole image), as im2col does (im2col.hpp), rounded into y once after the image's last band.
void record_mec_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                        const ConvOperands& operands, const LoweredPlan& plan, const Operand& scratch,
                        const Operand& filter_copy, const Operand& wide = {});

// MEC backward passes, in the forward's chunks (plan_lowered with Solution B: the lowered buffer holds L or
// dL, `filter_copy` a copy of the filter or gradient in the order the GEMM needs). Backward-data: dL = dy * w
// into L-shaped scratch, without two invocations ever adding into one value (mec/mec_backward.cpp), then
// mec_gather sums dL into dx.
// Backward-filter: dw = sum over (p, q) of window(p)^T * dy(p, q), reduced over a chunk's images and row
// pieces through `partials` (split.slots products) in a fixed order.
struct MecFilterSplit {
    int64_t piece_rows = 1;      // output rows per reduction piece
    int64_t images_at_once = 1;  // images whose pieces one GEMM computes
    uint64_t slots = 0;          // partial products (0: no split, the GEMMs add into dw in order)
    // NCHW, 16-bit tensors, one group: filters per chunk whose OHWI fp32 copy is built (the lowering rerun for
    // each) and permuted into dw (0: all filters at once).
    int64_t filters = 0;
};
MecFilterSplit mec_backward_filter_split(ContextImpl& context, const ConvProblem& problem, const LoweredPlan& plan,
                                         uint64_t binding_limit);
void record_mec_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                              const Operand& grad_output, const Operand& filter, const Operand& grad_input,
                              const LoweredPlan& plan, const Operand& scratch, const Operand& filter_copy,
                              bool add_into_dx = false, const Operand& wide_image = {});
void record_mec_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                                const Operand& input, const Operand& grad_output, const Operand& grad_filter,
                                const LoweredPlan& plan, const Operand& scratch, const Operand& filter_copy,
                                const MecFilterSplit& split, const Operand& partials, const Operand& wide_filter);

}  // namespace vkconv::detail
