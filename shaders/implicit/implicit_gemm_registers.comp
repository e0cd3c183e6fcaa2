#version 450
// implicit_gemm_registers — the implicit-GEMM forward and backward-filter convolution (see implicit_gemm.comp
// for the mapping) with register blocks and no shared memory, for CPU devices, where every load costs and
// shared memory buys nothing (as gemm_registers is to gemm_shared).
//
// PASS 0, forward, per group g: y[n, g*KG+m, p, q] = sum over taps t = (c, r, s) of w[g*KG+m, t] *
// x(n, g*CG+c, p, q; r, s). Each invocation owns TM filters x TN output positions. What a column needs is
// worked out once, before the reduction: its image, and the input row and column its window starts at.
// Each step of 4 taps then costs the taps' (c, r, s) (divisions by specialization constants), TM x 4
// filter loads along the filter's own order, TN x 4 input loads (zero in the padding) and TM x TN x 4
// multiply-adds.
// PASS 2, backward-filter: dw[g*KG+m, t] = sum over positions (n, p, q) of dy[n, g*KG+m, p, q] *
// x(n, g*CG+c, p, q; r, s). Each invocation owns TM filters x TN taps, their (c, r, s) worked out once; each
// step of 4 positions costs their (n, p, q), TM x 4 dy loads and TN x 4 input loads. Workgroup z is (slice,
// group): slices of `piece` positions write partial products slice_floats apart (splitk_reduce adds them).
//
// Specialization constants:
//   0 WG_N, 1 WG_M (local_size_x_id, local_size_y_id); 2 TM, 3 TN (multiples of 4)
//   4 R, 5 S, 6 STRIDE_H, 7 STRIDE_W, 8 PAD_H, 9 PAD_W, 10 DIL_H, 11 DIL_W, 12 NHWC
//   13 HAS_BIAS, 14 ACTIVATION, 15 HAS_RESIDUAL (the epilogue)
//   16 C, 17 H, 18 W, 19 K, 20 P, 21 Q, 22 GROUPS
//   24 PASS            0 forward, 2 backward-filter
//   23 W_VEC4          a filter's taps are whole aligned vec4s (C/G*R*S % 4 == 0, w's element 0 on a
//                      4-float boundary): a step's 4 taps of a filter load as one vec4 (binding 5)
//   25 X_VEC4          NHWC with C and C/G multiples of 4 and x's element 0 on a 4-float boundary: 4 taps
//                      that are 4 consecutive channels of one (r, s) load as one vec4 of x (binding 6).
//                      Forward: a step's 4 taps of a column; backward-filter: 4 of an invocation's taps
//   26 DY_VEC4         backward-filter, NHWC with K and K/G multiples of 4 and dy's element 0 on a 4-float
//                      boundary: 4 of an invocation's filters at one position load as one vec4 of dy
//                      (binding 5)
// Without them every tap of x is its own load: in NCHW a step's taps lie H*W or a row apart.
//   27 UNPADDED        every window lies inside the image (no pad reaches a window): forward skips the
//                      bounds checks
//   28 TENSOR_TYPE, 29 OUT_TYPE  element types (../common/elements.glsl) of what the pass reads and of what it
//                      writes; the 16-bit builds (storage buffers, ELEMENTS_16 or ELEMENTS_PACKED) read the
//                      vec4 views from the scalar bindings
// Bindings: 0 x, 1 w (backward-filter: dy) (storage buffers, or with ACCESS_UNIFORM_TEXEL uniform texel
//   buffers of r32f: the cheaper load path on lavapipe), 2 bias, 3 the residual z (read only; any buffer
//   where unused; z may be y's own memory), 4 what the pass writes: y, dw or dw's partial products, 5 binding
//   1 again as vec4s (rgba32f with ACCESS_UNIFORM_TEXEL; read with W_VEC4 or DY_VEC4), 6 x again as vec4s
//   (read with X_VEC4).
// Push constants: first_x, first_w, first_bias, first_z, first_y (element 0 of each binding, in its elements), N,
//   col_base (the dispatch's first column), k_begin, k_end (the reduction this dispatch covers), accumulate
//   (add to the output: a later piece), last (apply the activation), alpha, beta, negative_slope, piece
//   (backward-filter: each slice's share of the reduction), slice_floats (floats between slices' partial
//   products), z_base (the dispatch's first (slice, group): grids past the workgroup-count limit).
// The epilogue: y = act(alpha * sum + bias + beta * z), the first piece starting from bias + beta * z.
// Dispatch grid: (ceil(columns / (WG_N * TN)) or fewer, ceil(K/G / (WG_M * TM)), GROUPS * slices).

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : enable
#include "../common/tensor_index.glsl"
#include "../common/conv_geometry.glsl"
#include "../common/epilogue.glsl"
#include "../common/elements.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint TM = 8;
layout(constant_id = 3) const uint TN = 8;
layout(constant_id = 4) const uint R = 1;
layout(constant_id = 5) const uint S = 1;
layout(constant_id = 6) const uint STRIDE_H = 1;
layout(constant_id = 7) const uint STRIDE_W = 1;
layout(constant_id = 8) const uint PAD_H = 0;
layout(constant_id = 9) const uint PAD_W = 0;
layout(constant_id = 10) const uint DIL_H = 1;
layout(constant_id = 11) const uint DIL_W = 1;
layout(constant_id = 12) const bool NHWC = false;
layout(constant_id = 13) const bool HAS_BIAS = false;
layout(constant_id = 14) const uint ACTIVATION = 0;
layout(constant_id = 15) const bool HAS_RESIDUAL = false;
layout(constant_id = 16) const uint C = 1;
layout(constant_id = 17) const uint H = 1;
layout(constant_id = 18) const uint W = 1;
layout(constant_id = 19) const uint K = 1;
layout(constant_id = 20) const uint P = 1;
layout(constant_id = 21) const uint Q = 1;
layout(constant_id = 22) const uint GROUPS = 1;
layout(constant_id = 23) const bool W_VEC4 = false;
layout(constant_id = 24) const uint PASS = 0;
layout(constant_id = 25) const bool X_VEC4 = false;
layout(constant_id = 26) const bool DY_VEC4 = false;
layout(constant_id = 27) const bool UNPADDED = false;
layout(constant_id = 28) const uint TENSOR_TYPE = 0;  // x, w, dy, the bias and z (16-bit builds)
layout(constant_id = 29) const uint OUT_TYPE = 0;     // y, dw or dw's partial products

