#version 450
// depthwise_backward_filter — partial sums of dw for a depthwise convolution (see depthwise_common.glsl):
// the first half of a deterministic split reduction (splitk_reduce adds the pieces in a fixed order).
//
// dw[k][r][s] = sum over n, p, q of dy[n][k][p][q] * x[n][k / MULT][p*sh + r*dh - ph][q*sw + s*dw - pw].
// The chunk's images * P output rows, each cut into COLUMN_PARTS parts of its strips, are units; the units
// are cut into pieces of units_per_piece (so a device that wants more invocations than rows * filters
// gets them from parts of rows). An invocation reduces one piece for one filter k (4 adjacent filters
// with CHANNELS4) and TAP_ROWS filter rows starting at r0, all their taps in registers. It walks its units
// in order and each in strips of TILE_W columns: the dy
// strip is loaded once, and for every filter row the x segment under it (SEG columns) once, both reused by
// all S taps, so every read runs along a row. With VEC4_Y (NCHW) dy strips, and with VEC4_X x segments,
// load as aligned vec4s.
//
// Specialization constants: 0..20 as in depthwise_common.glsl (TILE_H unused), 23 VEC8_X and 24 VEC8_Y (below), and
//  21 TAP_ROWS          filter rows per invocation (all R unless R*S is large)
//  22 COLUMN_PARTS      parts each output row's strips are cut into (1: whole rows)
// Bindings: 0 x as vec4 (the chunk's window; with VEC8_X as 8-element texels), 1 x as float, 2 dy as vec4
//   (the chunk's window; with VEC8_Y as 8-element texels), 3 dy as float, 4 partial (storage buffer,
//   written): partial[(piece * K + k) * R*S + r*S + s].
// Push constants: x_offset and dy_offset (floats from each binding's start to the chunk's first image),
//   units (images * P * COLUMN_PARTS of the chunk), units_per_piece, then the dispatch's slice
//   [base, base + count) of the invocations.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1) over pieces * ceil(R / TAP_ROWS) * (K / LANE_CHANNELS)
//   invocations, ordered (piece, filter-row block, k): neighbouring invocations walk the same rows.

#extension GL_GOOGLE_include_directive : require
#include "depthwise_common.glsl"

layout(constant_id = 21) const uint TAP_ROWS = 1;
layout(constant_id = 22) const uint COLUMN_PARTS = 1;
// 16-bit texel builds: x rows (VEC8_X) and dy strips (VEC8_Y) read 8 elements a fetch through
// R32G32B32A32_UINT views (host: NCHW, rows and each chunk's start on 8 elements, strips of 8 columns times
// the stride). On lavapipe fp16 took 1.00-1.05x fp32's time with 4 (separable_dw_256). Other builds: false.
layout(constant_id = 23) const bool VEC8_X = false;
layout(constant_id = 24) const bool VEC8_Y = false;

#ifdef FOUR_BINDINGS
// The build for devices that allow few storage buffers per stage (storage buffers only): each operand's two
// views share one binding.
DECLARE_READ4(0, x4)
DECLARE_READ1(0, x1)
DECLARE_READ4(1, dy4)
DECLARE_READ1(1, dy1)
layout(std430, binding = 2) writeonly buffer Partial { float partial[]; };
#else
DECLARE_READ4(0, x4)
DECLARE_READ1(1, x1)
DECLARE_READ4(2, dy4)
DECLARE_READ1(3, dy1)
layout(std430, binding = 4) writeonly buffer Partial { float partial[]; };
#endif

layout(push_constant) uniform Params {
    uint x_offset, dy_offset;
    uint units, units_per_piece;
    uint base, count;
} pc;

