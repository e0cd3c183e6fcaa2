#version 450
// add_bias — y[i] += bias[channel of i] over a tensor of N images of CHANNELS channels, PLANE pixels each:
// the bias of a transposed convolution, added where its backward-data pass has written the output.
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 NHWC (channels innermost; else NCHW, planes of PLANE).
// Bindings: 0 bias (readonly), 1 y (read and written).
// Push constants: first_y, first_bias (element 0 of each binding, in floats), channels, plane, origin (the
//   tensor index of the bound part's element 0: a paged tensor is added to one page at a time), then the
//   dispatch's slice [base, base + count) of the bound part's elements.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool NHWC = false;

layout(std430, binding = 0) readonly buffer Bias { float bias[]; };
layout(std430, binding = 1) buffer Y { float y[]; };

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
    y[pc.first_y + index] += bias[pc.first_bias + channel];
}
