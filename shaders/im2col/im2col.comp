#version 450
// im2col — lowers a chunk of the input into the im2col matrix of every group, one invocation per element.
//
// For group g, row m = (n, p, q) over the chunk's images [n0, n0 + images) and output rows
// [p0, p0 + rows), and column k over the filter taps in the filter's own order ((c, r, s) for NCHW/OIHW,
// (r, s, c) for NHWC/OHWI, so the GEMM reads the user's filter as it is):
//   col[g][m][k] = x[n0 + n][g*Cg + c][p*sh - ph + r*dh][q*sw - pw + s*dw]   (0 outside the image)
// TRANSPOSED stores col[g][k][m] instead (rows contiguous), which the GEMM prefers when K is not a
// multiple of 4 but M is.
//
// Specialization constants (1..9 declared in ../common/conv_spec_geometry.glsl, shared with col2im, the
//   direct and the depthwise shaders): 0 WORKGROUP_SIZE, 1 R, 2 S, 3 STRIDE_H, 4 STRIDE_W, 5 PAD_H, 6 PAD_W,
//   7 DIL_H, 8 DIL_W, 9 NHWC, 10 TRANSPOSED, 11 C, 12 H, 13 W, 14 CG (channels per group), 15 Q,
//   16 ROWS (output rows in the chunk), 17 IMAGES (in the chunk), 18 X_TYPE and 19 COL_TYPE (the element
//   types of x and col, ../common/elements.glsl: a 16-bit x lowers into a 16-bit col). Sizes are constants so the index
//   arithmetic divides by constants (multiplications), which matters on CPU implementations where integer
//   division is not vectorised; a problem needs at most two pipelines (full and last chunk).
// Bindings: 0 x (the chunk's window of the input), 1 col (write).
// Push constants: first output row p0, x_offset (elements from the binding's start to the chunk's first
//   image), then the dispatch's slice [base, base + count) of the col elements.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

#extension GL_GOOGLE_include_directive : require
#include "../common/tensor_index.glsl"
#include "../common/conv_geometry.glsl"
#include "../common/conv_spec_geometry.glsl"  // specialization constants 1..9: R .. NHWC
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 10) const bool TRANSPOSED = false;
layout(constant_id = 11) const uint C = 1;
layout(constant_id = 12) const uint H = 1;
layout(constant_id = 13) const uint W = 1;
layout(constant_id = 14) const uint CG = 1;
layout(constant_id = 15) const uint Q = 1;
layout(constant_id = 16) const uint ROWS = 1;
layout(constant_id = 17) const uint IMAGES = 1;
layout(constant_id = 18) const uint X_TYPE = 0;
layout(constant_id = 19) const uint COL_TYPE = 0;

layout(std430, binding = 0) readonly buffer InputBuffer { ELEMENT_WORD x[]; };
#ifdef ELEMENTS_PACKED
layout(std430, binding = 1) buffer ColBuffer { ELEMENT_WORD col[]; };  // (half-word stores are atomics)
#else
layout(std430, binding = 1) writeonly buffer ColBuffer { ELEMENT_WORD col[]; };
#endif

layout(push_constant) uniform Params {
    uint p0;
    uint x_offset;
    uint base, count;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    const uint K = CG * R * S;
    const uint M = IMAGES * ROWS * Q;
    const uint g = index / (M * K);
    const uint within = index % (M * K);
    const uint m = TRANSPOSED ? within % M : within / K;
    const uint k = TRANSPOSED ? within / M : within % K;

    const uint q = m % Q;
    const uint p = pc.p0 + (m / Q) % ROWS;
    const uint n = m / (Q * ROWS);
    uint c, r, s;
    image_coords(NHWC, k, CG, R, S, c, r, s);  // k runs over one filter's taps in its own order
    c += g * CG;
    const int ih = tap_input(p, r, STRIDE_H, PAD_H, DIL_H);
    const int iw = tap_input(q, s, STRIDE_W, PAD_W, DIL_W);
    float value = 0.0;
    if (in_range(ih, H) && in_range(iw, W)) {
        const uint xi = tensor_offset(NHWC, n, c, uint(ih), uint(iw), C, H, W);
        value = ELEMENT_AT(x, X_TYPE, pc.x_offset + xi);
    }
    STORE_ELEMENT(col, COL_TYPE, index, value);
}
