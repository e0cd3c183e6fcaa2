#version 450
// depthwise_backward_data — dx from dy and w for a depthwise convolution (see depthwise_common.glsl), as a
// gather with each invocation's dy window in registers: no atomics, no zero-dilated dy.
//
// dx[n][c][h][x] = sum over j < MULT, and the taps (r, s) with h + ph - r*dh = p*sh and x + pw - s*dw = q*sw
// (0 <= p < P, 0 <= q < Q), of dy[n][c*MULT + j][p][q] * w[c*MULT + j][r][s].
// An invocation computes a TILE_H x TILE_W block of dx of one channel c (4 adjacent channels with CHANNELS4).
// The block's first row and column are multiples of the strides (TILE_H % sh == 0, TILE_W % sw == 0), so
// which taps reach which dx value, and which dy row and column they read, is the same for every block and
// folds into constants: e = floor((t + ph - r*dh) / sh) is the dy row relative to h0 / sh, contributing only
// where the division is exact (likewise along W). The invocation walks the ROWS_DY dy rows its block reads,
// loads each row segment (DSEG dy columns) once into registers, and adds it into every dx value of the
// block that it reaches. With VEC4_Y (NCHW, TILE_W % (4*sw) == 0) segments load as aligned vec4s, the
// first column SHIFT floats into the first vec4; with VEC4_X the block is stored as vec4s.
//
// With STREAM_ROWS (below) the block is instead a strip of TILE_W columns and TILE_H rows whose dy rows are
// walked top to bottom, each loaded once.
//
// Specialization constants: 0..20 as in depthwise_common.glsl (TILE_W, TILE_H count dx values), 21 VEC8_Y,
//   22 STREAM_ROWS (both below).
// Bindings: 0 dy as vec4 (the chunk's window; with VEC8_Y as 8-element texels), 1 dy as float (the same window), 2 w (float),
//   3 dx (the chunk's window; storage buffer, written, and read with accumulate).
// Push constants: dy_offset and dx_offset (floats from each binding's start to the chunk's first image),
//   w_offset (floats from binding 2's start to the filter's element 0), accumulate (1: add to what dx holds,
//   a transposed convolution's bias, rounding each value once), then the dispatch's slice [base, base + count)
//   of the invocations.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1) over images * (C / LANE_CHANNELS) * ceil(H / TILE_H) *
//   ceil(W / TILE_W) invocations, ordered (n, c, row block, column block) in NCHW and
//   (n, row block, column block, c) in NHWC.

#extension GL_GOOGLE_include_directive : require
#include "depthwise_common.glsl"

DECLARE_READ4(0, dy4)
DECLARE_READ1(1, dy1)
DECLARE_READ1(2, w1)
DECLARE_OUTPUT4(3, dx4, )
DECLARE_OUTPUT1(3, dx1, )

layout(push_constant) uniform Params {
    uint dy_offset, dx_offset;
    uint w_offset, accumulate;
    uint base, count;
} pc;

// 16-bit texel builds: dy's binding 0 viewed as R32G32B32A32_UINT, 8 elements a fetch (host: NCHW, Q % 8 == 0,
// TILE_W % (8·sw) == 0, dy's chunk on an 8-element boundary), half the fetches of the 4-element view. On
// lavapipe fp16 took 1.04-1.07x fp32's time with 4 (separable_dw_256), 1.02-1.03x with 8. Other builds: false.
layout(constant_id = 21) const bool VEC8_Y = false;

// Streamed rows (host: NCHW on a CPU device): the invocation walks the ROWS_DY dy rows its TILE_H dx rows
// read, top to bottom, each loaded (and a 16-bit one widened) once instead of once per block of rows, and
// adds each into a ring of the LIVE dx rows its taps reach. After a dy row, the STRIDE_H ring rows no later
// dy row reaches are complete: they are stored and the ring moves on. On lavapipe a block of 1 x 16 read
// every dy value 3 times (3x3 filters), which made the widening of fp16 cost more than its halved traffic
// saved. Only with MULT == 1 (the ring holds one filter's rows); otherwise the blocks.
layout(constant_id = 22) const bool STREAM_ROWS = false;
const bool STREAM = STREAM_ROWS && MULT == 1;

