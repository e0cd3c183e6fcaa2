#version 450
// place_output — a transposed convolution's output where it reaches past the full result:
// y[n, k, h, w] = (h - TOP, w - LEFT inside the staged result ? staged[n, k, h - TOP, w - LEFT] : bias[k] or 0),
// the staged result being the backward-data pass's dx (rows x columns, the bias in it already) and y the
// output (P x Q). Values are copied, never rounded: staged, the bias and y share one element type.
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 NHWC (channels innermost; else NCHW), 2 HAS_BIAS,
//   3 TENSOR_TYPE (the three bindings' element type, ../common/elements.glsl).
// Bindings: 0 staged (readonly), 1 bias (readonly; any buffer without HAS_BIAS), 2 y (written).
// Push constants: first_staged, first_bias, first_y (element 0 of each binding, in elements), channels, P, Q,
//   rows, columns (the staged result's), top, left (where it sits in y), then the dispatch's slice
//   [base, base + count) of y's elements.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

#extension GL_GOOGLE_include_directive : require
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool NHWC = false;
layout(constant_id = 2) const bool HAS_BIAS = false;
layout(constant_id = 3) const uint TENSOR_TYPE = 0;

layout(std430, binding = 0) readonly buffer Staged { ELEMENT_WORD staged[]; };
layout(std430, binding = 1) readonly buffer Bias { ELEMENT_WORD bias[]; };
layout(std430, binding = 2) buffer Y { ELEMENT_WORD y[]; };

layout(push_constant) uniform Params {
    uint first_staged, first_bias, first_y;
    uint channels, P, Q;
    uint rows, columns, top, left;
    uint base, count;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    uint n, k, h, w;
    if (NHWC) {
        k = index % pc.channels;
        const uint pixel = index / pc.channels;
        w = pixel % pc.Q, h = (pixel / pc.Q) % pc.P, n = pixel / (pc.Q * pc.P);
    } else {
        w = index % pc.Q, h = (index / pc.Q) % pc.P;
        const uint plane = index / (pc.Q * pc.P);
        k = plane % pc.channels, n = plane / pc.channels;
    }
    float value = HAS_BIAS ? ELEMENT_AT(bias, TENSOR_TYPE, pc.first_bias + k) : 0.0;
    const int sh = int(h) - int(pc.top), sw = int(w) - int(pc.left);
    if (sh >= 0 && sh < int(pc.rows) && sw >= 0 && sw < int(pc.columns)) {
        const uint s = NHWC ? ((n * pc.rows + uint(sh)) * pc.columns + uint(sw)) * pc.channels + k
                            : ((n * pc.channels + k) * pc.rows + uint(sh)) * pc.columns + uint(sw);
        value = ELEMENT_AT(staged, TENSOR_TYPE, pc.first_staged + s);
    }
    STORE_ELEMENT(y, TENSOR_TYPE, pc.first_y + index, value);
}
