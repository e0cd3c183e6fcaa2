#version 450
// depthwise_forward — y = x * w for a depthwise convolution (see depthwise_common.glsl), with each
// invocation's input window in registers.
//
// An invocation computes a TILE_H x TILE_W block of outputs of one filter k (or 4 adjacent filters with
// CHANNELS4). It walks the ROWS_IN input rows its block reads once each: every row segment (the SEG input
// columns under the block's TILE_W outputs and S taps) is loaded once into registers and used by every
// output row and tap that reads it; the R*S taps of its filter stay in registers throughout. In NCHW with
// VEC4_X the segment is loaded as aligned vec4s (the strip's first column then sits SHIFT floats into
// its first vec4) and with VEC4_Y the block is stored as vec4s.
//
// Specialization constants: 0..19 as in depthwise_common.glsl, and
//  20 HAS_BIAS
// Bindings: 0 x as vec4 (the chunk's window), 1 x as float (the same window), 2 w (float), 3 bias (float;
//   any buffer when HAS_BIAS is 0), 4 y (the chunk's window; storage buffer, written).
// Push constants: x_offset and y_offset (floats from each binding's start to the chunk's first image),
//   w_offset and b_offset (floats from binding 2's and 3's start to the filter's and bias's element 0), then
//   the dispatch's slice [base, base + count) of the invocations.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1) over images * (K / LANE_CHANNELS) * ceil(P / TILE_H) *
//   ceil(Q / TILE_W) invocations: NCHW orders them (n, k, row block, column block), NHWC (n, row block,
//   column block, k) so that neighbouring invocations read neighbouring addresses.

#extension GL_GOOGLE_include_directive : require
#include "depthwise_common.glsl"

layout(constant_id = 20) const bool HAS_BIAS = false;

DECLARE_READ4(0, x4)
DECLARE_READ1(1, x1)
DECLARE_READ1(2, w1)
DECLARE_READ1(3, bias1)
layout(std430, binding = 4) writeonly buffer Output4 { vec4 y4[]; };
layout(std430, binding = 4) writeonly buffer Output1 { float y1[]; };

layout(push_constant) uniform Params {
    uint x_offset, y_offset;
    uint w_offset, b_offset;
    uint base, count;
} pc;

const uint SEG = (TILE_W - 1) * STRIDE_W + (S - 1) * DIL_W + 1;  // input columns one block row reads
const uint SHIFT = VEC4_X ? MOD4(-int(PAD_W)) : 0;               // first column's place in its vec4
const uint SEG_LOADED = VEC4_X ? (SHIFT + SEG + 3) / 4 * 4 : SEG;
const uint ROWS_IN = (TILE_H - 1) * STRIDE_H + (R - 1) * DIL_H + 1;  // input rows one block reads
const uint TILES_Q = (Q + TILE_W - 1) / TILE_W;
const uint TILES_P = (P + TILE_H - 1) / TILE_H;
const uint LANES = K / LANE_CHANNELS;

// The taps of filter k (k .. k+3 with CHANNELS4) at `tap`.
VAL filter_tap(uint k, uint tap) {
#ifdef CHANNELS4
    const uint w = pc.w_offset + k * TAPS + tap;
    return vec4(READ1(w1, w), READ1(w1, w + TAPS), READ1(w1, w + 2 * TAPS), READ1(w1, w + 3 * TAPS));
#else
    return READ1(w1, pc.w_offset + k * TAPS + tap);
#endif
}

VAL bias_of(uint k) {
#ifdef CHANNELS4
    const uint b = pc.b_offset + k;
    return vec4(READ1(bias1, b), READ1(bias1, b + 1), READ1(bias1, b + 2), READ1(bias1, b + 3));
#else
    return READ1(bias1, pc.b_offset + k);
#endif
}

// Output (n, k, p, q) of the chunk, in the layout's order (k is the first of 4 with CHANNELS4).
uint y_index(uint n, uint k, uint p, uint q) {
    return pc.y_offset + tensor_offset(NHWC, n, k, p, q, K, P, Q);
}

void main() {
    if (gl_GlobalInvocationID.x >= pc.count) return;
    uint index = pc.base + gl_GlobalInvocationID.x;
    uint n, lane, pt, qt;
    tensor_coords(NHWC, index, LANES, TILES_P, TILES_Q, n, lane, pt, qt);  // blocks ordered like y's values
    const uint k = lane * LANE_CHANNELS, c = k / MULT;
    const uint p0 = pt * TILE_H, q0 = qt * TILE_W;

    VAL taps[TAPS];
    [[unroll]] for (uint tap = 0; tap < TAPS; ++tap) taps[tap] = filter_tap(k, tap);
    VAL acc[TILE_H * TILE_W];
    const VAL start = HAS_BIAS ? bias_of(k) : VAL(0.0);
    [[unroll]] for (uint i = 0; i < TILE_H * TILE_W; ++i) acc[i] = start;

    const int h0 = window_origin(p0, STRIDE_H, PAD_H);
    const int col0 = window_origin(q0, STRIDE_W, PAD_W) - int(SHIFT);  // the column of seg[0]
    [[unroll]] for (uint i = 0; i < ROWS_IN; ++i) {
        const int ih = h0 + int(i);
        if (!in_range(ih, H)) continue;
        const uint row_base = pc.x_offset + tensor_offset(NHWC, n, c, uint(ih), 0, C, H, W);
        VAL seg[SEG_LOADED];
        LOAD_SEGMENT(seg, SEG_LOADED, x4, x1, row_base, col0, W, column_stride(NHWC, C), VEC4_X)
        // Every output row t of the block that reads input row i through filter row r = (i - t*sh) / dh.
        [[unroll]] for (uint t = 0; t < TILE_H; ++t) {
            const int d = int(i) - int(t * STRIDE_H);
            if (d < 0 || uint(d) % DIL_H != 0 || uint(d) / DIL_H >= R) continue;
            const uint r = uint(d) / DIL_H;
            [[unroll]] for (uint j = 0; j < TILE_W; ++j)
                [[unroll]] for (uint s = 0; s < S; ++s)
                    acc[t * TILE_W + j] += taps[r * S + s] * seg[SHIFT + j * STRIDE_W + s * DIL_W];
        }
    }
    // (Arrays are not passed to functions: copies of spec-constant-sized arrays lose elements on lavapipe.)
    [[unroll]] for (uint t = 0; t < TILE_H; ++t) {
        if (p0 + t >= P) continue;
#ifdef CHANNELS4
        [[unroll]] for (uint j = 0; j < TILE_W; ++j)
            if (q0 + j < Q) y4[y_index(n, k, p0 + t, q0 + j) >> 2] = acc[t * TILE_W + j];
#else
        if (VEC4_Y) {
            [[unroll]] for (uint j = 0; j < TILE_W; j += 4) {
                if (q0 + j < Q)
                    y4[y_index(n, k, p0 + t, q0 + j) >> 2] = vec4(acc[t * TILE_W + j], acc[t * TILE_W + j + 1],
                                                                 acc[t * TILE_W + j + 2], acc[t * TILE_W + j + 3]);
            }
        } else {
            [[unroll]] for (uint j = 0; j < TILE_W; ++j)
                if (q0 + j < Q) y1[y_index(n, k, p0 + t, q0 + j)] = acc[t * TILE_W + j];
        }
#endif
    }
}
