#version 450
// col2im — dx from the im2col-shaped gradient dcol = dy * w, as a gather: one invocation per dx value
// of the chunk's images, summing the dcol entries of every (output position, tap) that read it. No
// atomics: the order is fixed, so results are deterministic. Where a chunk is a band of output rows of
// one image, each band adds its part to dx (ACCUMULATE after the first band).
//
// dcol layout: [g][m][k] with m = (n, p - p0, q) over the chunk and k the filter's tap order ((c, r, s)
// for NCHW/OIHW, (r, s, c) for NHWC/OHWI), as the im2col lowering (engine/conv/im2col/) lowers x.
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 R, 2 S, 3 STRIDE_H, 4 STRIDE_W, 5 PAD_H, 6 PAD_W,
//   7 DIL_H, 8 DIL_W, 9 NHWC, 10 C, 11 H, 12 W, 13 CG, 14 Q, 15 ROWS, 16 IMAGES, 17 DX_TYPE (dx's element
//   type, ../common/elements.glsl; dcol is fp32, so a 16-bit dx value is rounded once, where it is written).
//   1..9 are declared in ../common/conv_spec_geometry.glsl, shared with im2col, the direct and the depthwise
//   shaders.
// Bindings: 0 dcol (readonly), 1 dx (the chunk's window; read when ACCUMULATE, written).
// Push constants: first output row p0, dx_offset (elements from the binding's start to the chunk's first
//   image), accumulate (0/1), then the dispatch's slice [base, base + count) of the chunk's dx values.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

#extension GL_GOOGLE_include_directive : require
#include "../common/tensor_index.glsl"
#include "../common/conv_geometry.glsl"
#include "../common/conv_spec_geometry.glsl"  // specialization constants 1..9: R .. NHWC
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 10) const uint C = 1;
layout(constant_id = 11) const uint H = 1;
layout(constant_id = 12) const uint W = 1;
layout(constant_id = 13) const uint CG = 1;
layout(constant_id = 14) const uint Q = 1;
layout(constant_id = 15) const uint ROWS = 1;
layout(constant_id = 16) const uint IMAGES = 1;
layout(constant_id = 17) const uint DX_TYPE = 0;

layout(std430, binding = 0) readonly buffer GradCol { float dcol[]; };
layout(std430, binding = 1) buffer GradInput { ELEMENT_WORD dx[]; };

layout(push_constant) uniform Params {
    uint p0;
    uint dx_offset;
    uint accumulate;
    uint base, count;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    uint n, c, h, x;
    tensor_coords(NHWC, index, C, H, W, n, c, h, x);
    const uint g = c / CG, cl = c % CG;
    const uint K = CG * R * S;
    const uint M = IMAGES * ROWS * Q;
    float acc = 0.0;
    for (uint r = 0; r < R; ++r) {
        uint p;
        if (!tap_output(h, r, STRIDE_H, PAD_H, DIL_H, p) || p < pc.p0 || p >= pc.p0 + ROWS) continue;
        for (uint s = 0; s < S; ++s) {
            uint q;
            if (!tap_output(x, s, STRIDE_W, PAD_W, DIL_W, q) || q >= Q) continue;
            const uint m = (n * ROWS + (p - pc.p0)) * Q + q;
            const uint k = tensor_offset(NHWC, 0, cl, r, s, CG, R, S);  // the tap's place in its filter
            acc += dcol[(g * M + m) * K + k];
        }
    }
    const uint di = pc.dx_offset + index;
    STORE_ELEMENT(dx, DX_TYPE, di, pc.accumulate != 0 ? ELEMENT_AT(dx, DX_TYPE, di) + acc : acc);
}
