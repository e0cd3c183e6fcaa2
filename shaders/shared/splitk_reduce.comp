#version 450
// splitk_reduce — out[i] = beta * out[i] + sum over s < SPLITS of partial[s * stride + i], in order of s: the
// fixed-order second half of a deterministic split-K (each split's GEMM wrote its partial product). With
// beta 0, out is never read (it may hold anything, NaN included).
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 OUT_TYPE (out's element type, ../common/elements.glsl: the
//   16-bit builds round each sum once as they write it; partial is always fp32).
// Bindings: 0 partial (readonly), 1 out (read unless beta is 0, written).
// Push constants: out_offset (elements of out's type), stride (floats between splits), splits, beta, then the
//   dispatch's slice [base, base + count) of the output.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

#extension GL_GOOGLE_include_directive : require
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint OUT_TYPE = 0;

layout(std430, binding = 0) readonly buffer Partial { float partial[]; };
layout(std430, binding = 1) buffer Out { ELEMENT_WORD dst[]; };

layout(push_constant) uniform Params {
    uint out_offset;
    uint stride;
    uint splits;
    float beta;
    uint base, count;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    float acc = pc.beta != 0.0 ? pc.beta * ELEMENT_AT(dst, OUT_TYPE, pc.out_offset + index) : 0.0;
    for (uint s = 0; s < pc.splits; ++s) acc += partial[s * pc.stride + index];
    STORE_ELEMENT(dst, OUT_TYPE, pc.out_offset + index, acc);
}
