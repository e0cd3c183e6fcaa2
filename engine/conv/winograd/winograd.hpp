// Winograd convolution F(m×m, 3×3) (Lavin & Gray 2016) for 3×3, stride-1, dilation-1 layers, any groups, either
// layout, any padding: forward, and backward-data as a forward pass over dy with the rotated, transposed filter.
//
//   U = G g Gᵀ         winograd_filter.comp, once a pass: [ξ][g][o4][i4], ξ over the (m+2)² transform positions
//   V = Bᵀ d B         winograd_input.comp, per chunk:    [ξ][g][t][i4], t over the chunk's output tiles
//   M[ξ] = V[ξ]·U[ξ]   the project's GEMM (gemm/gemm.hpp), one batch entry per (ξ, group): M = tiles, N = o4,
//                      K = i4 (the group's input and output channels rounded up to 4, zero-filled, so the GEMM's
//                      vec4 loads always hold and every transform loads and stores aligned vec4s)
//   y = Aᵀ M A         winograd_output.comp, per chunk: cropped at the edges, + bias, the forward epilogue
// Each transform invocation handles 4 channels (or filters): on lavapipe the transforms' scattered loads and
// stores, not their arithmetic, are what they cost, and a vec4 store is one store. There the filter and output
// transforms also read through texel views where they can (WinogradPlan::filter_texels, product_texels), which
// lavapipe fetches faster than it loads storage buffers.
//
// Chunks: whole images, or bands of tile rows of one image where one image's V or M would exceed the binding
// limit (PassOptions::max_binding_bytes, maxStorageBufferRange) or the workspace limit. Workspace, in the
// pass's slots: Lowered holds V then M (M starting on the pool alignment), FilterCopy holds U. A 16-bit pass
// of one group also splits the input channels: U and V for half of them at a time, the GEMM adding each
// half's products into M (fp32), so that U, which its fp32 twin holds whole, halves too.
//
// The tile: F(4×4, 3×3) does 36 products for 16 outputs (4× fewer than direct), F(2×2, 3×3) 16 for 4 (2.25×).
// F(4×4)'s transform constants are larger, and so is its error; winograd_tile() picks F(2×2) where F(4×4)'s
// error bound (below) passes kMaxRelativeBound, and where the pass has fewer than kMinF4Tiles F(4×4) tiles: the
// filter is transformed on every call, 36 floats a weight for F(4×4) against 16 for F(2×2), and with few tiles
// that transform, not the GEMM, is the cost (lavapipe, batch 1: cv6, cv11, cv12 and resnet_3x3_14 ran 1.3-2.6×
// faster in F(2×2), cv10 with 49 F(4×4) tiles 1.1-1.7× slower).
//
// The error bound. For one output value y of a reduction over n = CG·9 taps (CG the channels per group of the
// pass's input), the computed ŷ satisfies, elementwise over the tile (u = 2⁻²⁴, γ_k = k·u / (1 - k·u)):
//   |ŷ - y| ≤ γ_k · ( |Aᵀ| · Σ_c (|G| |g_c| |Gᵀ|) ⊙ (|Bᵀ| |d_c| |B|) · |A| )        with k = CG4 + 33
// (k: the GEMM's sum of CG4 terms, 2·(m+2) for each of the input and output transforms, 2·4 for the filter's
// with its constants' own rounding, 1 for the product; taken as 33 for both tiles). Bounding |g| and |d| by
// their largest values gives the normwise form in the reduction length n:
//   |ŷ - y| ≤ γ_k · (n / 9) · α_m² · max|w| · max|x|,   α_m = max_i Σ_a |Aᵀ_ia| ‖G_a‖₁ ‖Bᵀ_a‖₁
//                                                             ≤ ‖Aᵀ‖_∞ ‖G‖_∞ ‖Bᵀ‖_∞
// with α_4 = 48 (norms 19, 1, 10) and α_2 = 8 (norms 3, 1.5, 2). Direct summation's is γ_n · n · max|w| max|x|,
// so F(4×4)'s worst case is about α_4²/81 ≈ 28 times direct's, F(2×2)'s about 0.8 times. The tests check the
// elementwise form on every output value (tests/test_winograd.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "conv/operands.hpp"
#include "conv/planned.hpp"
#include "vkconv/conv.hpp"