#ifdef ACCESS_UNIFORM_TEXEL
layout(binding = 0) uniform samplerBuffer x_texels;
layout(binding = 1) uniform samplerBuffer w_texels;
layout(binding = 5) uniform samplerBuffer w4_texels;
layout(binding = 6) uniform samplerBuffer x4_texels;
#define LOAD_X(i) texelFetch(x_texels, int(i)).x
#define LOAD_W(i) texelFetch(w_texels, int(i)).x
#define LOAD_W4(i) texelFetch(w4_texels, int(i))
#define LOAD_X4(i) texelFetch(x4_texels, int(i))
#elif defined(ELEMENTS_16) || defined(ELEMENTS_PACKED)
// (The vec4 views are quads of the scalar views' bindings, the same memory.)
layout(std430, binding = 0) readonly buffer XBuffer { ELEMENT_WORD x[]; };
layout(std430, binding = 0) readonly buffer XQuads { ELEMENT_QUAD x4[]; };
layout(std430, binding = 1) readonly buffer WBuffer { ELEMENT_WORD w[]; };
layout(std430, binding = 1) readonly buffer WQuads { ELEMENT_QUAD w4[]; };
#define LOAD_X(i) ELEMENT_AT(x, TENSOR_TYPE, i)
#define LOAD_W(i) ELEMENT_AT(w, TENSOR_TYPE, i)
#define LOAD_W4(i) QUAD_AT(w4, TENSOR_TYPE, i)
#define LOAD_X4(i) QUAD_AT(x4, TENSOR_TYPE, i)
#else
layout(std430, binding = 0) readonly buffer XBuffer { float x[]; };
layout(std430, binding = 1) readonly buffer WBuffer { float w[]; };
layout(std430, binding = 5) readonly buffer W4Buffer { vec4 w4[]; };
layout(std430, binding = 6) readonly buffer X4Buffer { vec4 x4[]; };
#define LOAD_X(i) x[i]
#define LOAD_W(i) w[i]
#define LOAD_W4(i) w4[i]
#define LOAD_X4(i) x4[i]
#endif
layout(std430, binding = 2) readonly buffer BiasBuffer { ELEMENT_WORD bias[]; };
layout(std430, binding = 3) readonly buffer ResidualBuffer { ELEMENT_WORD residual[]; };
layout(std430, binding = 4) buffer YBuffer { ELEMENT_WORD y[]; };

