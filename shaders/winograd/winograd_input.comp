#version 450
// winograd_input — the input transform of Winograd's F(m×m, 3×3): every (m+2)×(m+2) tile of the input that an
// m×m tile of the output reads, turned into V = Bᵀ d B (winograd_transforms.glsl), one invocation per (group,
// tile, 4 channels). Tiles overlap by two rows and columns; reads outside the image are zero, which is how the
// padding (any pad on any side, also negative: the backward-data pass's R-1-pad) enters.
//
// Output tile (ty, tx) of image n covers outputs [ty·m, ty·m + m) × [tx·m, tx·m + m) and reads the input from
// (ty·m + ORIGIN_H, tx·m + ORIGIN_W) on: ORIGIN is -pad for the forward pass, pad - 2 for backward-data (a
// forward pass over dy with the rotated filter).
//
// V is stored [ξ][g][t][c4] (ξ the (m+2)² transform positions, t the chunk's tiles, c4 the group's channels
// rounded up to 4, the extra ones zero) so that each ξ, g is one GEMM operand A = V(t, c) with contiguous,
// vec4-aligned rows, whatever the channel count; each invocation stores its (m+2)² values as vec4s.
//
// Built as winograd_input_f4 (WINOGRAD_M 4) and winograd_input_f2 (WINOGRAD_M 2).
// Specialization constants: 0 WORKGROUP_SIZE, 1 NHWC, 2 C (channels of the input tensor), 3 H, 4 W (its size),
//   5 CG (channels per group), 6 CG4 (CG rounded up to 4), 7 GROUPS, 8 TILES_W (tile columns), 9 ORIGIN_H,
//   10 ORIGIN_W, 11 TENSOR_TYPE (x's element type; V is fp32).
// Bindings: 0 x (the chunk's window of the input tensor, read), 1 V (write).
// Push constants: x_offset (elements from the binding's start to the chunk's first image), tile_row0 (the
//   chunk's first tile row), tile_rows (tile rows per image in the chunk), tiles (the chunk's tiles: images ·
//   tile_rows · TILES_W), then the dispatch's slice [base, base + count) of the GROUPS · tiles · CG4 / 4
//   invocations.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1), split by the host past maxComputeWorkGroupCount.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "../common/tensor_index.glsl"
#include "winograd_transforms.glsl"
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool NHWC = false;
layout(constant_id = 2) const uint C = 1;
layout(constant_id = 3) const uint H = 1;
layout(constant_id = 4) const uint W = 1;
layout(constant_id = 5) const uint CG = 1;
layout(constant_id = 6) const uint CG4 = 4;
layout(constant_id = 7) const uint GROUPS = 1;
layout(constant_id = 8) const uint TILES_W = 1;
layout(constant_id = 9) const int ORIGIN_H = 0;
layout(constant_id = 10) const int ORIGIN_W = 0;
layout(constant_id = 11) const uint TENSOR_TYPE = 0;  // x's element type (../common/elements.glsl)

layout(std430, binding = 0) readonly buffer InputBuffer { ELEMENT_WORD x[]; };
layout(std430, binding = 1) writeonly buffer TransformBuffer { vec4 v[]; };

layout(push_constant) uniform Params {
    uint x_offset;
    uint tile_row0;
    uint tile_rows;
    uint tiles;
    uint base, count;
} pc;

const uint ALPHA = WINOGRAD_ALPHA;
const uint M = WINOGRAD_M;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    const uint quads = CG4 / 4;
    const uint c0 = (index % quads) * 4;
    const uint t = (index / quads) % pc.tiles;
    const uint g = index / (quads * pc.tiles);

    const uint tx = t % TILES_W;
    const uint ty = pc.tile_row0 + (t / TILES_W) % pc.tile_rows;
    const uint n = t / (TILES_W * pc.tile_rows);
    const int h0 = int(ty * M) + ORIGIN_H, w0 = int(tx * M) + ORIGIN_W;
    vec4 d[ALPHA][ALPHA];
    [[unroll]] for (uint r = 0; r < ALPHA; ++r) {
        const int h = h0 + int(r);
        [[unroll]] for (uint s = 0; s < ALPHA; ++s) {
            const int w = w0 + int(s);
            // One unsigned compare per coordinate rejects the padding on both sides (in_range); channels past
            // the group's are zero (rows of A the GEMM multiplies by U's zero columns).
            const bool inside = in_range(h, H) && in_range(w, W);
            const uint at = inside ? pc.x_offset + tensor_offset(NHWC, n, g * CG + c0, uint(h), uint(w), C, H, W) : 0;
            const uint step = NHWC ? 1 : H * W;  // from one channel to the next
            [[unroll]] for (uint j = 0; j < 4; ++j) d[r][s][j] = inside && c0 + j < CG ? ELEMENT_AT(x, TENSOR_TYPE, at + j * step) : 0.0;
        }
    }

    // Bᵀ d: columns first, then (Bᵀ d) B along the rows.
    vec4 bd[ALPHA][ALPHA];
    [[unroll]] for (uint s = 0; s < ALPHA; ++s) {
        vec4 column[ALPHA];
        [[unroll]] for (uint r = 0; r < ALPHA; ++r) column[r] = d[r][s];
        column = input_1d(column);
        [[unroll]] for (uint r = 0; r < ALPHA; ++r) bd[r][s] = column[r];
    }
    const uint plane = GROUPS * pc.tiles * quads;  // vec4s from one transform position ξ to the next
    const uint at = (g * pc.tiles + t) * quads + c0 / 4;
    [[unroll]] for (uint r = 0; r < ALPHA; ++r) {
        const vec4[ALPHA] row = input_1d(bd[r]);
        [[unroll]] for (uint s = 0; s < ALPHA; ++s) v[(r * ALPHA + s) * plane + at] = row[s];
    }
}
