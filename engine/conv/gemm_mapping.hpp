// How a convolution pass is a GEMM, per group (as CUTLASS's implicit_gemm_problem_size and its operand
// iterators map Fprop, Dgrad and Wgrad): the GEMM's M, N and K for a chunk of output positions, and the
// convolution's tensors seen as the GEMM's matrices in either layout. The lowerings (im2col, MEC) and the
// plans ask here rather than building shapes and strides inline.
//
//   pass             M                  N                  K                  product
//   forward          positions          K/G (filters)      C/G·R·S (taps)     y(m, k) = col(m, ·) · w(k, ·)ᵀ
//   backward-data    positions          C/G·R·S (taps)     K/G (filters)      dcol(m, ·) = dy(m, ·) · w
//   backward-filter  K/G (filters)      C/G·R·S (taps)     positions          dw(k, ·) = dy(·, k)ᵀ · col
// where positions are a chunk's (image, output row, output column) triples. im2col's col holds those rows
// explicitly; MEC reads them as overlapping windows of its lowered matrix (MecWindows).
#pragma once

#include <cstdint>

#include "vkconv/problem.hpp"

namespace vkconv::detail {

// One filter's reduction: the taps it multiplies, C/G·R·S.
inline int64_t filter_taps(const ConvProblem& p) {
    return p.channels_per_group() * p.R * p.S;
}
// One group's filter (or its gradient): K/G·C/G·R·S floats.
inline int64_t group_filter_floats(const ConvProblem& p) {
    return p.filters_per_group() * filter_taps(p);
}
// The padded input rows that `rows` consecutive output rows read.
inline int64_t input_rows_read(const ConvProblem& p, int64_t rows) {
    return (rows - 1) * p.stride_h + (p.R - 1) * p.dilation_h + 1;
}

// A pass as one GEMM: its M, N and K (vkconv::GemmShape, a product the GEMM runs, is the public record of one).
struct GemmExtent {
    int64_t M = 0, N = 0, K = 0;
};
inline GemmExtent forward_gemm(const ConvProblem& p, int64_t positions) {
    return {positions, p.filters_per_group(), filter_taps(p)};
}
inline GemmExtent backward_data_gemm(const ConvProblem& p, int64_t positions) {
    return {positions, filter_taps(p), p.filters_per_group()};
}
inline GemmExtent backward_filter_gemm(const ConvProblem& p, int64_t positions) {
    return {p.filters_per_group(), filter_taps(p), positions};
}

// An output-shaped tensor (y or dy) of a chunk as a matrix: row m = (image, output row from p0, column q),
// column = filter k of group g; `delta` floats from the binding's start to the chunk's first image. Within
// an image the rows are uniformly strided; across images NHWC stays uniform (whole images, or one image's
// band), while NCHW jumps: rows come in segments of `segment` (the chunk's rows·Q), `segment_stride` apart.
struct OutputMatrix {
    uint64_t offset = 0;
    uint64_t row_stride = 0, col_stride = 0;
    uint64_t segment = 0, segment_stride = 0;  // 0: uniform rows
    uint64_t image_stride = 0;                 // floats from one image to the next
};
inline OutputMatrix output_matrix(const ConvProblem& p, uint64_t delta, int64_t g, int64_t p0, int64_t rows) {
    const int64_t P = p.P(), Q = p.Q(), Kg = p.filters_per_group();
    const uint64_t image = uint64_t(p.K * P * Q);
    if (p.layout == Layout::NHWC) return {delta + uint64_t(p0 * Q * p.K + g * Kg), uint64_t(p.K), 1, 0, 0, image};
    return {delta + uint64_t(g * Kg * P * Q + p0 * Q), 1, uint64_t(P * Q), uint64_t(rows * Q), image, image};
}

// MEC's lowered matrix L[g][n][q][h][s][c] of a chunk (`lowered_rows` padded input rows h) as the GEMM
// sees it: output row p of an image reads the window of lowered rows [p·sh, p·sh + (R-1)·dh] in every
// column q, and a window read over (r, s, c) holds the filter's taps in OHWI order. A window is a matrix
// whose rows are the columns q; its taps are contiguous where dh = 1, else R runs of S·C/G floats. The
// forward product reads the windows as A, backward-data writes dL through them as C, and backward-filter
// reads them transposed. Strides in floats within one group's L.
struct MecWindows {
    uint64_t row = 0;          // one lowered row h of one group: S·C/G floats (one tap row's (s, c))
    uint64_t column = 0;       // from column q to q + 1: lowered_rows rows
    uint64_t image = 0;        // from image n to n + 1: Q columns
    uint64_t window_step = 0;  // from output row p's window to p + 1's: sh rows
    uint64_t tap_step = 0;     // from tap row r to r + 1 within a window: dh rows
    bool taps_contiguous() const { return tap_step == row; }
};
inline MecWindows mec_windows(const ConvProblem& p, int64_t lowered_rows) {
    MecWindows w;
    w.row = uint64_t(p.S * p.channels_per_group());
    w.column = uint64_t(lowered_rows) * w.row;
    w.image = uint64_t(p.Q()) * w.column;
    w.window_step = uint64_t(p.stride_h) * w.row;
    w.tap_step = uint64_t(p.dilation_h) * w.row;
    return w;
}

}  // namespace vkconv::detail