layout(push_constant) uniform Params {
    uint first_x, first_w, first_bias, first_z, first_y;
    uint N, col_base;
    uint k_begin, k_end;
    uint accumulate, last;
    float alpha, beta, negative_slope;
    uint piece, slice_floats;
    uint z_base;
    uint row_base, row_end;  // backward-filter: the filters [row_base, row_end) this dispatch computes
} pc;

const uint CG = C / GROUPS, KG = K / GROUPS;
const uint RS = R * S, TAPS = CG * RS;

void forward_main() {
    const uint g = pc.z_base + gl_WorkGroupID.z;
    const uint n0 = pc.col_base + gl_GlobalInvocationID.x * TN;
    const uint m0 = gl_GlobalInvocationID.y * TM;
    const uint columns = pc.N * P * Q;
    // Rows and columns past the edge work on the last valid one (in bounds; dropped at the store).
    uint w_row[TM];
    [[unroll]] for (uint i = 0; i < TM; ++i) w_row[i] = pc.first_w + (g * KG + min(m0 + i, KG - 1)) * TAPS;
    int window[TN];  // where the column's window starts, as an element of x (in the padding: outside its row)
    int row0[TN], col0[TN];  // where the column's window starts (may lie in the padding)
    [[unroll]] for (uint j = 0; j < TN; ++j) {
        const uint col = min(n0 + j, columns - 1);
        const uint n = col / (P * Q), pq = col % (P * Q);
        row0[j] = window_origin(pq / Q, STRIDE_H, PAD_H);
        col0[j] = window_origin(pq % Q, STRIDE_W, PAD_W);
        window[j] = int(pc.first_x + tensor_offset(NHWC, n, g * CG, 0, 0, C, H, W)) +
                    (row0[j] * int(W) + col0[j]) * int(column_stride(NHWC, C));
    }

    vec4 acc[TM * TN / 4];
    [[unroll]] for (uint i = 0; i < TM * TN / 4; ++i) acc[i] = vec4(0.0);
    for (uint k0 = pc.k_begin; k0 < pc.k_end; k0 += 4) {
        vec4 a[TM], b[TN];
        // A piece starts on a multiple of 4 taps, so with W_VEC4 a step's taps are one vec4 of each filter.
        if (W_VEC4) [[unroll]] for (uint i = 0; i < TM; ++i) a[i] = LOAD_W4((w_row[i] + k0) >> 2);
        if (X_VEC4) {
            // The step's taps are channels c..c+3 of one (r, s) (a piece is whole steps; C/G % 4 == 0).
            const uint rs = k0 / CG, c = k0 % CG;
            const uint dh = (rs / S) * DIL_H, dw = (rs % S) * DIL_W;
            const int tap_offset = int(c + (dh * W + dw) * C);
            if (!W_VEC4)
                [[unroll]] for (uint i = 0; i < TM; ++i)
                    [[unroll]] for (uint kk = 0; kk < 4; ++kk) a[i][kk] = LOAD_W(w_row[i] + k0 + kk);
            [[unroll]] for (uint j = 0; j < TN; ++j) {
                const bool valid = UNPADDED || (in_range(row0[j] + int(dh), H) && in_range(col0[j] + int(dw), W));
                b[j] = valid ? LOAD_X4(uint(window[j] + tap_offset) >> 2) : vec4(0.0);
            }
        } else [[unroll]] for (uint kk = 0; kk < 4; ++kk) {
            const uint t = k0 + kk;
            const bool inside = t < pc.k_end;
            const uint tap = inside ? t : pc.k_begin;
            uint c, rs;
            if (NHWC) {
                c = tap % CG, rs = tap / CG;
            } else {
                c = tap / RS, rs = tap % RS;
            }
            const uint dh = (rs / S) * DIL_H, dw = (rs % S) * DIL_W;
            // The tap's distance from the window's start, the same for every column.
            const int tap_offset = int(c * channel_stride(NHWC, H, W) + (dh * W + dw) * column_stride(NHWC, C));
            if (!W_VEC4) [[unroll]] for (uint i = 0; i < TM; ++i) a[i][kk] = inside ? LOAD_W(w_row[i] + tap) : 0.0;
            [[unroll]] for (uint j = 0; j < TN; ++j) {
                // Without padding every window lies inside the image: only the reduction's end is checked.
                const bool valid = inside && (UNPADDED || (in_range(row0[j] + int(dh), H) && in_range(col0[j] + int(dw), W)));
                b[j][kk] = valid ? LOAD_X(uint(window[j] + tap_offset)) : 0.0;
            }
        }
        [[unroll]] for (uint i = 0; i < TM; ++i)
            [[unroll]] for (uint j = 0; j < TN; j += 4)
                acc[(i * TN + j) / 4] += vec4(dot(a[i], b[j]), dot(a[i], b[j + 1]), dot(a[i], b[j + 2]),
                                              dot(a[i], b[j + 3]));
    }

    [[unroll]] for (uint i = 0; i < TM; ++i) {
        const uint m = m0 + i;
        if (m >= KG) break;
        [[unroll]] for (uint j = 0; j < TN; ++j) {
            const uint col = n0 + j;
            if (col >= columns) break;
            const uint n = col / (P * Q), pq = col % (P * Q);
            const uint index = tensor_offset(NHWC, n, g * KG + m, pq / Q, pq % Q, K, P, Q);
            float start;
            if (pc.accumulate != 0) {
                start = ELEMENT_AT(y, OUT_TYPE, pc.first_y + index);
            } else {
                start = HAS_BIAS ? ELEMENT_AT(bias, TENSOR_TYPE, pc.first_bias + g * KG + m) : 0.0;
                if (HAS_RESIDUAL) start += pc.beta * ELEMENT_AT(residual, TENSOR_TYPE, pc.first_z + index);
            }
            const float result = start + pc.alpha * acc[(i * TN + j) / 4][j % 4];
            STORE_ELEMENT(y, OUT_TYPE, pc.first_y + index,
                          pc.last != 0 ? activate(ACTIVATION, result, pc.negative_slope) : result);
        }
    }
}

