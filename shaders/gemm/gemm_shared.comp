#version 450
// gemm_shared — tiled GEMM through shared memory, the shape that wins on GPUs (see gemm_common.glsl for
// the operation, the addressing and the access paths).
//
// A workgroup owns a BM x BN tile of C (BM = WG_M * TM, BN = WG_N * TN) and steps K by BK: it stages the
// BK x BM slice of A and the BK x BN slice of B in shared memory (rows padded by one float against bank
// conflicts), with consecutive invocations reading consecutive addresses of whichever dimension is
// contiguous in memory, then each invocation accumulates TM x TN values from shared memory. Invocation
// (tx, ty) owns rows ty + i*WG_M and columns tx + j*WG_N: shared reads are broadcast (A) or consecutive
// (B), and stores are consecutive along n. Scalar loads only, zero-filled outside the matrix.
//
// Specialization constants (ids 4-12 are gemm_common.glsl's: HAS_BIAS, K_SEGMENTED, M_SEGMENTED, ACTIVATION,
// HAS_RESIDUAL, and the operands' element types):
//   0 WG_N, 1 WG_M     workgroup size in x (N) and y (M)
//   2 TM, 3 TN         values per invocation in M and N (build variants fix them with FIXED_TM/FIXED_TN:
//                      compile-time register blocks unroll fully, where spec-constant ones may spill)
//  13 BK               K step staged in shared memory; (BM + BN) * (BK + 1) * 4 bytes of shared memory
//  14 A_K_FAST         A's k is its contiguous dimension (a_stride_k == 1): load along k
//  15 B_N_FAST         B's n is its contiguous dimension (b_stride_n == 1): load along n
//  16 A_VEC4, 17 B_VEC4  the fast dimension of A / B is vec4-aligned: global loads are vec4
//  18 STAGES          shared tiles: 1, or 2 (double-buffered: the next K step's tiles are loaded into the
//                     other buffer while this step's are multiplied, one barrier a step instead of two)
// Build define SHARED_VEC4 (with FIXED_TM/FIXED_TN multiples of 4): invocation (tx, ty) owns the TM
// consecutive rows from ty*TM and the TN consecutive columns from tx*TN instead, and the shared tiles are
// vec4 arrays without padding, so each K step reads TM/4 + TN/4 vec4s from shared memory rather than
// TM + TN floats: the larger register blocks (8x8) then spend their time in FMAs, not shared loads.
// Bindings and push constants: gemm_common.glsl (only the scalar views are read).
// Dispatch grid: (ceil(N / BN), ceil(M / BM), batch entries).

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 0) const uint WG_N = 16;
layout(constant_id = 1) const uint WG_M = 8;
#ifdef FIXED_TM
const uint TM = FIXED_TM;
const uint TN = FIXED_TN;
#else
layout(constant_id = 2) const uint TM = 8;
layout(constant_id = 3) const uint TN = 4;
#endif
layout(constant_id = 13) const uint BK = 16;
layout(constant_id = 14) const bool A_K_FAST = false;
layout(constant_id = 15) const bool B_N_FAST = true;
layout(constant_id = 16) const bool A_VEC4 = false;
layout(constant_id = 17) const bool B_VEC4 = false;
layout(constant_id = 18) const uint STAGES = 1;

#extension GL_GOOGLE_include_directive : require
#include "gemm_common.glsl"

const uint BM = WG_M * TM;
const uint BN = WG_N * TN;
#ifdef SHARED_VEC4
// Rows of whole vec4s: element e of a tile is component e % 4 of vec4 e / 4.
const uint A_ROW = BM, B_ROW = BN;
const uint A_TILE = BK * A_ROW, B_TILE = BK * B_ROW;
shared vec4 a_tile[STAGES * A_TILE / 4];  // [stage][k][m]
shared vec4 b_tile[STAGES * B_TILE / 4];  // [stage][k][n]
#define A_AT(e) a_tile[(e) >> 2][(e) & 3u]
#define B_AT(e) b_tile[(e) >> 2][(e) & 3u]
#else
// Rows padded by one float against bank conflicts.
const uint A_ROW = BM + 1, B_ROW = BN + 1;
const uint A_TILE = BK * A_ROW, B_TILE = BK * B_ROW;
shared float a_tile[STAGES * A_TILE];  // [stage][k][m]
shared float b_tile[STAGES * B_TILE];  // [stage][k][n]
#define A_AT(e) a_tile[e]
#define B_AT(e) b_tile[e]
#endif