namespace vkconv::detail {

struct AlgorithmPlan;
struct Workspace;
struct ConvOperands;

// F(4×4) is used while its normwise bound relative to n·max|w|·max|x|, γ_k·α_4²/9, stays within this
// (2⁻⁷ ≈ 0.8 %: about 480 channels per group); past it F(2×2), whose bound is 36 times smaller.
constexpr double kMaxRelativeBound = 1.0 / 128.0;
constexpr int64_t kMinF4Tiles = 32;
// k - CG4 in γ_k (see the error bound above).
constexpr int64_t kTransformRoundings = 33;

// The transform matrices of F(m×m, 3×3), row-major, for the bound and the tests (the shaders write them out
// term by term in winograd_transforms.glsl).
struct WinogradMatrices {
    int m = 4, alpha = 6;
    std::array<double, 36> bt{};  // alpha × alpha
    std::array<double, 18> g{};   // alpha × 3
    std::array<double, 24> at{};  // m × alpha
};
const WinogradMatrices& winograd_matrices(int m);
// α_m above.
double winograd_alpha(int m);
// γ_k · α_m² / 9 with k = round_up(channels, 4) + kTransformRoundings: the bound on |ŷ - y| over
// n · max|w| · max|x|, for a reduction over `channels` input channels per group.
double winograd_relative_bound(int m, int64_t channels);
// The tile m (4 or 2) for a reduction over `channels` input channels per group, in a pass of `f4_tiles` F(4×4)
// output tiles (all images), where PassOptions::variant does not name one.
int winograd_tile(int64_t channels, int64_t f4_tiles);
// The tile's name as RunStats::variant and PassOptions::variant give it: "F(4x4,3x3)" or "F(2x2,3x3)".
const char* winograd_variant(int m);

// Why Winograd cannot run this pass of this problem, or nothing when it can.
std::optional<std::string> winograd_refusal(const ConvProblem& problem, Pass pass);

// The heuristic's rule (conv/heuristic.cpp), from measurements of the layer table on lavapipe and SwiftShader
// (docs/benchmarks.md): Winograd where it applies, on a CPU device, with at least kMinRuleChannels channels and
// filters per group (the GEMM, not the transforms, dominates) and at least kMinRuleTiles output tiles in the pass.
// The filter is transformed on every call, (m+2)² floats written per weight, while the GEMM makes T multiply-adds
// per transformed weight: with 9 tiles (cv12 at batch 1) the transform outweighs the saving (0.76× the best
// other algorithm), with 25-36 (cv6, cv11 in F(2×2)) Winograd ran 1.3-1.7×, with more 1.6-2×.
constexpr int64_t kMinRuleTiles = 16, kMinRuleChannels = 16;
bool winograd_preferred(const ContextImpl& context, const ConvProblem& problem, Pass pass);

// The convolution a Winograd pass computes: forward as given; backward-data as dx = conv(dy, w rotated and
// transposed) over dy's channels, with dx's size and the origin pad - 2 (R - 1 - pad on each side's start; the
// end needs no pad of its own, since reads past dy are zero and the output size is dx's).
struct WinogradShape {
    int m = 4, alpha = 6;
    bool nhwc = false, transposed = false;
    DataType type = DataType::F32;  // of the tensors it reads and writes (its workspaces are fp32)
    int64_t groups = 1;
    int64_t in_c = 1, in_h = 1, in_w = 1, in_g = 1, in_g4 = 4;    // the transformed conv's input (x or dy)
    int64_t out_c = 1, out_h = 1, out_w = 1, out_g = 1, out_g4 = 4;  // its output (y or dx)
    int64_t origin_h = 0, origin_w = 0;                           // input row/column of output (0, 0)'s tap (0, 0)
    int64_t tiles_h = 1, tiles_w = 1;                             // tiles per image
    uint64_t in_image() const { return uint64_t(in_c * in_h * in_w); }
    uint64_t out_image() const { return uint64_t(out_c * out_h * out_w); }
    uint64_t positions() const { return uint64_t(alpha * alpha); }
    // Floats of V, M for `tiles` tiles, and of U.
    uint64_t v_floats(int64_t tiles) const { return positions() * uint64_t(groups * tiles * in_g4); }
    uint64_t m_floats(int64_t tiles) const { return positions() * uint64_t(groups * tiles * out_g4); }
    uint64_t u_floats() const { return positions() * uint64_t(groups * out_g4 * in_g4); }
    // The shape of the GEMM over `count` of the input channels (in_g4 rounded from it): U, V and the GEMM's
    // K for one input-channel chunk.
    WinogradShape input_chunk(int64_t count) const {
        WinogradShape chunk = *this;
        chunk.in_g = count;
        chunk.in_g4 = (count + 3) / 4 * 4;
        return chunk;
    }
};
// `tile`: 4 or 2, else (0) the rule's (winograd_tile).
WinogradShape winograd_shape(const ConvProblem& problem, Pass pass, int tile = 0);

struct WinogradPlan {
    int m = 4;              // the tile: F(m×m, 3×3)
    int64_t images = 1;     // images per chunk
    int64_t tile_rows = 1;  // tile rows per chunk (all of them unless images == 1)
    uint64_t m_offset = 0;  // floats from the Lowered slot's start to M (V comes first)
    uint64_t lowered_floats = 0, filter_floats = 0;  // the Lowered and FilterCopy slots
    uint32_t chunks = 1;
    // Input channels (of the transformed conv) a GEMM sums at a time, U and V made for them alone, M adding up
    // over them: all of them, or (a 16-bit pass, one group) half, so that U halves with the tensors.
    int64_t in_chunk = 1;
    // The filter transform reads w through a texel view of quads (winograd_filter.comp's _texel builds): on a
    // CPU device, forward, channels per group a multiple of 4, the view within maxTexelBufferElements. The
    // record falls back to storage buffers for an application's buffer or a w that does not start on a quad.
    bool filter_texels = false;
    // The output transform reads M through an rgba32f texel view (winograd_output.comp's _texel builds): on a
    // CPU device, where the largest chunk's M is within maxTexelBufferElements.
    bool product_texels = false;
};

// The tile PassOptions::variant names, else the rule's, and the chunks under the binding and workspace limits;
// refused where the problem or pass does not apply, where F(4×4) is asked for past kMaxRelativeBound, or where
// not even one tile row of one image fits.
Planned<WinogradPlan> plan_winograd(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                    const PassOptions& options);

// Records the pass: ops as the table passes them (forward: x, w, bias → y; backward-data: output = dy,
// filter = w → input = dx).
void record_winograd(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                     const AlgorithmPlan& plan, const ConvOperands& operands, Workspace workspace);

}  // namespace vkconv::detail
