#version 450
// winograd_output — the output transform of Winograd's F(m×m, 3×3): for each (group, tile, 4 filters) the
// (m+2)² products M[ξ] that the batched GEMM summed over the channels become the m×m output tile y = Aᵀ M A
// (winograd_transforms.glsl), cropped at the image's bottom and right edges, with the forward pass's epilogue
// y = act(alpha·conv + bias + beta·z) (../common/epilogue.glsl) applied as each value is written: this shader
// is the only one that writes y.
//
// M is stored [ξ][g][t][k4] (the GEMM's C: rows t, columns k rounded up to 4), so an invocation reads each ξ
// as one aligned vec4 and neighbouring invocations read neighbouring vec4s of each ξ plane.
//
// Built as winograd_output_f4 (WINOGRAD_M 4) and winograd_output_f2 (WINOGRAD_M 2), each also as _texel
// (ACCESS_TEXEL): M read through an rgba32f texel view, which lavapipe fetches faster than storage-buffer vec4s
// (cv8 at batch 1: the transforms 12-16 ms with storage buffers, 8 ms with the view). The host takes it
// (WinogradPlan::product_texels) on CPU devices where M fits a view.
// Specialization constants: 0 WORKGROUP_SIZE, 1 NHWC, 2 K (channels of the output tensor), 3 P, 4 Q (its
//   size), 5 KG (channels per group), 6 GROUPS, 7 TILES_W (tile columns), 8 HAS_BIAS, 9 ACTIVATION,
//   10 HAS_RESIDUAL, 11 KG4 (KG rounded up to 4), 12 TENSOR_TYPE (the element type of y, the bias and z;
//   M is fp32, so each y value is rounded once, as it is stored).
// Bindings: 0 M (read: a storage buffer, or a uniform texel buffer in the _texel builds), 1 bias (read; any buffer when HAS_BIAS is 0), 2 y (the chunk's window of the output,
//   write), 3 z, the residual (read; any buffer when HAS_RESIDUAL is 0; may be y's own memory: each value is
//   read by the invocation that then writes it).
// Push constants: y_offset, z_offset, bias_offset (elements from each binding's start to the chunk's first image,
//   or to the bias's element 0), tile_row0 (the chunk's first tile row), tile_rows (tile rows per image in the
//   chunk), tiles (the chunk's tiles), alpha, beta, negative_slope, then the dispatch's slice
//   [base, base + count) of the GROUPS · tiles · KG4 / 4 invocations.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1), split by the host past maxComputeWorkGroupCount.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "../common/tensor_index.glsl"
#include "../common/epilogue.glsl"
#include "winograd_transforms.glsl"
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool NHWC = false;
layout(constant_id = 2) const uint K = 1;
layout(constant_id = 3) const uint P = 1;
layout(constant_id = 4) const uint Q = 1;
layout(constant_id = 5) const uint KG = 1;
layout(constant_id = 6) const uint GROUPS = 1;
layout(constant_id = 7) const uint TILES_W = 1;
layout(constant_id = 8) const bool HAS_BIAS = false;
layout(constant_id = 9) const uint ACTIVATION = 0;
layout(constant_id = 10) const bool HAS_RESIDUAL = false;
layout(constant_id = 11) const uint KG4 = 4;
layout(constant_id = 12) const uint TENSOR_TYPE = 0;  // of y, the bias and the residual (../common/elements.glsl)

#if defined(ACCESS_TEXEL)
layout(binding = 0) uniform samplerBuffer products;
#define PRODUCT(i) texelFetch(products, int(i))
#else
layout(std430, binding = 0) readonly buffer ProductBuffer { vec4 products[]; };
#define PRODUCT(i) products[i]
#endif
layout(std430, binding = 1) readonly buffer BiasBuffer { ELEMENT_WORD bias[]; };
layout(std430, binding = 2) buffer OutputBuffer { ELEMENT_WORD y[]; };
layout(std430, binding = 3) readonly buffer ResidualBuffer { ELEMENT_WORD residual[]; };

layout(push_constant) uniform Params {
    uint y_offset;
    uint z_offset;
    uint bias_offset;
    uint tile_row0;
    uint tile_rows;
    uint tiles;
    float alpha, beta, negative_slope;
    uint base, count;
} pc;

const uint ALPHA = WINOGRAD_ALPHA;
const uint M = WINOGRAD_M;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    const uint quads = KG4 / 4;
    const uint plane = GROUPS * pc.tiles * quads;  // vec4s from one transform position ξ to the next
    const uint k0 = (index % quads) * 4;
    const uint t = (index / quads) % pc.tiles;
    const uint g = index / (quads * pc.tiles);

    // Aᵀ M: along the columns first (ALPHA reads a row), then (Aᵀ M) A along the rows.
    vec4 am[M][ALPHA];
    [[unroll]] for (uint s = 0; s < ALPHA; ++s) {
        vec4 column[ALPHA];
        [[unroll]] for (uint r = 0; r < ALPHA; ++r) column[r] = PRODUCT((r * ALPHA + s) * plane + index);
        const vec4[M] reduced = output_1d(column);
        [[unroll]] for (uint r = 0; r < M; ++r) am[r][s] = reduced[r];
    }

    const uint tx = t % TILES_W;
    const uint ty = pc.tile_row0 + (t / TILES_W) % pc.tile_rows;
    const uint n = t / (TILES_W * pc.tile_rows);
    const uint channel = g * KG + k0;
    vec4 b = vec4(0.0);
    if (HAS_BIAS)
        [[unroll]] for (uint j = 0; j < 4; ++j) b[j] = k0 + j < KG ? ELEMENT_AT(bias, TENSOR_TYPE, pc.bias_offset + channel + j) : 0.0;
    const uint step = NHWC ? 1 : P * Q;  // from one channel to the next
    [[unroll]] for (uint r = 0; r < M; ++r) {
        const vec4[M] row = output_1d(am[r]);
        const uint p = ty * M + r;
        [[unroll]] for (uint s = 0; s < M; ++s) {
            const uint q = tx * M + s;
            if (p < P && q < Q) {  // the tiles past the bottom and right edges are cropped
                const uint at = tensor_offset(NHWC, n, channel, p, q, K, P, Q);
                [[unroll]] for (uint j = 0; j < 4; ++j) {
                    if (k0 + j < KG) {  // filters past the group's: the GEMM's padding columns
                        float value = pc.alpha * row[s][j] + b[j];
                        if (HAS_RESIDUAL) value += pc.beta * ELEMENT_AT(residual, TENSOR_TYPE, pc.z_offset + at + j * step);
                        STORE_ELEMENT(y, TENSOR_TYPE, pc.y_offset + at + j * step, activate(ACTIVATION, value, pc.negative_slope));
                    }
                }
            }
        }
    }
}
