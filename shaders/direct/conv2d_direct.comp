#version 450
// conv2d_direct — direct forward 2-D convolution, one invocation per output value.
//
// The GPU baseline the lowered algorithms are checked and timed against: no workspace, every parameter
// (stride, padding, dilation, groups, both layouts, bias) handled by plain index arithmetic.
//
// Specialization constants (fixed conv geometry, so loop bounds and strides fold into the code; 1..9 are
//   declared in ../common/conv_spec_geometry.glsl, shared with the im2col and depthwise shaders):
//   0 WORKGROUP_SIZE   invocations per workgroup (local_size_x_id)
//   1 R, 2 S           kernel height, width
//   3 STRIDE_H, 4 STRIDE_W, 5 PAD_H, 6 PAD_W, 7 DIL_H, 8 DIL_W
//   9 NHWC             0: x NCHW, w OIHW, y NCHW;  1: x NHWC, w OHWI, y NHWC
//  10 HAS_BIAS
//  11 ACTIVATION       the epilogue's activation (../common/epilogue.glsl), applied by the last piece
//  12 HAS_RESIDUAL     the epilogue reads the residual z (binding 4), in the first piece
//  13 X_TYPE, 14 W_TYPE, 15 BIAS_TYPE, 16 Y_TYPE, 17 Z_TYPE   each binding's element type (0 fp32, 1 fp16,
//                      2 bf16; ../common/elements.glsl), read in the 16-bit builds (ELEMENTS_16, ELEMENTS_PACKED)
// Bindings: 0 x (readonly), 1 w (readonly), 2 bias (readonly; any buffer when HAS_BIAS is 0), 3 y (write),
//   4 the residual z (readonly; any buffer when HAS_RESIDUAL is 0; may be y's own memory, read before the
//   value is written). Built with RESIDUAL_IN_OUTPUT (the variant for devices that allow 4 storage buffers
//   per stage), binding 4 is left out: the host has copied z into y, and the first piece reads it there.
// Push constants (with first0..first4: element 0 of each binding, in elements of its type from its start): sizes N C H W K P
//   Q, channels and filters per group, the piece of the reduction [reduce_begin, reduce_end) (channels within
//   the group) and accumulate (long reductions run in pieces, see engine/vulkan/shader_limits.hpp), the
//   epilogue's alpha, beta and negative_slope, and the dispatch's slice of the output [base, base + count):
//   large outputs are split over several dispatches so no dispatch exceeds maxComputeWorkGroupCount.
// The epilogue, y = act(alpha * sum + bias + beta * z), over the pieces: the first (accumulate 0) starts from
//   bias + beta * z, every piece adds alpha * (its sum), the last (reduce_end reaching the group's channels)
//   applies the activation. With alpha == 1 the piece's terms are added straight onto the running value, in
//   the order the plain convolution adds them.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1). Invocation i computes the output at linear index
//   base + i in the output's own layout, so consecutive invocations write consecutive addresses.

#extension GL_GOOGLE_include_directive : require
#include "../common/tensor_index.glsl"
#include "../common/conv_geometry.glsl"
#include "../common/conv_spec_geometry.glsl"  // specialization constants 1..9: R .. NHWC
#include "../common/epilogue.glsl"
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 10) const bool HAS_BIAS = false;
layout(constant_id = 11) const uint ACTIVATION = 0;
layout(constant_id = 12) const bool HAS_RESIDUAL = false;
layout(constant_id = 13) const uint X_TYPE = 0;
layout(constant_id = 14) const uint W_TYPE = 0;
layout(constant_id = 15) const uint BIAS_TYPE = 0;
layout(constant_id = 16) const uint Y_TYPE = 0;
layout(constant_id = 17) const uint Z_TYPE = 0;

layout(std430, binding = 0) readonly buffer InputBuffer { ELEMENT_WORD x[]; };
layout(std430, binding = 1) readonly buffer FilterBuffer { ELEMENT_WORD w[]; };
layout(std430, binding = 2) readonly buffer BiasBuffer { ELEMENT_WORD bias[]; };
layout(std430, binding = 3) buffer OutputBuffer { ELEMENT_WORD y[]; };
#ifndef RESIDUAL_IN_OUTPUT
layout(std430, binding = 4) readonly buffer ResidualBuffer { ELEMENT_WORD residual[]; };
#define RESIDUAL_AT(i) ELEMENT_AT(residual, Z_TYPE, pc.first4 + (i))
#else
#define RESIDUAL_AT(i) ELEMENT_AT(y, Y_TYPE, pc.first3 + (i))
#endif

layout(push_constant) uniform Params {
    uint N, C, H, W, K, P, Q;
    uint channels_per_group, filters_per_group;
    uint reduce_begin, reduce_end, accumulate;
    uint first0, first1, first2, first3, first4;  // element 0 of binding i, in elements from the binding's start
    float alpha, beta, negative_slope;
    uint base, count;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;

    uint n, k, p, q;
    tensor_coords(NHWC, index, pc.K, pc.P, pc.Q, n, k, p, q);
    const uint cpg = pc.channels_per_group;
    const uint c0 = (k / pc.filters_per_group) * cpg;
    // Top-left tap in input coordinates; may be negative (padding), hence int.
    const int h0 = window_origin(p, STRIDE_H, PAD_H);
    const int w0 = window_origin(q, STRIDE_W, PAD_W);

    // The running value: y so far, or (first piece) the bias and the residual.
    float start;
    if (pc.accumulate != 0) {
        start = ELEMENT_AT(y, Y_TYPE, pc.first3 + index);
    } else {
        start = HAS_BIAS ? ELEMENT_AT(bias, BIAS_TYPE, pc.first2 + k) : 0.0;
        if (HAS_RESIDUAL) start += pc.beta * RESIDUAL_AT(index);
    }
    const bool unscaled = pc.alpha == 1.0;
    float acc = unscaled ? start : 0.0;
    const uint c_begin = pc.reduce_begin, c_end = min(pc.reduce_end, cpg);
    // Neighbouring channels of x and w: next to each other in NHWC and OHWI, a plane apart in NCHW and OIHW.
    const uint x_step = channel_stride(NHWC, pc.H, pc.W), w_step = channel_stride(NHWC, R, S);
    for (uint r = 0; r < R; ++r) {
        const int ih = h0 + int(r * DIL_H);
        if (!in_range(ih, pc.H)) continue;
        for (uint s = 0; s < S; ++s) {
            const int iw = w0 + int(s * DIL_W);
            if (!in_range(iw, pc.W)) continue;
            const uint xi = pc.first0 + tensor_offset(NHWC, n, c0, uint(ih), uint(iw), pc.C, pc.H, pc.W);
            const uint wi = pc.first1 + tensor_offset(NHWC, k, 0, r, s, cpg, R, S);
            for (uint c = c_begin; c < c_end; ++c)
                acc += ELEMENT_AT(x, X_TYPE, xi + c * x_step) * ELEMENT_AT(w, W_TYPE, wi + c * w_step);
        }
    }
    const float value = unscaled ? acc : start + pc.alpha * acc;
    STORE_ELEMENT(y, Y_TYPE, pc.first3 + index,
                  pc.reduce_end >= cpg ? activate(ACTIVATION, value, pc.negative_slope) : value);
}
