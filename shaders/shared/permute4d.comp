#version 450
// permute4d — out[i0][i1][i2][i3] = act(in[in_offset + i0*s0 + i1*s1 + i2*s2 + i3*s3] + beta * z[...]), one
// invocation per output element: any transpose of a 4-D array (OIHW -> OHWI filters; MEC Solution A's
// (P, N, Q, K) result into NHWC or NCHW, and z into (P, N, Q, K) order), with the part of the forward
// epilogue that MEC's Solution A applies where it writes y: the residual and the activation (alpha and the
// bias were applied by its GEMM). Without them (ACTIVATION 0, no residual) a plain move.
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 D1, 2 D2, 3 D3 (output extents; d0 follows from the
//   count). Constant extents turn the index arithmetic's divisions into multiplications, which matters on
//   CPU implementations where integer division is not vectorised. 4 ACTIVATION (../common/epilogue.glsl),
//   5 HAS_RESIDUAL (add beta * z[residual_offset + index] before the activation), 6 SRC_TYPE and 7 DST_TYPE
//   (element types, ../common/elements.glsl: a copy between equal types is exact; fp32 into 16 bits rounds once).
// Bindings: 0 in (readonly), 1 out (write), 2 the residual z (readonly; any buffer without HAS_RESIDUAL).
// Push constants: input strides s0..s3 of the output's dimensions, in_offset and out_offset (floats),
//   beta and negative_slope, residual_offset (floats from binding 2's start to the z element of output
//   element 0), then the dispatch's slice [base, base + count).
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

#extension GL_GOOGLE_include_directive : require
#include "../common/epilogue.glsl"
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint D1 = 1;
layout(constant_id = 2) const uint D2 = 1;
layout(constant_id = 3) const uint D3 = 1;
layout(constant_id = 4) const uint ACTIVATION = 0;
layout(constant_id = 5) const bool HAS_RESIDUAL = false;
layout(constant_id = 6) const uint SRC_TYPE = 0;
layout(constant_id = 7) const uint DST_TYPE = 0;  // and the residual's

layout(std430, binding = 0) readonly buffer InBuffer { ELEMENT_WORD src[]; };
#ifdef ELEMENTS_PACKED
layout(std430, binding = 1) buffer OutBuffer { ELEMENT_WORD dst[]; };  // (half-word stores are atomics)
#else
layout(std430, binding = 1) writeonly buffer OutBuffer { ELEMENT_WORD dst[]; };
#endif
layout(std430, binding = 2) readonly buffer ResidualBuffer { ELEMENT_WORD residual[]; };

layout(push_constant) uniform Params {
    uint s0, s1, s2, s3;
    uint in_offset, out_offset;
    float beta, negative_slope;
    uint residual_offset;
    uint base, count;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    uint t = index;
    const uint i3 = t % D3; t /= D3;
    const uint i2 = t % D2; t /= D2;
    const uint i1 = t % D1;
    const uint i0 = t / D1;
    float value = ELEMENT_AT(src, SRC_TYPE, pc.in_offset + i0 * pc.s0 + i1 * pc.s1 + i2 * pc.s2 + i3 * pc.s3);
    if (HAS_RESIDUAL) value += pc.beta * ELEMENT_AT(residual, DST_TYPE, pc.residual_offset + index);
    STORE_ELEMENT(dst, DST_TYPE, pc.out_offset + index, activate(ACTIVATION, value, pc.negative_slope));
}
