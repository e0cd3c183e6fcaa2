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
//   7 C, 8 H, 9 W, 10 CG (channels per group), 11 Q, 12 HL (lowered rows), 13 IMAGES (in the chunk), all
//   declared in ../common/mec_spec_geometry.glsl, shared with mec_gather; 14 X_TYPE and 15 L_TYPE (element
//   types, ../common/elements.glsl).
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
#include "../common/mec_spec_geometry.glsl"  // specialization constants 1..13: S .. IMAGES
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 14) const uint X_TYPE = 0;  // x's element type (../common/elements.glsl)
layout(constant_id = 15) const uint L_TYPE = 0;  // L's: a 16-bit x lowers into a 16-bit L

layout(std430, binding = 0) readonly buffer InputBuffer { ELEMENT_WORD x[]; };
#ifdef ELEMENTS_PACKED
layout(std430, binding = 1) buffer LoweredBuffer { ELEMENT_WORD lowered[]; };  // (half-word stores are atomics)
#else
layout(std430, binding = 1) writeonly buffer LoweredBuffer { ELEMENT_WORD lowered[]; };
#endif

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
        value = ELEMENT_AT(x, X_TYPE, pc.x_offset + xi);
    }
    STORE_ELEMENT(lowered, L_TYPE, index, value);
}
