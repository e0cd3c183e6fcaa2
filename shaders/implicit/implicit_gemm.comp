#version 450
// implicit_gemm — a convolution pass as a tiled GEMM whose operand loaders compute the lowered matrix's
// addresses on the fly (as CUTLASS's implicit-GEMM iterators do), so no lowered matrix is ever stored.
//
// Per group g (groups of GROUPS), with the reduction index `red` and the column index `col`:
//   PASS 0, forward:          y[n, g*KG+m, p, q]  = sum over red = (c, r, s) of w[g*KG+m, red] * x(n, c, p, q; r, s)
//                             M = KG, columns (n, p, q) over N*P*Q, reduction CG*R*S
//   PASS 1, backward-data:    dx[n, g*CG+m, h, w] = sum over red = (k, r, s) of w[g*KG+k, m; r, s] * dy(n, k; h, w, r, s)
//                             M = CG, columns (n, h, w) over N*H*W, reduction KG*R*S; dy(...) is the output
//                             whose tap (r, s) reads (h, w), 0 where none does (stride, padding)
//   PASS 2, backward-filter:  dw[g*KG+m, col]     = sum over red = (n, p, q) of dy[n, g*KG+m, p, q] * x(n, c, p, q; r, s)
//                             M = KG, columns col = (c, r, s) over CG*R*S, reduction N*P*Q
// where x(n, c, p, q; r, s) is x[n, g*CG+c, p*sh - ph + r*dh, q*sw - pw + s*dw] (0 in the padding). A filter
// tap index runs (c, r, s) in NCHW (OIHW filters) and (r, s, c) in NHWC (OHWI), so it walks the filter's own
// memory order.
//
// A workgroup owns a BM x BN tile (BM = WG_M * TM, BN = WG_N * TN) of one group's product and steps its
// reduction by BK through shared memory (rows padded by one float against bank conflicts), staging with
// consecutive invocations on consecutive addresses of whichever index is contiguous in memory (A_K_FAST,
// B_N_FAST); each invocation then accumulates TM x TN values. Workgroup z is (slice, group): backward-filter
// cuts its long reduction into slices of `piece` (partial products, added in a fixed order by
// splitk_reduce), in rounds [k_begin, k_end) of every slice's next piece where the slices are fewer than the
// loop cap needs (accumulate); a reduction longer than lavapipe's loop cap runs as pieces [k_begin, k_end), in order.
//
// Specialization constants:
//   0 WG_N, 1 WG_M (local_size_x_id, local_size_y_id); 2 TM, 3 TN (build variants fix them: FIXED_TM/TN)
//   4 R, 5 S, 6 STRIDE_H, 7 STRIDE_W, 8 PAD_H, 9 PAD_W, 10 DIL_H, 11 DIL_W, 12 NHWC
//   13 PASS, 14 HAS_BIAS, 15 ACTIVATION, 16 HAS_RESIDUAL (forward's epilogue), 17 BK
//   18 C, 19 H, 20 W, 21 K, 22 P, 23 Q, 24 GROUPS (sizes but the batch, so index divisions fold)
//   25 A_K_FAST, 26 B_N_FAST  staging order
//   27 TENSOR_TYPE, 28 OUT_TYPE  element types (../common/elements.glsl) of what the pass reads and of what
//                     it writes (16-bit builds; products and sums fp32, each written value rounded once)
// Bindings: 0 x, 1 w, 2 dy (read only; what a pass does not read is bound to any buffer), 3 bias, 4 the
//   residual z (may be y's own memory), 5 out: what the pass writes (y, dx, dw, or dw's partial products).
//   Built with FOUR_BINDINGS (the variant for devices that allow 4 storage buffers per stage): 0 x, 1 w,
//   2 dy in the backward passes and the bias in forward (which never reads dy), 3 out; the host has copied
//   the residual z into y, where forward's first piece reads it.
// Push constants: first_x, first_w, first_y, first_bias, first_z, first_out (element 0 of each binding, in its elements),
//   N, col_base (the dispatch's first column: grids past the workgroup-count limit), k_begin, k_end, piece
//   (the reduction this dispatch covers, and each slice's share of it), slice_floats (backward-filter:
//   floats between slices' partial products; 0 writes dw itself), accumulate (add to what the output
//   holds: a later piece), last (apply the activation), z_base (the dispatch's first (slice, group): grids
//   past the workgroup-count limit), alpha, beta, negative_slope.
// The forward epilogue: y = act(alpha * sum + bias + beta * z), the first piece starting from bias + beta*z,
//   the last applying the activation.
// Dispatch grid: (ceil(columns / BN) or fewer, ceil(M / BM), GROUPS * slices).

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#include "../common/tensor_index.glsl"
#include "../common/conv_geometry.glsl"
#include "../common/epilogue.glsl"
#include "../common/elements.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 0) const uint WG_N = 16;
layout(constant_id = 1) const uint WG_M = 8;
#ifdef FIXED_TM
const uint TM = FIXED_TM;
const uint TN = FIXED_TN;
#else
layout(constant_id = 2) const uint TM = 4;
layout(constant_id = 3) const uint TN = 4;
#endif
layout(constant_id = 4) const uint R = 1;
layout(constant_id = 5) const uint S = 1;
layout(constant_id = 6) const uint STRIDE_H = 1;
layout(constant_id = 7) const uint STRIDE_W = 1;
layout(constant_id = 8) const uint PAD_H = 0;
layout(constant_id = 9) const uint PAD_W = 0;
layout(constant_id = 10) const uint DIL_H = 1;
layout(constant_id = 11) const uint DIL_W = 1;
layout(constant_id = 12) const bool NHWC = false;
layout(constant_id = 13) const uint PASS = 0;
layout(constant_id = 14) const bool HAS_BIAS = false;
layout(constant_id = 15) const uint ACTIVATION = 0;
layout(constant_id = 16) const bool HAS_RESIDUAL = false;
layout(constant_id = 17) const uint BK = 16;
layout(constant_id = 18) const uint C = 1;
layout(constant_id = 19) const uint H = 1;
layout(constant_id = 20) const uint W = 1;
layout(constant_id = 21) const uint K = 1;
layout(constant_id = 22) const uint P = 1;
layout(constant_id = 23) const uint Q = 1;
layout(constant_id = 24) const uint GROUPS = 1;
layout(constant_id = 25) const bool A_K_FAST = true;
layout(constant_id = 26) const bool B_N_FAST = true;
layout(constant_id = 27) const uint TENSOR_TYPE = 0;  // x, w, dy, the bias and z (../common/elements.glsl)
layout(constant_id = 28) const uint OUT_TYPE = 0;     // what the pass writes (dw's partial products: fp32)

