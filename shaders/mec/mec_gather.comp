#version 450
// mec_gather — dx from MEC's lowered-shaped gradient dL (the adjoint of mec_lower), as a gather: one
// invocation per dx value, summing the dL entries of every (output column q, tap column s) that copied
// it. No atomics, fixed order: deterministic.
//
// dL layout as mec_lower's L: dL[g][n][q][h][s][c] over the chunk's images, h the lowered row (padded
// input row h0 + h). A dx value of input row ih reads lowered row ih + PAD_H - h0 when that lies in
// [0, HL), and is 0 from this chunk otherwise.
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 S, 2 STRIDE_W, 3 PAD_H, 4 PAD_W, 5 DIL_W, 6 NHWC,
//   7 C, 8 H, 9 W, 10 CG (channels per group), 11 Q, 12 HL (lowered rows), 13 IMAGES (in the chunk),
//   14 CHANNEL_BLOCK (NCHW only), 15 DX_TYPE. 1..13 are declared in ../common/mec_spec_geometry.glsl, shared with
//   mec_lower.
// Bindings: 0 dL (readonly), 1 dx (the chunk's window; read when accumulating, written).
// Push constants: h0 (first padded row of dL), dx_offset (floats from the binding's start to the chunk's
//   first image), the input rows [row_first, row_first + row_count) this dispatch covers (a band of output
//   rows reaches only some), accumulate (0/1: add to dx, where bands overlap), then the dispatch's slice
//   [base, base + count) of the IMAGES * row_count * W * C values (NCHW: C rounded up to CHANNEL_BLOCK).
//
// Invocation order: channels vary fastest in both layouts, because dL is channel-contiguous and each
// invocation reads S values of it but writes one dx value. In NCHW that order is by blocks of
// CHANNEL_BLOCK channels (then x, row, block, image): neighbouring invocations read one cache line of dL,
// and the CHANNEL_BLOCK dx lines they write fill up over the next x values.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

#extension GL_GOOGLE_include_directive : require
#include "../common/tensor_index.glsl"
#include "../common/conv_geometry.glsl"
#include "../common/mec_spec_geometry.glsl"  // specialization constants 1..13: S .. IMAGES
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 14) const uint CHANNEL_BLOCK = 16;
layout(constant_id = 15) const uint DX_TYPE = 0;  // dx's element type (dL is fp32: each dx value rounded once)

layout(std430, binding = 0) readonly buffer LoweredGrad { float dl[]; };
layout(std430, binding = 1) buffer GradInput { ELEMENT_WORD dx[]; };

layout(push_constant) uniform Params {
    uint h0;
    uint dx_offset;
    uint row_first, row_count;
    uint accumulate;
    uint base, count;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    uint t = pc.base + i;
    uint n, c, row, x;
    if (NHWC) {
        tensor_coords(true, t, C, pc.row_count, W, n, c, row, x);
    } else {
        const uint blocks = (C + CHANNEL_BLOCK - 1) / CHANNEL_BLOCK;
        const uint c_low = t % CHANNEL_BLOCK; t /= CHANNEL_BLOCK;
        x = t % W; t /= W;
        row = t % pc.row_count; t /= pc.row_count;
        c = (t % blocks) * CHANNEL_BLOCK + c_low;
        n = t / blocks;
        if (c >= C) return;
    }
    const uint ih = pc.row_first + row;
    const uint g = c / CG, cl = c % CG;
    const int h = int(ih + PAD_H) - int(pc.h0);
    float acc = 0.0;
    if (in_range(h, HL)) {
        const uint image = (g * IMAGES + n) * Q;
        for (uint s = 0; s < S; ++s) {
            uint q;
            if (!tap_output(x, s, STRIDE_W, PAD_W, DIL_W, q) || q >= Q) continue;
            acc += dl[(((image + q) * HL + uint(h)) * S + s) * CG + cl];
        }
    }
    const uint di = pc.dx_offset + tensor_offset(NHWC, n, c, ih, x, C, H, W);
    STORE_ELEMENT(dx, DX_TYPE, di, pc.accumulate != 0 ? ELEMENT_AT(dx, DX_TYPE, di) + acc : acc);
}