void filter_main() {
    const uint z = pc.z_base + gl_WorkGroupID.z;
    const uint g = z % GROUPS, slice = z / GROUPS;
    const uint first = pc.k_begin + slice * pc.piece, last = min(pc.k_end, first + pc.piece);
    const uint t0 = pc.col_base + gl_GlobalInvocationID.x * TN;
    const uint m0 = pc.row_base + gl_GlobalInvocationID.y * TM;
    // Taps past the edge work on the last valid one (dropped at the store).
    uint channel[TN];  // the tap's input channel, as an offset within an image
    uint tap_h[TN], tap_w[TN];  // r * dilation, s * dilation
    [[unroll]] for (uint j = 0; j < TN; ++j) {
        const uint tap = min(t0 + j, TAPS - 1);
        uint c, rs;
        if (NHWC) {
            c = tap % CG, rs = tap / CG;
        } else {
            c = tap / RS, rs = tap % RS;
        }
        channel[j] = (g * CG + c) * channel_stride(NHWC, H, W);
        tap_h[j] = (rs / S) * DIL_H, tap_w[j] = (rs % S) * DIL_W;
    }
    uint dy_channel[TM];
    [[unroll]] for (uint i = 0; i < TM; ++i) dy_channel[i] = (g * KG + min(m0 + i, KG - 1)) * channel_stride(NHWC, P, Q);
    // With DY_VEC4 (X_VEC4) rows (taps) past the edge read the last whole vec4 instead: K/G (TAPS) % 4 == 0.
    uint dy_channel4[TM / 4], channel4[TN / 4], tap_h4[TN / 4], tap_w4[TN / 4];
    [[unroll]] for (uint i = 0; i < TM; i += 4) dy_channel4[i / 4] = g * KG + min(m0 + i, KG - 4);
    [[unroll]] for (uint j = 0; j < TN; j += 4) {
        const uint tap = min(t0 + j, TAPS - 4), rs = tap / CG;
        channel4[j / 4] = g * CG + tap % CG;
        tap_h4[j / 4] = (rs / S) * DIL_H, tap_w4[j / 4] = (rs % S) * DIL_W;
    }

    vec4 acc[TM * TN / 4];
    [[unroll]] for (uint i = 0; i < TM * TN / 4; ++i) acc[i] = vec4(0.0);
    // The position (n, p, q) the reduction is at, divided out once and then stepped: a division per
    // position would cost more than the loads it addresses. Past the slice's end it runs on, unread.
    uint n = first / (P * Q), p = (first % (P * Q)) / Q, q = first % Q;
    for (uint k0 = first; k0 < last; k0 += 4) {
        vec4 a[TM], b[TN];
        [[unroll]] for (uint kk = 0; kk < 4; ++kk) {
            const bool inside = k0 + kk < last;
            const uint dy_at = pc.first_w + tensor_offset(NHWC, n, 0, p, q, K, P, Q);
            if (DY_VEC4) {
                // Filters m..m+3 at one position: 4 consecutive channels of dy (NHWC).
                [[unroll]] for (uint i = 0; i < TM; i += 4) {
                    const vec4 v = inside ? LOAD_W4((dy_at + dy_channel4[i / 4]) >> 2) : vec4(0.0);
                    [[unroll]] for (uint e = 0; e < 4; ++e) a[i + e][kk] = v[e];
                }
            } else {
                [[unroll]] for (uint i = 0; i < TM; ++i) a[i][kk] = inside ? LOAD_W(dy_at + dy_channel[i]) : 0.0;
            }
            const uint x_at = pc.first_x + tensor_offset(NHWC, n, 0, 0, 0, C, H, W);
            const int oh = window_origin(p, STRIDE_H, PAD_H), ow = window_origin(q, STRIDE_W, PAD_W);
            if (X_VEC4) {
                // Taps j..j+3: channels c..c+3 of one (r, s), 4 consecutive floats of x (NHWC).
                [[unroll]] for (uint j = 0; j < TN; j += 4) {
                    const int ih = oh + int(tap_h4[j / 4]), iw = ow + int(tap_w4[j / 4]);
                    const bool valid = inside && in_range(ih, H) && in_range(iw, W);
                    const vec4 v = valid ? LOAD_X4((x_at + channel4[j / 4] + (uint(ih) * W + uint(iw)) * C) >> 2) : vec4(0.0);
                    [[unroll]] for (uint e = 0; e < 4; ++e) b[j + e][kk] = v[e];
                }
            } else {
                [[unroll]] for (uint j = 0; j < TN; ++j) {
                    const int ih = oh + int(tap_h[j]), iw = ow + int(tap_w[j]);
                    const bool valid = inside && in_range(ih, H) && in_range(iw, W);
                    b[j][kk] = valid ? LOAD_X(x_at + channel[j] + (uint(ih) * W + uint(iw)) * column_stride(NHWC, C)) : 0.0;
                }
            }
            // On to the next position.
            q += 1;
            const bool next_row = q == Q;
            q = next_row ? 0 : q;
            p += next_row ? 1 : 0;
            const bool next_image = p == P;
            p = next_image ? 0 : p;
            n += next_image ? 1 : 0;
        }
        [[unroll]] for (uint i = 0; i < TM; ++i)
            [[unroll]] for (uint j = 0; j < TN; j += 4)
                acc[(i * TN + j) / 4] += vec4(dot(a[i], b[j]), dot(a[i], b[j + 1]), dot(a[i], b[j + 2]),
                                              dot(a[i], b[j + 3]));
    }

    [[unroll]] for (uint i = 0; i < TM; ++i) {
        const uint m = m0 + i;
        if (m >= pc.row_end) break;
        [[unroll]] for (uint j = 0; j < TN; ++j) {
            const uint t = t0 + j;
            if (t >= TAPS) break;
            const uint index = pc.first_y + slice * pc.slice_floats + (g * KG + m) * TAPS + t;
            const float value = acc[(i * TN + j) / 4][j % 4];
            STORE_ELEMENT(y, OUT_TYPE, index, pc.accumulate != 0 ? ELEMENT_AT(y, OUT_TYPE, index) + value : value);
        }
    }
}

void main() {
    if (PASS == 0)
        forward_main();
    else
        filter_main();
}
