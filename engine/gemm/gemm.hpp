// The GEMM every lowering and backward pass runs through (shaders gemm_registers / gemm_shared).
//
// C = alpha * A * B + beta * C (+ bias[n]) over a two-level batch, every operand described by strides in
// elements of its own type (fp32, fp16 or bf16: the 16-bit kernels widen every value they read, sum in fp32
// and round each value of C once as they store it) from the start of its bound range, so transposes, MEC's overlapping windows and output layouts
// are descriptions, not copies. For the forward convolution's fused epilogue, beta may scale a residual
// instead of C, and an activation may be applied to every stored value. record_gemm picks the device's configuration
// for the problem's size (or the forced one), checks which operands allow vec4 loads, and splits the grid where it
// exceeds the device's workgroup-count limits.
#pragma once

#include <cstdint>

#include "context/context_impl.hpp"
#include "gemm/gemm_config.hpp"
#include "vkconv/gemm.hpp"
#include "vulkan/command_stream.hpp"

namespace vkconv::detail {

struct GemmMatrix {
    BufferRange range;        // the bound memory
    uint64_t offset = 0;      // elements from range.offset to element (0, 0) of batch (0, 0)
    uint64_t stride_row = 0;  // A: per m; B: per k; C: per m
    uint64_t stride_col = 0;  // A: per k; B: per n; C: per n
    uint64_t batch_i = 0, batch_j = 0;
    DataType type = DataType::F32;  // its elements' (offsets and strides count them)
};

struct GemmProblem {
    uint32_t M = 0, N = 0, K = 0;
    GemmMatrix a, b, c;
    uint32_t batch_i = 1, batch_j = 1;
    float alpha = 1.0f, beta = 0.0f;
    BufferRange bias;          // size 0: no bias
    uint64_t bias_offset = 0;  // elements of bias_type
    DataType bias_type = DataType::F32;
    // A's k dimension in segments: k sits (k / a_k_segment) * a_k_segment_stride + (k % a_k_segment) *
    // a.stride_col floats from the row's start. 0: uniform (k * a.stride_col).
    uint32_t a_k_segment = 0, a_k_segment_stride = 0;
    // A's rows in segments: row m starts at (m / a_m_segment) * a_m_segment_stride + (m % a_m_segment) *
    // a.stride_row. 0: uniform rows.
    uint32_t a_m_segment = 0, a_m_segment_stride = 0;
    // The fused epilogue: with a residual (size > 0), beta scales it instead of C. It has C's strides;
    // residual_offset is, in elements (of C's type) from residual.offset, its element at C's (0, 0) of batch (0, 0). It may be
    // C's own memory (then read before each value is written). The activation (negative_slope for LeakyReLU)
    // applies to every stored value, after the bias.
    BufferRange residual;
    uint64_t residual_offset = 0;
    Activation activation = Activation::None;
    float negative_slope = 0.0f;
};

// Whether A and B can be read through texel views (at most maxTexelBufferElements r32f texels each).
bool texel_views_fit(const Device& device, const GemmProblem& problem);
// The element type whose kernel build runs the product (shaders/common/elements.glsl): a 16-bit type where
// any operand has one, else fp32.
DataType gemm_build_type(const GemmProblem& problem);

// The configuration record_gemm would choose for this problem: the preferred one for its shape, read
// through storage buffers where an operand is too large for a texel view.
const GemmConfig& choose_gemm_config(ContextImpl& context, const GemmProblem& problem);

// Split-K: a GEMM whose M x N tiles are too few to fill the device runs as `slices` GEMMs over pieces of K
// into partial products, which splitk_reduce then adds in slice order (deterministic: the same bits every
// run on one device). Only for a plain product: uniform K (no a_k_segment), no bias, residual or
// activation, and C contiguous ([batch][M][N]).
struct GemmSplit {
    uint32_t slices = 1;
    uint32_t piece = 0;            // K per slice (a multiple of 4, so vec4 loads stay aligned); the last is shorter
    uint64_t partial_floats = 0;   // workspace
};
GemmSplit plan_gemm_split(ContextImpl& context, const GemmProblem& problem, const GemmConfig* config = nullptr);
// Records `problem` split as `split` says, its partial products in `partials` (split.partial_floats).
void record_split_gemm(ContextImpl& context, CommandStream& stream, const GemmProblem& problem, const GemmSplit& split,
                       const BufferRange& partials, const GemmConfig* config = nullptr);

// Records the GEMM into `stream`. `config`: force one (tests, benchmarks; a texel configuration then needs
// operands that fit texel views); nullptr: choose. `bias_in_c`: C already holds the bias, which a 4-binding
// kernel with a residual adds from there (the second half of a product with both, gemm.cpp).
void record_gemm(ContextImpl& context, CommandStream& stream, const GemmProblem& problem,
                 const GemmConfig* config = nullptr, bool bias_in_c = false);

}  // namespace vkconv::detail