// dy columns (relative to x0 / sw) the block reads: from E_MIN_W (last tap, first column) to E_MAX_W.
const int E_MIN_W = FLOOR_DIV(int(PAD_W) - int((S - 1) * DIL_W), int(STRIDE_W));
const int E_MAX_W = FLOOR_DIV(int(TILE_W - 1 + PAD_W), int(STRIDE_W));
const uint DSEG = uint(E_MAX_W - E_MIN_W + 1);
const uint SHIFT = VEC8_Y ? uint(E_MIN_W & 7) : VEC4_Y ? MOD4(E_MIN_W) : 0;
const uint DSEG_LOADED = VEC8_Y ? (SHIFT + DSEG + 7) / 8 * 8 : VEC4_Y ? (SHIFT + DSEG + 3) / 4 * 4 : DSEG;
// dy rows (relative to h0 / sh) the block reads.
const int E_MIN_H = FLOOR_DIV(int(PAD_H) - int((R - 1) * DIL_H), int(STRIDE_H));
const int E_MAX_H = FLOOR_DIV(int(TILE_H - 1 + PAD_H), int(STRIDE_H));
const uint ROWS_DY = uint(E_MAX_H - E_MIN_H + 1);
const uint REACH_H = (R - 1) * DIL_H + 1;                   // dx rows one dy row's taps reach
const uint LIVE = REACH_H > STRIDE_H ? REACH_H : STRIDE_H;  // ring rows
// The blocks' rows and dy rows: one in a streamed build (whose TILE_H may be thousands of rows), so that its
// dead blocks code stays small whatever a driver unrolls before removing it.
const uint BLOCK_H = STREAM ? 1u : TILE_H;
const uint BLOCK_ROWS_DY = STREAM ? 1u : ROWS_DY;
// dx row (relative to h0) of ring row 0 while dy row i = 0 (E_MIN_H: no earlier dy row reaches row 0).
const int FIRST_BASE = E_MIN_H * int(STRIDE_H) - int(PAD_H);
const uint TILES_W = (W + TILE_W - 1) / TILE_W;
const uint TILES_H = (H + TILE_H - 1) / TILE_H;
const uint LANES = C / LANE_CHANNELS;

VAL filter_tap(uint k, uint tap) {
#ifdef CHANNELS4
    const uint w = pc.w_offset + k * TAPS + tap;
    return vec4(READ1(w1, w), READ1(w1, w + TAPS), READ1(w1, w + 2 * TAPS), READ1(w1, w + 3 * TAPS));
#else
    return READ1(w1, pc.w_offset + k * TAPS + tap);
#endif
}

uint dx_index(uint n, uint c, uint h, uint x) {
    return pc.dx_offset + tensor_offset(NHWC, n, c, h, x, C, H, W);
}

// dx value i, and the four from i (a vec4 store's), as it stands: what the sums add to with accumulate. (Read
// only behind a branch on accumulate: a select would have lavapipe read, and a 16-bit build widen, every value.)
float dx_at(uint i) {
    return OUTPUT_AT(dx1, i);
}
vec4 dx_at4(uint i) {
    return vec4(dx_at(i), dx_at(i + 1), dx_at(i + 2), dx_at(i + 3));
}

// Stores the TILE_W values of dx row h from acc[ROW0 ..] (adding what dx holds with accumulate), as vec4s
// with VEC4_X. (A macro: arrays are not passed to functions, see depthwise_forward.)
#ifdef CHANNELS4
#define STORE_DX_ROW(ROW0, h)                                                    \
    [[unroll]] for (uint x_ = 0; x_ < TILE_W; ++x_)                              \
        if (x0 + x_ < W) {                                                       \
            const uint i_ = dx_index(n, c, (h), x0 + x_);                        \
            vec4 value_ = acc[(ROW0) + x_];                                      \
            if (pc.accumulate != 0) value_ += dx_at4(i_);                        \
            WRITE4(dx4, i_ >> 2, value_);                                        \
        }
#else
#define STORE_DX_ROW(ROW0, h)                                                                              \
    if (VEC4_X) {                                                                                          \
        [[unroll]] for (uint x_ = 0; x_ < TILE_W; x_ += 4) {                                               \
            if (x0 + x_ < W) {                                                                             \
                const uint i_ = dx_index(n, c, (h), x0 + x_);                                              \
                vec4 value_ = vec4(acc[(ROW0) + x_], acc[(ROW0) + x_ + 1], acc[(ROW0) + x_ + 2], acc[(ROW0) + x_ + 3]); \
                if (pc.accumulate != 0) value_ += dx_at4(i_);                                              \
                WRITE4(dx4, i_ >> 2, value_);                                                              \
            }                                                                                              \
        }                                                                                                  \
    } else {                                                                                               \
        [[unroll]] for (uint x_ = 0; x_ < TILE_W; ++x_)                                                    \
            if (x0 + x_ < W) {                                                                             \
                const uint i_ = dx_index(n, c, (h), x0 + x_);                                              \
                float value_ = acc[(ROW0) + x_];                                                           \
                if (pc.accumulate != 0) value_ += dx_at(i_);                                               \
                WRITE1(dx1, i_, value_);                                                                   \
            }                                                                                              \
    }
#endif

#ifdef HAS_LOAD_SEGMENT8
#define LOAD_DY_ROW(seg, row_base)                                                                            \
    if (VEC8_Y)                                                                                               \
        LOAD_SEGMENT8(seg, DSEG_LOADED, dy4, row_base, col0, Q)                                               \
    else                                                                                                      \
        LOAD_SEGMENT(seg, DSEG_LOADED, dy4, dy1, row_base, col0, Q, column_stride(NHWC, K), VEC4_Y)