// a_kphys(k0 + kk) from k0's position in its segment, with no division where segments are at least BK
// long (a division by a push constant is tens of instructions on a GPU, once per staged element).
uint a_kphys_from(uint k0, uint segment, uint in_segment, uint kk) {
    if (!K_SEGMENTED || pc.a_k_segment < BK) return a_kphys(k0 + kk);
    uint position = in_segment + kk;
    if (position >= pc.a_k_segment) position -= pc.a_k_segment, ++segment;
    return segment * pc.a_k_segment_stride + position * pc.a_stride_k;
}

// Moves the staging position one K step on (segments of at least BK).
void advance_segment(inout uint segment, inout uint in_segment) {
    if (K_SEGMENTED && pc.a_k_segment >= BK) {
        in_segment += BK;
        while (in_segment >= pc.a_k_segment) in_segment -= pc.a_k_segment, ++segment;
    }
}

// Stages the K step at k0 into shared tile slot `slot`: A's BK x BM slice and B's BK x BN slice.
void stage(uint k0, uint slot, uint a_base, uint b_base, uint tile_m, uint tile_n, uint tid, uint threads,
           uint segment, uint in_segment) {
    const uint a0 = slot * A_TILE, b0 = slot * B_TILE;
    if (A_VEC4 && A_K_FAST) {
        for (uint e = tid; e < BK * BM / 4; e += threads) {
            const uint mm = e / (BK / 4), kk = (e % (BK / 4)) * 4;
            const uint m = tile_m + mm, k = k0 + kk;
            const vec4 v = (m < pc.M && k < pc.K)
                               ? LOAD_A4((a_base + a_mphys(m) + a_kphys_from(k0, segment, in_segment, kk)) >> 2)
                               : vec4(0.0);
            [[unroll]] for (uint c = 0; c < 4; ++c) A_AT(a0 + (kk + c) * A_ROW + mm) = v[c];
        }
    } else if (A_VEC4) {
        for (uint e = tid; e < BK * BM / 4; e += threads) {
            const uint kk = e / (BM / 4), mm = (e % (BM / 4)) * 4;
            const uint m = min(tile_m + mm, (pc.M - 1) & ~3u), k = k0 + kk;  // past M: in bounds, dropped
            const vec4 v =
                k < pc.K ? LOAD_A4((a_base + a_mphys(m) + a_kphys_from(k0, segment, in_segment, kk)) >> 2) : vec4(0.0);
            [[unroll]] for (uint c = 0; c < 4; ++c) A_AT(a0 + kk * A_ROW + mm + c) = v[c];
        }
    } else {
        for (uint e = tid; e < BK * BM; e += threads) {
            const uint kk = A_K_FAST ? e % BK : e / BM;
            const uint mm = A_K_FAST ? e / BK : e % BM;
            const uint m = tile_m + mm, k = k0 + kk;
            A_AT(a0 + kk * A_ROW + mm) =
                (m < pc.M && k < pc.K) ? LOAD_A1(a_base + a_mphys(m) + a_kphys_from(k0, segment, in_segment, kk))
                                       : 0.0;
        }
    }
    if (B_VEC4 && B_N_FAST) {
        for (uint e = tid; e < BK * BN / 4; e += threads) {
            const uint kk = e / (BN / 4), nn = (e % (BN / 4)) * 4;
            const uint n = min(tile_n + nn, (pc.N - 1) & ~3u), k = k0 + kk;  // past N: in bounds, dropped
            const vec4 v = k < pc.K ? LOAD_B4((b_base + k * pc.b_stride_k + n) >> 2) : vec4(0.0);
            [[unroll]] for (uint c = 0; c < 4; ++c) B_AT(b0 + kk * B_ROW + nn + c) = v[c];
        }
    } else if (B_VEC4) {
        for (uint e = tid; e < BK * BN / 4; e += threads) {
            const uint nn = e / (BK / 4), kk = (e % (BK / 4)) * 4;
            const uint n = tile_n + nn, k = k0 + kk;
            const vec4 v = (n < pc.N && k < pc.K) ? LOAD_B4((b_base + k + n * pc.b_stride_n) >> 2) : vec4(0.0);
            [[unroll]] for (uint c = 0; c < 4; ++c) B_AT(b0 + (kk + c) * B_ROW + nn) = v[c];
        }
    } else {
        for (uint e = tid; e < BK * BN; e += threads) {
            const uint kk = B_N_FAST ? e / BN : e % BK;
            const uint nn = B_N_FAST ? e % BN : e / BK;
            const uint n = tile_n + nn, k = k0 + kk;
            B_AT(b0 + kk * B_ROW + nn) =
                (n < pc.N && k < pc.K) ? LOAD_B1(b_base + k * pc.b_stride_k + n * pc.b_stride_n) : 0.0;
        }
    }
}