layout(std430, binding = 0) readonly buffer XBuffer { ELEMENT_WORD x[]; };
layout(std430, binding = 1) readonly buffer WBuffer { ELEMENT_WORD w[]; };
layout(std430, binding = 2) readonly buffer YBuffer { ELEMENT_WORD y[]; };
#ifndef FOUR_BINDINGS
layout(std430, binding = 3) readonly buffer BiasBuffer { ELEMENT_WORD bias[]; };
layout(std430, binding = 4) readonly buffer ResidualBuffer { ELEMENT_WORD residual[]; };
layout(std430, binding = 5) buffer OutBuffer { ELEMENT_WORD out_values[]; };
#define RESIDUAL_AT(i) ELEMENT_AT(residual, TENSOR_TYPE, pc.first_z + (i))
#else
layout(std430, binding = 2) readonly buffer BiasBuffer { ELEMENT_WORD bias[]; };
layout(std430, binding = 3) buffer OutBuffer { ELEMENT_WORD out_values[]; };
#define RESIDUAL_AT(i) ELEMENT_AT(out_values, OUT_TYPE, pc.first_out + (i))
#endif
#define OUT_AT(i) ELEMENT_AT(out_values, OUT_TYPE, i)

layout(push_constant) uniform Params {
    uint first_x, first_w, first_y, first_bias, first_z, first_out;
    uint N, col_base;
    uint k_begin, k_end, piece;
    uint slice_floats;
    uint accumulate, last;
    uint z_base;
    float alpha, beta, negative_slope;
    uint row_base, row_end;  // the rows [row_base, row_end) of M_ROWS this dispatch computes (grid y from row_base)
} pc;