#else
#define LOAD_DY_ROW(seg, row_base) LOAD_SEGMENT(seg, DSEG_LOADED, dy4, dy1, row_base, col0, Q, column_stride(NHWC, K), VEC4_Y)
#endif

// Adds dy row segment `seg` into ring (or block) row ROW of acc through filter row r: every (column, tap)
// pair whose division by the stride is exact.
#define ADD_DY_ROW(ROW, r)                                                                              \
    [[unroll]] for (uint x_ = 0; x_ < TILE_W; ++x_) {                                                   \
        [[unroll]] for (uint s_ = 0; s_ < S; ++s_) {                                                    \
            const int tw_ = int(x_ + PAD_W) - int(s_ * DIL_W);                                          \
            if (uint(tw_ + int(STRIDE_W * (S - 1) * DIL_W)) % STRIDE_W != 0) continue;                 \
            const uint e_ = uint(FLOOR_DIV(tw_, int(STRIDE_W)) - E_MIN_W) + SHIFT;                      \
            acc[(ROW) * TILE_W + x_] += taps[(r) * S + s_] * seg[e_];                                    \
        }                                                                                               \
    }


void main() {
    if (gl_GlobalInvocationID.x >= pc.count) return;
    uint index = pc.base + gl_GlobalInvocationID.x;
    uint n, lane, ht, wt;
    tensor_coords(NHWC, index, LANES, TILES_H, TILES_W, n, lane, ht, wt);  // blocks ordered like dx's values
    const uint c = lane * LANE_CHANNELS;
    const uint h0 = ht * TILE_H, x0 = wt * TILE_W;
    const int p_base = int(h0 / STRIDE_H) + E_MIN_H;             // dy row of i = 0
    const int col0 = int(x0 / STRIDE_W) + E_MIN_W - int(SHIFT);  // dy column of seg[0]

    if (STREAM) {
        VAL taps[TAPS];
        [[unroll]] for (uint tap = 0; tap < TAPS; ++tap) taps[tap] = filter_tap(c, tap);
        VAL acc[LIVE * TILE_W];
        [[unroll]] for (uint i = 0; i < LIVE * TILE_W; ++i) acc[i] = VAL(0.0);
        [[dont_unroll]] for (uint i = 0; i < ROWS_DY; ++i) {
            const int p = p_base + int(i);
            if (in_range(p, P)) {
                const uint row_base = pc.dy_offset + tensor_offset(NHWC, n, c, uint(p), 0, K, P, Q);
                VAL seg[DSEG_LOADED];
                LOAD_DY_ROW(seg, row_base)
                [[unroll]] for (uint r = 0; r < R; ++r) ADD_DY_ROW(r * DIL_H, r)
            }
            // Ring rows 0 .. STRIDE_H-1 are complete: stored where they are the block's, then the ring moves.
            [[unroll]] for (uint j = 0; j < STRIDE_H; ++j) {
                const int t = FIRST_BASE + int(i * STRIDE_H + j);
                if (t >= 0 && t < int(TILE_H) && h0 + uint(t) < H) STORE_DX_ROW(j * TILE_W, h0 + uint(t))
            }
            [[unroll]] for (uint j = 0; j < LIVE * TILE_W; ++j)
                acc[j] = j + STRIDE_H * TILE_W < LIVE * TILE_W ? acc[min(j + STRIDE_H * TILE_W, LIVE * TILE_W - 1)] : VAL(0.0);
        }
        return;
    }

    VAL acc[BLOCK_H * TILE_W];
    [[unroll]] for (uint i = 0; i < BLOCK_H * TILE_W; ++i) acc[i] = VAL(0.0);
    for (uint j = 0; j < MULT; ++j) {
        const uint k = c * MULT + j;
        VAL taps[TAPS];
        [[unroll]] for (uint tap = 0; tap < TAPS; ++tap) taps[tap] = filter_tap(k, tap);
        [[unroll]] for (uint i = 0; i < BLOCK_ROWS_DY; ++i) {
            const int p = p_base + int(i);
            if (!in_range(p, P)) continue;
            const uint row_base = pc.dy_offset + tensor_offset(NHWC, n, k, uint(p), 0, K, P, Q);
            VAL seg[DSEG_LOADED];
            LOAD_DY_ROW(seg, row_base)
            // Every dx row t of the block that dy row i reaches, through the one filter row r with
            // t + ph - r*dh = (E_MIN_H + i) * sh.
            [[unroll]] for (uint t = 0; t < BLOCK_H; ++t) {
                const int rd = int(t + PAD_H) - (E_MIN_H + int(i)) * int(STRIDE_H);  // r * dh
                if (rd < 0 || uint(rd) % DIL_H != 0 || uint(rd) / DIL_H >= R) continue;
                ADD_DY_ROW(t, uint(rd) / DIL_H)
            }
        }
    }
    [[unroll]] for (uint t = 0; t < BLOCK_H; ++t) {
        if (h0 + t >= H) continue;
        STORE_DX_ROW(t * TILE_W, h0 + t)
    }
}