// One K step's products from shared tile slot `slot` into the invocation's TM x TN accumulators.
void multiply(uint slot, uint tx, uint ty, inout float acc[TM * TN]) {
    const uint a0 = slot * A_TILE, b0 = slot * B_TILE;
    // The k loop is left to the driver: unrolling it around a fully unrolled TM x TN block makes code
    // that compiles for tens of seconds and spills on NVIDIA's compiler.
    for (uint kk = 0; kk < BK; ++kk) {
#ifdef SHARED_VEC4
        vec4 a[TM / 4], b[TN / 4];
        [[unroll]] for (uint i = 0; i < TM / 4; ++i) a[i] = a_tile[(a0 + kk * A_ROW + ty * TM) / 4 + i];
        [[unroll]] for (uint j = 0; j < TN / 4; ++j) b[j] = b_tile[(b0 + kk * B_ROW + tx * TN) / 4 + j];
        [[unroll]] for (uint i = 0; i < TM; ++i)
            [[unroll]] for (uint j = 0; j < TN; ++j)
                acc[i * TN + j] = fma(a[i / 4][i % 4], b[j / 4][j % 4], acc[i * TN + j]);
#else
        float a[TM], b[TN];
        [[unroll]] for (uint i = 0; i < TM; ++i) a[i] = A_AT(a0 + kk * A_ROW + ty + i * WG_M);
        [[unroll]] for (uint j = 0; j < TN; ++j) b[j] = B_AT(b0 + kk * B_ROW + tx + j * WG_N);
        [[unroll]] for (uint i = 0; i < TM; ++i)
            [[unroll]] for (uint j = 0; j < TN; ++j) acc[i * TN + j] = fma(a[i], b[j], acc[i * TN + j]);
#endif
    }
}

// The row and column of the invocation's accumulator (i, j).
uint row_of(uint ty, uint i) {
#ifdef SHARED_VEC4
    return ty * TM + i;
#else
    return ty + i * WG_M;
#endif
}
uint column_of(uint tx, uint j) {
#ifdef SHARED_VEC4
    return tx * TN + j;
#else
    return tx + j * WG_N;
#endif
}

void main() {
    uint a_base, b_base, c_base;
    batch_offsets(a_base, b_base, c_base);
    const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    const uint tid = ty * WG_N + tx;
    const uint threads = WG_N * WG_M;
    const uint tile_m = gl_WorkGroupID.y * BM, tile_n = gl_WorkGroupID.x * BN;

    float acc[TM * TN];
    [[unroll]] for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;

    // The K position of the next step to stage: k0 = segment * a_k_segment + in_segment (segments >= BK long).
    uint segment = 0, in_segment = 0;
    if (STAGES == 1) {
        for (uint k0 = 0; k0 < pc.K; k0 += BK) {
            stage(k0, 0, a_base, b_base, tile_m, tile_n, tid, threads, segment, in_segment);
            barrier();
            multiply(0, tx, ty, acc);
            barrier();
            advance_segment(segment, in_segment);
        }
    } else {
        // Double-buffered: step s multiplies slot s % 2 while step s + 1's tiles load into the other; the
        // barrier ending a step both completes the next tiles and frees this step's slot for the one after.
        if (pc.K > 0) stage(0, 0, a_base, b_base, tile_m, tile_n, tid, threads, segment, in_segment);
        advance_segment(segment, in_segment);
        barrier();
        uint slot = 0;
        for (uint k0 = 0; k0 < pc.K; k0 += BK) {
            if (k0 + BK < pc.K) {
                stage(k0 + BK, slot ^ 1u, a_base, b_base, tile_m, tile_n, tid, threads, segment, in_segment);
                advance_segment(segment, in_segment);
            }
            multiply(slot, tx, ty, acc);
            barrier();
            slot ^= 1u;
        }
    }

    [[unroll]] for (uint i = 0; i < TM; ++i) {
        const uint m = tile_m + row_of(ty, i);
        if (m >= pc.M) continue;
        [[unroll]] for (uint j = 0; j < TN; ++j) {
            const uint n = tile_n + column_of(tx, j);
            if (n < pc.N) store_c(c_base, m, n, acc[i * TN + j], HAS_BIAS);
        }
    }
}
