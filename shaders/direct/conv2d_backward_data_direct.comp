#version 450
// conv2d_backward_data_direct — dx from dy and w, one invocation per dx value, as a gather.
//
// dx[n][c][h][w] = sum over the filters k of c's group and the taps (r, s) that reach (h, w):
//   dy[n][k][p][q] * w[k][c - g*Cg][r][s]   where h + ph - r*dh = p*sh and w + pw - s*dw = q*sw
// (only taps whose offsets divide by the stride, with p < P and q < Q, contribute). No atomics, no
// zero-dilated dy: a fixed loop order per output, so results are deterministic.
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 R, 2 S, 3 STRIDE_H, 4 STRIDE_W, 5 PAD_H, 6 PAD_W,
//   7 DIL_H, 8 DIL_W, 9 NHWC (dy/dx NHWC, w OHWI; else NCHW and OIHW). 1..9 are declared in
//   ../common/conv_spec_geometry.glsl, shared with the other direct, im2col and depthwise shaders.
//  10 A_TYPE, 11 B_TYPE, 12 OUT_TYPE: the element types of bindings 0, 1 and 2 (0 fp32, 1 fp16, 2 bf16;
//   ../common/elements.glsl), read in the 16-bit builds (ELEMENTS_16, ELEMENTS_PACKED).
// Bindings: 0 dy (readonly), 1 w (readonly), 2 dx (write).
// Push constants (../common/direct_sizes.glsl, shared with conv2d_backward_filter_direct; first0..first3:
//   element 0 of each binding, in elements of its type from its start): N C H W K P Q, channels and filters per group, the piece of the reduction
//   [reduce_begin, reduce_end) (filters within the group) and accumulate (0: dx = piece; 1: dx += piece;
//   see engine/vulkan/shader_limits.hpp), then the dispatch's slice [base, base + count) of dx.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

#extension GL_GOOGLE_include_directive : require
#include "../common/tensor_index.glsl"
#include "../common/conv_geometry.glsl"
#include "../common/conv_spec_geometry.glsl"  // specialization constants 1..9: R .. NHWC
#include "../common/direct_sizes.glsl"        // the push constants (DirectSizes)
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 10) const uint A_TYPE = 0;
layout(constant_id = 11) const uint B_TYPE = 0;
layout(constant_id = 12) const uint OUT_TYPE = 0;

layout(std430, binding = 0) readonly buffer GradOutput { ELEMENT_WORD dy[]; };
layout(std430, binding = 1) readonly buffer Filter { ELEMENT_WORD w[]; };
layout(std430, binding = 2) buffer GradInput { ELEMENT_WORD dx[]; };

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    uint n, c, h, x;
    tensor_coords(NHWC, index, pc.C, pc.H, pc.W, n, c, h, x);
    const uint cpg = pc.channels_per_group, kpg = pc.filters_per_group;
    const uint g = c / cpg, cl = c % cpg;
    float acc = pc.accumulate != 0 ? ELEMENT_AT(dx, OUT_TYPE, pc.first2 + index) : 0.0;
    const uint k_begin = pc.reduce_begin, k_end = min(pc.reduce_end, kpg);
    for (uint r = 0; r < R; ++r) {
        uint p;
        if (!tap_output(h, r, STRIDE_H, PAD_H, DIL_H, p) || p >= pc.P) continue;
        for (uint s = 0; s < S; ++s) {
            uint q;
            if (!tap_output(x, s, STRIDE_W, PAD_W, DIL_W, q) || q >= pc.Q) continue;
            for (uint kl = k_begin; kl < k_end; ++kl) {
                const uint k = g * kpg + kl;
                const uint yi = tensor_offset(NHWC, n, k, p, q, pc.K, pc.P, pc.Q);
                const uint wi = tensor_offset(NHWC, k, cl, r, s, cpg, R, S);
                acc += ELEMENT_AT(dy, A_TYPE, pc.first0 + yi) * ELEMENT_AT(w, B_TYPE, pc.first1 + wi);
            }
        }
    }
    STORE_ELEMENT(dx, OUT_TYPE, pc.first2 + index, acc);
}