const uint CG = C / GROUPS, KG = K / GROUPS;
const uint RS = R * S, TAPS = CG * RS;  // taps of one filter
const uint BM = WG_M * TM, BN = WG_N * TN;
const uint M_ROWS = PASS == 1 ? CG : KG;
shared float a_tile[BK * (BM + 1)];  // [k][m]
shared float b_tile[BK * (BN + 1)];  // [k][n]

// A filter tap index (within one filter) as (c, r, s), in the filter's memory order.
void tap_coords(uint tap, out uint c, out uint r, out uint s) {
    if (NHWC) {
        c = tap % CG;
        const uint rs = tap / CG;
        r = rs / S, s = rs % S;
    } else {
        c = tap / RS;
        const uint rs = tap % RS;
        r = rs / S, s = rs % S;
    }
}

uint tap_index(uint c, uint r, uint s) {
    return NHWC ? (r * S + s) * CG + c : c * RS + r * S + s;
}

// x(n, c, p, q; r, s) of group g: 0 in the padding.
float x_at(uint g, uint n, uint c, uint p, uint q, uint r, uint s) {
    const int ih = tap_input(p, r, STRIDE_H, PAD_H, DIL_H), iw = tap_input(q, s, STRIDE_W, PAD_W, DIL_W);
    if (!in_range(ih, H) || !in_range(iw, W)) return 0.0;
    return ELEMENT_AT(x, TENSOR_TYPE, pc.first_x + tensor_offset(NHWC, n, g * CG + c, uint(ih), uint(iw), C, H, W));
}

uint columns() {
    return PASS == 0 ? pc.N * P * Q : PASS == 1 ? pc.N * H * W : TAPS;
}

float load_a(uint g, uint m, uint red) {
    if (PASS == 0) return ELEMENT_AT(w, TENSOR_TYPE, pc.first_w + (g * KG + m) * TAPS + red);
    if (PASS == 1) {
        const uint k = red / RS, rs = red % RS;
        return ELEMENT_AT(w, TENSOR_TYPE, pc.first_w + (g * KG + k) * TAPS + tap_index(m, rs / S, rs % S));
    }
    const uint n = red / (P * Q), pq = red % (P * Q);
    return ELEMENT_AT(y, TENSOR_TYPE, pc.first_y + tensor_offset(NHWC, n, g * KG + m, pq / Q, pq % Q, K, P, Q));
}

float load_b(uint g, uint red, uint col) {
    if (PASS == 0) {
        uint c, r, s;
        tap_coords(red, c, r, s);
        const uint n = col / (P * Q), pq = col % (P * Q);
        return x_at(g, n, c, pq / Q, pq % Q, r, s);
    }
    if (PASS == 1) {
        const uint k = red / RS, rs = red % RS, r = rs / S, s = rs % S;
        const uint n = col / (H * W), hw = col % (H * W), h = hw / W, wc = hw % W;
        uint p, q;
        if (!tap_output(h, r, STRIDE_H, PAD_H, DIL_H, p) || p >= P) return 0.0;
        if (!tap_output(wc, s, STRIDE_W, PAD_W, DIL_W, q) || q >= Q) return 0.0;
        return ELEMENT_AT(y, TENSOR_TYPE, pc.first_y + tensor_offset(NHWC, n, g * KG + k, p, q, K, P, Q));
    }
    uint c, r, s;
    tap_coords(col, c, r, s);
    const uint n = red / (P * Q), pq = red % (P * Q);
    return x_at(g, n, c, pq / Q, pq % Q, r, s);
}

