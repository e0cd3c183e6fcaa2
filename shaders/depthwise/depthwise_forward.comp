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
// The forward epilogue is applied as the block is stored: y = act(alpha * sum + bias + beta * z) (with
// alpha == 1 the taps add straight onto the bias, in the plain convolution's order).
//
// Specialization constants: 0..20 as in depthwise_common.glsl, and
//  21 HAS_BIAS
//  22 ACTIVATION       the epilogue's activation (../common/epilogue.glsl)
//  23 HAS_RESIDUAL     the epilogue reads the residual z (binding 5)
// Bindings: 0 x as vec4 (the chunk's window), 1 x as float (the same window), 2 w (float), 3 bias (float;
//   any buffer when HAS_BIAS is 0), 4 y (the chunk's window; storage buffer, written), 5 the residual z (the
//   chunk's window; storage buffer, read as float; any buffer when HAS_RESIDUAL is 0; may be y's own memory,
//   each value read before it is written).
// Push constants: x_offset and y_offset (floats from each binding's start to the chunk's first image),
//   w_offset and b_offset (floats from binding 2's and 3's start to the filter's and bias's element 0),
//   z_offset (binding 5's, to the chunk's first image of z), the epilogue's alpha, beta and negative_slope,
//   then the dispatch's slice [base, base + count) of the invocations.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1) over images * (K / LANE_CHANNELS) * ceil(P / TILE_H) *
//   ceil(Q / TILE_W) invocations: NCHW orders them (n, k, row block, column block), NHWC (n, row block,
//   column block, k) so that neighbouring invocations read neighbouring addresses.

#extension GL_GOOGLE_include_directive : require
#include "depthwise_common.glsl"
#include "../common/epilogue.glsl"

layout(constant_id = 21) const bool HAS_BIAS = false;
layout(constant_id = 22) const uint ACTIVATION = 0;
layout(constant_id = 23) const bool HAS_RESIDUAL = false;

#ifdef FOUR_BINDINGS
// The build for devices that allow 4 storage buffers per stage (storage buffers only): x's two views share
// binding 0, then w, the bias and y; the host has copied the residual into y, where it is read.
DECLARE_READ4(0, x4)
DECLARE_READ1(0, x1)
DECLARE_READ1(1, w1)
DECLARE_READ1(2, bias1)
DECLARE_OUTPUT4(3, y4, )
DECLARE_OUTPUT1(3, y1, )
#define Z1(i) OUTPUT_AT(y1, i)
#else
DECLARE_READ4(0, x4)
DECLARE_READ1(1, x1)
DECLARE_READ1(2, w1)
DECLARE_READ1(3, bias1)
DECLARE_OUTPUT4(4, y4, writeonly)
DECLARE_OUTPUT1(4, y1, writeonly)
DECLARE_STORAGE_READ1(5, z1)
#define Z1(i) OUTPUT_AT(z1, i)
#endif

layout(push_constant) uniform Params {
    uint x_offset, y_offset;
    uint w_offset, b_offset;
    uint z_offset;
    float alpha, beta, negative_slope;
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

// The residual of output (n, k, p, q) (k .. k+3 with CHANNELS4: adjacent in NHWC).
VAL residual_of(uint n, uint k, uint p, uint q) {
    const uint i = pc.z_offset + tensor_offset(NHWC, n, k, p, q, K, P, Q);
#ifdef CHANNELS4
    return vec4(Z1(i), Z1(i + 1), Z1(i + 2), Z1(i + 3));
#else
    return Z1(i);
#endif
}

// The epilogue of output (n, k, p, q) from its accumulator (which started from the bias when alpha == 1, from 0
// otherwise).
VAL finish(VAL acc, VAL bias_value, uint n, uint k, uint p, uint q) {
    VAL value = pc.alpha == 1.0 ? acc : bias_value + pc.alpha * acc;
    if (HAS_RESIDUAL) value += pc.beta * residual_of(n, k, p, q);
    return activate(ACTIVATION, value, pc.negative_slope);
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
    const VAL bias_value = HAS_BIAS ? bias_of(k) : VAL(0.0);
    const VAL start = pc.alpha == 1.0 ? bias_value : VAL(0.0);  // alpha != 1: the bias is added after scaling
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
            if (q0 + j < Q)
                WRITE4(y4, y_index(n, k, p0 + t, q0 + j) >> 2, finish(acc[t * TILE_W + j], bias_value, n, k, p0 + t, q0 + j));
#else
        if (VEC4_Y) {
            // (Q % 4 == 0: a vec4 that starts inside the row ends inside it.)
            [[unroll]] for (uint j = 0; j < TILE_W; j += 4) {
                if (q0 + j < Q)
                    WRITE4(y4, y_index(n, k, p0 + t, q0 + j) >> 2,
                        vec4(finish(acc[t * TILE_W + j], bias_value, n, k, p0 + t, q0 + j),
                             finish(acc[t * TILE_W + j + 1], bias_value, n, k, p0 + t, q0 + j + 1),
                             finish(acc[t * TILE_W + j + 2], bias_value, n, k, p0 + t, q0 + j + 2),
                             finish(acc[t * TILE_W + j + 3], bias_value, n, k, p0 + t, q0 + j + 3)));
            }
        } else {
            [[unroll]] for (uint j = 0; j < TILE_W; ++j)
                if (q0 + j < Q) WRITE1(y1, y_index(n, k, p0 + t, q0 + j), finish(acc[t * TILE_W + j], bias_value, n, k, p0 + t, q0 + j));
        }
#endif
    }
}
