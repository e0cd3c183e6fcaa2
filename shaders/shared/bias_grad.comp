#version 450
// bias_grad — the bias gradient db[k] = sum of dy over the chunk's images and output positions, or one
// piece of it: invocation (piece, k) sums positions [piece * PIECE, (piece + 1) * PIECE) of the chunk's
// flattened (n, p, q) positions of channel k, in order. With one piece the sum goes straight into db
// (added to earlier chunks with `accumulate`); with several it goes to partial[piece][k] and
// splitk_reduce adds the pieces in order: deterministic either way, and no shared memory or barriers
// (CPU implementations run those as slow per-invocation coroutines).
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 K, 2 PQ (output positions per image), 3 NHWC,
//   4 CHANNELS4 (NHWC with K % 4 == 0 and a vec4-aligned window: an invocation sums 4 channels as vec4; fp32
//   only), 5 DY_TYPE, 6 OUT_TYPE: the element types of dy and of out (../common/elements.glsl; the partial
//   sums are fp32, db of the problem's type).
// Bindings: 0 dy (the chunk's window, readonly), 1 out (db or the partial sums; read when accumulating),
//   2 dy again as vec4 (read only with CHANNELS4).
// Push constants: dy_offset (elements from the binding's start to the chunk's first image), positions in the
//   chunk, piece (positions per piece), accumulate (0/1), first_piece (the piece invocation slice 0 sums: a
//   run of one piece at a time adds pieces straight into db in order, with no partial sums), db_offset
//   (binding 1's element 0: db may be a view), then the dispatch's slice [base, base + count)
//   of the pieces * K invocations (K / 4 with CHANNELS4; k fastest: in NHWC neighbouring invocations read
//   neighbouring floats).
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require
#include "../common/tensor_index.glsl"
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint K = 1;
layout(constant_id = 2) const uint PQ = 1;
layout(constant_id = 3) const bool NHWC = false;
layout(constant_id = 4) const bool CHANNELS4 = false;
layout(constant_id = 5) const uint DY_TYPE = 0;
layout(constant_id = 6) const uint OUT_TYPE = 0;

layout(std430, binding = 0) readonly buffer GradOutput { ELEMENT_WORD dy[]; };
layout(std430, binding = 2) readonly buffer GradOutput4 { vec4 dy4[]; };
layout(std430, binding = 1) buffer Out { ELEMENT_WORD dst[]; };

layout(push_constant) uniform Params {
    uint dy_offset;
    uint positions;
    uint piece;
    uint accumulate;
    uint first_piece;
    uint db_offset;  // elements from binding 1's start to its element 0 (db may be a view; partial sums: 0)
    uint base, count;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    const uint lanes = CHANNELS4 ? K / 4 : K;
    const uint k = (index % lanes) * (CHANNELS4 ? 4 : 1), slice = index / lanes;
    const uint first = (pc.first_piece + slice) * pc.piece, last = min(first + pc.piece, pc.positions);
    const uint target = pc.db_offset + slice * K + k;
    vec4 acc = vec4(0.0);
    if (pc.accumulate != 0) {
        acc.x = ELEMENT_AT(dst, OUT_TYPE, target);
        if (CHANNELS4)
            acc.yzw = vec3(ELEMENT_AT(dst, OUT_TYPE, target + 1), ELEMENT_AT(dst, OUT_TYPE, target + 2),
                           ELEMENT_AT(dst, OUT_TYPE, target + 3));
    }
    uint n = first / PQ, j = first % PQ;
    for (uint position = first; position < last;) {
        const uint end = min(PQ, j + (last - position));
        // dy of image n, channel k as a row of PQ positions: dy seen as N x K x 1 x PQ.
        const uint row = pc.dy_offset + tensor_offset(NHWC, n, k, 0, 0, K, 1, PQ), step = column_stride(NHWC, K);
        // Blocks of 16 unrolled, then the rest: the loop overhead otherwise outweighs one addition.
        uint jj = j;
        if (CHANNELS4) {
            for (; jj + 16 <= end; jj += 16) {
                [[unroll]] for (uint u = 0; u < 16; ++u) acc += dy4[(row + (jj + u) * step) / 4];
            }
            for (; jj < end; ++jj) acc += dy4[(row + jj * step) / 4];
        } else {
            for (; jj + 16 <= end; jj += 16) {
                [[unroll]] for (uint u = 0; u < 16; ++u) acc.x += ELEMENT_AT(dy, DY_TYPE, row + (jj + u) * step);
            }
            for (; jj < end; ++jj) acc.x += ELEMENT_AT(dy, DY_TYPE, row + jj * step);
        }
        position += end - j;
        j = 0, ++n;
    }
    STORE_ELEMENT(dst, OUT_TYPE, target, acc.x);
    if (CHANNELS4) {
        STORE_ELEMENT(dst, OUT_TYPE, target + 1, acc.y);
        STORE_ELEMENT(dst, OUT_TYPE, target + 2, acc.z);
        STORE_ELEMENT(dst, OUT_TYPE, target + 3, acc.w);
    }
}