void store(uint g, uint slice, uint m, uint col, float value) {
    if (PASS == 0) {
        const uint n = col / (P * Q), pq = col % (P * Q);
        const uint index = tensor_offset(NHWC, n, g * KG + m, pq / Q, pq % Q, K, P, Q);
        float start;
        if (pc.accumulate != 0) {
            start = OUT_AT(pc.first_out + index);
        } else {
            start = HAS_BIAS ? ELEMENT_AT(bias, TENSOR_TYPE, pc.first_bias + g * KG + m) : 0.0;
            if (HAS_RESIDUAL) start += pc.beta * RESIDUAL_AT(index);
        }
        const float result = start + pc.alpha * value;
        STORE_ELEMENT(out_values, OUT_TYPE, pc.first_out + index,
                      pc.last != 0 ? activate(ACTIVATION, result, pc.negative_slope) : result);
    } else if (PASS == 1) {
        const uint n = col / (H * W), hw = col % (H * W);
        const uint index = pc.first_out + tensor_offset(NHWC, n, g * CG + m, hw / W, hw % W, C, H, W);
        STORE_ELEMENT(out_values, OUT_TYPE, index, pc.accumulate != 0 ? OUT_AT(index) + value : value);
    } else {
        const uint index = pc.first_out + slice * pc.slice_floats + (g * KG + m) * TAPS + col;
        STORE_ELEMENT(out_values, OUT_TYPE, index, pc.accumulate != 0 ? OUT_AT(index) + value : value);
    }
}

void main() {
    const uint groups_z = pc.z_base + gl_WorkGroupID.z;
    const uint g = groups_z % GROUPS, slice = groups_z / GROUPS;
    const uint k_first = pc.k_begin + slice * pc.piece;
    const uint k_last = min(pc.k_end, k_first + pc.piece);
    const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    const uint tid = ty * WG_N + tx, threads = WG_N * WG_M;
    const uint tile_m = pc.row_base + gl_WorkGroupID.y * BM, tile_n = pc.col_base + gl_WorkGroupID.x * BN;
    const uint cols = columns();

    float acc[TM * TN];
    [[unroll]] for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;

    for (uint k0 = k_first; k0 < k_last; k0 += BK) {
        for (uint e = tid; e < BK * BM; e += threads) {
            const uint kk = A_K_FAST ? e % BK : e / BM;
            const uint mm = A_K_FAST ? e / BK : e % BM;
            const uint m = tile_m + mm, k = k0 + kk;
            a_tile[kk * (BM + 1) + mm] = (m < pc.row_end && k < k_last) ? load_a(g, m, k) : 0.0;
        }
        for (uint e = tid; e < BK * BN; e += threads) {
            const uint kk = B_N_FAST ? e / BN : e % BK;
            const uint nn = B_N_FAST ? e % BN : e / BK;
            const uint n = tile_n + nn, k = k0 + kk;
            b_tile[kk * (BN + 1) + nn] = (n < cols && k < k_last) ? load_b(g, k, n) : 0.0;
        }
        barrier();
        for (uint kk = 0; kk < BK; ++kk) {
            float a[TM], b[TN];
            [[unroll]] for (uint i = 0; i < TM; ++i) a[i] = a_tile[kk * (BM + 1) + ty + i * WG_M];
            [[unroll]] for (uint j = 0; j < TN; ++j) b[j] = b_tile[kk * (BN + 1) + tx + j * WG_N];
            [[unroll]] for (uint i = 0; i < TM; ++i)
                [[unroll]] for (uint j = 0; j < TN; ++j) acc[i * TN + j] = fma(a[i], b[j], acc[i * TN + j]);
        }
        barrier();
    }

    [[unroll]] for (uint i = 0; i < TM; ++i) {
        const uint m = tile_m + ty + i * WG_M;
        if (m >= pc.row_end) continue;
        [[unroll]] for (uint j = 0; j < TN; ++j) {
            const uint n = tile_n + tx + j * WG_N;
            if (n < cols) store(g, slice, m, n, acc[i * TN + j]);
        }
    }
}
