#version 450
// add_bias — y[i] += bias[channel of i] (or, with OVERWRITE, y[i] = bias[channel of i]) over a tensor of
// N images of CHANNELS channels, PLANE pixels each: the bias of a transposed convolution. Its backward-data
// pass then adds its sums into the bias placed in dx, so each value is rounded once (OVERWRITE); tiles and
// slices, which write dx in parts, add the bias once dx is whole.
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 NHWC (channels innermost; else NCHW, planes of PLANE),
//   2 OVERWRITE, 3 BIAS_TYPE, 4 Y_TYPE (element types, ../common/elements.glsl).
// Bindings: 0 bias (readonly), 1 y (read and written).
// Push constants: first_y, first_bias (element 0 of each binding, in elements), channels, plane, origin (the
//   tensor index of the bound part's element 0: a paged tensor is added to one page at a time), then the
//   dispatch's slice [base, base + count) of the bound part's elements.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

#extension GL_GOOGLE_include_directive : require
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool NHWC = false;
layout(constant_id = 2) const bool OVERWRITE = false;
layout(constant_id = 3) const uint BIAS_TYPE = 0;
layout(constant_id = 4) const uint Y_TYPE = 0;

layout(std430, binding = 0) readonly buffer Bias { ELEMENT_WORD bias[]; };
layout(std430, binding = 1) buffer Y { ELEMENT_WORD y[]; };

layout(push_constant) uniform Params {
    uint first_y, first_bias;
    uint channels, plane, origin;
    uint base, count;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    const uint at = pc.origin + index;
    const uint channel = NHWC ? at % pc.channels : (at / pc.plane) % pc.channels;
    const float b = ELEMENT_AT(bias, BIAS_TYPE, pc.first_bias + channel);
    const uint yi = pc.first_y + index;
    STORE_ELEMENT(y, Y_TYPE, yi, OVERWRITE ? b : ELEMENT_AT(y, Y_TYPE, yi) + b);
}
