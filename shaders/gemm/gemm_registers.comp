#version 450
// gemm_registers — tiled GEMM with register blocking and no shared memory (see gemm_common.glsl for the
// operation, the addressing and the access paths).
//
// The kernel for devices where every load is expensive and shared memory buys nothing (lavapipe, other
// CPU implementations): each invocation owns a TM x TN block of C and walks K in steps of 4, loading a
// 4-deep slice of its A rows and B columns (as vec4 where aligned) and doing TM*TN*4 FMAs per 16 loads at
// TM = TN = 8. Lanes of a workgroup row share their A rows and differ in N, so a subgroup reads the same
// A values whatever its size.
//
// Specialization constants (ids 4-12 are gemm_common.glsl's: HAS_BIAS, K_SEGMENTED, M_SEGMENTED, ACTIVATION,
// HAS_RESIDUAL, and the operands' element types):
//   0 WG_N, 1 WG_M     workgroup size in x (N) and y (M); WG_N * WG_M <= maxComputeWorkGroupInvocations
//   2 TM, 3 TN         register block per invocation; multiples of 4
//  13 A_VEC4_K         A(m, k..k+3) is one aligned vec4 (a_stride_k == 1, K % 4 == 0, aligned offsets)
//  14 A_VEC4_M         A(m..m+3, k) is one aligned vec4 (a_stride_m == 1, m segments multiples of 4, aligned offsets
//                      and a_stride_k)
//  15 B_VEC4_K         B(k..k+3, n) is one aligned vec4 (b_stride_k == 1, K % 4 == 0)
//  16 B_VEC4_N         B(k, n..n+3) is one aligned vec4 (b_stride_n == 1)
// Bindings and push constants: gemm_common.glsl.
// Dispatch grid: (ceil(N / (WG_N*TN)), ceil(M / (WG_M*TM)), batch entries).

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint TM = 8;
layout(constant_id = 3) const uint TN = 8;
layout(constant_id = 13) const bool A_VEC4_K = false;
layout(constant_id = 14) const bool A_VEC4_M = false;
layout(constant_id = 15) const bool B_VEC4_K = false;
layout(constant_id = 16) const bool B_VEC4_N = false;

#extension GL_GOOGLE_include_directive : require
#include "gemm_common.glsl"

void main() {
    uint a_base, b_base, c_base;
    batch_offsets(a_base, b_base, c_base);
    const uint n0 = gl_GlobalInvocationID.x * TN;
    const uint m0 = gl_GlobalInvocationID.y * TM;
    // Rows and columns past the edge read the last valid one (in bounds, results dropped at the store).
    const uint m_last = pc.M - 1, n_last = pc.N - 1;

    vec4 acc[TM * TN / 4];
    [[unroll]] for (uint i = 0; i < TM * TN / 4; ++i) acc[i] = vec4(0.0);

    // Row origins of A, computed once; with A_VEC4_M, the origins of its groups of 4 rows (a group never
    // straddles a segment: segments are multiples of 4 rows there).
    uint a_row[TM];
    [[unroll]] for (uint i = 0; i < TM; ++i) {
        a_row[i] = a_base + (A_VEC4_M ? (i % 4 == 0 ? a_mphys(min(m0 + i, m_last & ~3u)) : 0) : a_mphys(min(m0 + i, m_last)));
    }

    // With K segments, the position (segment, offset in it) of k0 is walked along rather than divided out
    // for every k: a division by a push constant is a long scalar sequence on CPU implementations.
    uint segment = 0, in_segment = 0;
    for (uint k0 = 0; k0 < pc.K; k0 += 4) {
        vec4 a[TM];  // a[i] = A(m0 + i, k0 .. k0 + 3)
        vec4 b[TN];  // b[j] = B(k0 .. k0 + 3, n0 + j)
        uint kp[4];  // a_kphys(k0 + kk)
        [[unroll]] for (uint kk = 0; kk < 4; ++kk) {
            if (K_SEGMENTED) {
                kp[kk] = segment * pc.a_k_segment_stride + in_segment * pc.a_stride_k;
                if (++in_segment == pc.a_k_segment) in_segment = 0, ++segment;
            } else {
                kp[kk] = (k0 + kk) * pc.a_stride_k;
            }
        }
        if (A_VEC4_K) {
            [[unroll]] for (uint i = 0; i < TM; ++i)
                a[i] = LOAD_A4((a_row[i] + kp[0]) >> 2);
        } else if (A_VEC4_M) {
            [[unroll]] for (uint kk = 0; kk < 4; ++kk) {
                const bool inside = k0 + kk < pc.K;
                const uint k_offset = inside ? kp[kk] : 0;
                [[unroll]] for (uint i = 0; i < TM; i += 4) {
                    const vec4 v = inside ? LOAD_A4((a_row[i] + k_offset) >> 2) : vec4(0.0);
                    a[i][kk] = v.x, a[i + 1][kk] = v.y, a[i + 2][kk] = v.z, a[i + 3][kk] = v.w;
                }
            }
        } else {
            [[unroll]] for (uint i = 0; i < TM; ++i) {
                [[unroll]] for (uint kk = 0; kk < 4; ++kk)
                    a[i][kk] = k0 + kk < pc.K ? LOAD_A1(a_row[i] + kp[kk]) : 0.0;
            }
        }
        if (B_VEC4_K) {
            [[unroll]] for (uint j = 0; j < TN; ++j)
                b[j] = LOAD_B4((b_base + k0 + min(n0 + j, n_last) * pc.b_stride_n) >> 2);
        } else if (B_VEC4_N) {
            const uint n_clamp = n_last & ~3u;
            [[unroll]] for (uint kk = 0; kk < 4; ++kk) {
                const bool inside = k0 + kk < pc.K;
                const uint row = b_base + (inside ? k0 + kk : 0) * pc.b_stride_k;
                [[unroll]] for (uint j = 0; j < TN; j += 4) {
                    const vec4 v = inside ? LOAD_B4((row + min(n0 + j, n_clamp)) >> 2) : vec4(0.0);
                    b[j][kk] = v.x, b[j + 1][kk] = v.y, b[j + 2][kk] = v.z, b[j + 3][kk] = v.w;
                }
            }
        } else {
            [[unroll]] for (uint j = 0; j < TN; ++j) {
                const uint column = b_base + min(n0 + j, n_last) * pc.b_stride_n;
                [[unroll]] for (uint kk = 0; kk < 4; ++kk)
                    b[j][kk] = k0 + kk < pc.K ? LOAD_B1(column + (k0 + kk) * pc.b_stride_k) : 0.0;
            }
        }
        [[unroll]] for (uint i = 0; i < TM; ++i)
            [[unroll]] for (uint j = 0; j < TN; j += 4)
                acc[(i * TN + j) / 4] += vec4(dot(a[i], b[j]), dot(a[i], b[j + 1]), dot(a[i], b[j + 2]),
                                              dot(a[i], b[j + 3]));
    }

    [[unroll]] for (uint i = 0; i < TM; ++i) {
        const uint m = m0 + i;
        if (m >= pc.M) break;
        [[unroll]] for (uint j = 0; j < TN; ++j) {
            const uint n = n0 + j;
            if (n < pc.N) store_c(c_base, m, n, acc[(i * TN + j) / 4][j % 4], HAS_BIAS);
        }
    }
}