const uint SEG = (TILE_W - 1) * STRIDE_W + (S - 1) * DIL_W + 1;  // x columns under one dy strip
const uint SHIFT = VEC8_X ? uint(-int(PAD_W) & 7) : VEC4_X ? MOD4(-int(PAD_W)) : 0;
const uint SEG_LOADED = VEC8_X ? (SHIFT + SEG + 7) / 8 * 8 : VEC4_X ? (SHIFT + SEG + 3) / 4 * 4 : SEG;
const uint TILES_Q = (Q + TILE_W - 1) / TILE_W;
const uint PART_TILES = (TILES_Q + COLUMN_PARTS - 1) / COLUMN_PARTS;  // strips per part
const uint BLOCKS = (R + TAP_ROWS - 1) / TAP_ROWS;
const uint LANES = K / LANE_CHANNELS;
const uint BLOCK_TAPS = TAP_ROWS * S;

void main() {
    if (gl_GlobalInvocationID.x >= pc.count) return;
    uint index = pc.base + gl_GlobalInvocationID.x;
    const uint lane = index % LANES;
    index /= LANES;
    const uint r0 = index % BLOCKS * TAP_ROWS, piece = index / BLOCKS;
    const uint k = lane * LANE_CHANNELS, c = k / MULT;

    VAL acc[BLOCK_TAPS];
    [[unroll]] for (uint i = 0; i < BLOCK_TAPS; ++i) acc[i] = VAL(0.0);
    const uint first = piece * pc.units_per_piece, last = min(pc.units, first + pc.units_per_piece);
    for (uint unit = first; unit < last; ++unit) {
        const uint row = unit / COLUMN_PARTS, part = unit % COLUMN_PARTS;
        const uint n = row / P, p = row % P;
        const uint dy_row = pc.dy_offset + tensor_offset(NHWC, n, k, p, 0, K, P, Q);
        const uint q_end = min(TILES_Q, (part + 1) * PART_TILES) * TILE_W;
        [[dont_unroll]] for (uint q0 = part * PART_TILES * TILE_W; q0 < q_end; q0 += TILE_W) {
            VAL d[TILE_W];  // dy along the strip, 0 past Q
#ifdef HAS_LOAD_SEGMENT8
            if (VEC8_Y)
                LOAD_SEGMENT8(d, TILE_W, dy4, dy_row, int(q0), Q)
            else
#endif
            LOAD_SEGMENT(d, TILE_W, dy4, dy1, dy_row, int(q0), Q, column_stride(NHWC, K), VEC4_Y)
            const int col0 = window_origin(q0, STRIDE_W, PAD_W) - int(SHIFT);  // x column of seg[0]
            [[unroll]] for (uint rr = 0; rr < TAP_ROWS; ++rr) {
                const int ih = tap_input(p, r0 + rr, STRIDE_H, PAD_H, DIL_H);
                if (r0 + rr >= R || !in_range(ih, H)) continue;
                const uint x_row = pc.x_offset + tensor_offset(NHWC, n, c, uint(ih), 0, C, H, W);
                VAL seg[SEG_LOADED];
#ifdef HAS_LOAD_SEGMENT8
                if (VEC8_X)
                    LOAD_SEGMENT8(seg, SEG_LOADED, x4, x_row, col0, W)
                else
#endif
                LOAD_SEGMENT(seg, SEG_LOADED, x4, x1, x_row, col0, W, column_stride(NHWC, C), VEC4_X)
                [[unroll]] for (uint s = 0; s < S; ++s)
                    [[unroll]] for (uint j = 0; j < TILE_W; ++j)
                        acc[rr * S + s] += d[j] * seg[SHIFT + j * STRIDE_W + s * DIL_W];
            }
        }
    }
    [[unroll]] for (uint rr = 0; rr < TAP_ROWS; ++rr) {
        if (r0 + rr >= R) continue;
        [[unroll]] for (uint s = 0; s < S; ++s) {
            const uint tap = (r0 + rr) * S + s;
            [[unroll]] for (uint i = 0; i < LANE_CHANNELS; ++i)
                partial[(piece * K + k + i) * TAPS + tap] = LANE(acc[rr * S + s], i);
        }
    }
}
