#version 450
// mec_lower — MEC's lowering (Cho & Brand 2017) of a chunk of the input, one invocation per element.
//
// For group g, image n of the chunk, output column q, lowered row h (padded input row hp = p0*sh + h, the
// band of rows the chunk's output rows [p0, p0 + rows) read), tap column s and group channel c:
//   L[g][n][q][h][s][c] = x[n0 + n][g*Cg + c][hp - ph][q*sw - pw + s*dw]   (0 in the padding)
// so the output row p's GEMM reads the window L[g][n][:][(p - p0)*sh + r*dh][:][:] for r < R: windows
// of neighbouring rows overlap and are never copied.
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 S, 2 STRIDE_W, 3 PAD_H, 4 PAD_W, 5 DIL_W, 6 NHWC,
//   7 C, 8 H, 9 W, 10 CG (channels per group), 11 Q, 12 HL (lowered rows), 13 IMAGES (in the chunk).
//   Sizes are constants so the index arithmetic divides by constants (multiplications), which matters on
//   CPU implementations where integer division is not vectorised; a problem needs at most two pipelines
//   (full and last chunk).
// Bindings: 0 x (the chunk's window of the input), 1 L (write).
// Push constants: first padded row h0 = p0*sh, x_offset, then the dispatch's slice [base, base + count)
//   of L's elements.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

#extension GL_GOOGLE_include_directive : require
#include "../common/tensor_index.glsl"
#include "../common/conv_geometry.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint S = 1;
layout(constant_id = 2) const uint STRIDE_W = 1;
layout(constant_id = 3) const uint PAD_H = 0;
layout(constant_id = 4) const uint PAD_W = 0;
layout(constant_id = 5) const uint DIL_W = 1;
layout(constant_id = 6) const bool NHWC = false;
layout(constant_id = 7) const uint C = 1;
layout(constant_id = 8) const uint H = 1;
layout(constant_id = 9) const uint W = 1;
layout(constant_id = 10) const uint CG = 1;
layout(constant_id = 11) const uint Q = 1;
layout(constant_id = 12) const uint HL = 1;
layout(constant_id = 13) const uint IMAGES = 1;

layout(std430, binding = 0) readonly buffer InputBuffer { float x[]; };
layout(std430, binding = 1) writeonly buffer LoweredBuffer { float lowered[]; };

layout(push_constant) uniform Params {
    uint h0;
    uint x_offset;
    uint base, count;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    uint t = index;
    const uint c = t % CG; t /= CG;
    const uint s = t % S; t /= S;
    const uint h = t % HL; t /= HL;
    const uint q = t % Q; t /= Q;
    const uint n = t % IMAGES;
    const uint g = t / IMAGES;
    const uint channel = g * CG + c;
    const int ih = int(pc.h0 + h) - int(PAD_H);
    const int iw = tap_input(q, s, STRIDE_W, PAD_W, DIL_W);
    float value = 0.0;
    if (in_range(ih, H) && in_range(iw, W)) {
        const uint xi = tensor_offset(NHWC, n, channel, uint(ih), uint(iw), C, H, W);
        value = x[pc.x_offset + xi];
    }
    lowered[index] = value;
}
