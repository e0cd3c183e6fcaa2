#version 450
// conv2d_backward_filter_direct — dw from x and dy, one invocation per dw value.
//
// dw[k][c][r][s] = sum over n, p, q of x[n][g*Cg + c][p*sh - ph + r*dh][q*sw - pw + s*dw] * dy[n][k][p][q],
// reduced by one invocation in a fixed order: deterministic, and the baseline the GEMM-based
// algorithms are checked against. (The bias gradient is bias_grad.comp.)
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 R, 2 S, 3 STRIDE_H, 4 STRIDE_W, 5 PAD_H, 6 PAD_W,
//   7 DIL_H, 8 DIL_W, 9 NHWC. 1..9 are declared in ../common/conv_spec_geometry.glsl, shared with the
//   other direct, im2col and depthwise shaders.
//  10 A_TYPE, 11 B_TYPE, 12 OUT_TYPE: the element types of bindings 0, 1 and 2 (0 fp32, 1 fp16, 2 bf16;
//   ../common/elements.glsl), read in the 16-bit builds (ELEMENTS_16, ELEMENTS_PACKED).
// Bindings: 0 x (readonly), 1 dy (readonly), 2 dw (write).
// Push constants (../common/direct_sizes.glsl, shared with conv2d_backward_data_direct; first0..first3:
//   element 0 of each binding, in elements of its type from its start): N C H W K P Q, channels and filters per group, the piece of the reduction
//   [reduce_begin, reduce_end) (positions n*P*Q + p*Q + q) and accumulate (0: dw = piece; 1: dw += piece;
//   see engine/vulkan/shader_limits.hpp), then the dispatch's slice [base, base + count) of dw.
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

layout(std430, binding = 0) readonly buffer Input { ELEMENT_WORD x[]; };
layout(std430, binding = 1) readonly buffer GradOutput { ELEMENT_WORD dy[]; };
layout(std430, binding = 2) buffer GradFilter { ELEMENT_WORD dw[]; };

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    const uint cpg = pc.channels_per_group;
    uint k, c, r, s;
    tensor_coords(NHWC, index, cpg, R, S, k, c, r, s);
    const uint channel = (k / pc.filters_per_group) * cpg + c;
    float acc = pc.accumulate != 0 ? ELEMENT_AT(dw, OUT_TYPE, pc.first2 + index) : 0.0;
    // One loop over the piece's positions, the coordinates stepped along (no division per position).
    const uint PQ = pc.P * pc.Q;
    uint n = pc.reduce_begin / PQ, p = pc.reduce_begin % PQ / pc.Q, q = pc.reduce_begin % pc.Q;
    for (uint position = pc.reduce_begin; position < pc.reduce_end; ++position) {
        const int ih = tap_input(p, r, STRIDE_H, PAD_H, DIL_H);
        const int iw = tap_input(q, s, STRIDE_W, PAD_W, DIL_W);
        if (in_range(ih, pc.H) && in_range(iw, pc.W)) {
            const uint xi = pc.first0 + tensor_offset(NHWC, n, channel, uint(ih), uint(iw), pc.C, pc.H, pc.W);
            acc += ELEMENT_AT(x, A_TYPE, xi) *
                   ELEMENT_AT(dy, B_TYPE, pc.first1 + tensor_offset(NHWC, n, k, p, q, pc.K, pc.P, pc.Q));
        }
        if (++q == pc.Q) {
            q = 0;
            if (++p == pc.P) {
                p = 0;
                ++n;
            }
        }
    }
    STORE_ELEMENT(dw, OUT_TYPE, pc.first2 + index, acc);
}
