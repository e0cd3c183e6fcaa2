// gemm_common.glsl — what both GEMM kernels share: operand bindings for the three access paths, the
// push constants, and element addressing.
//
// C = alpha * A * B + beta * C (+ bias[n]), fp32, with every operand addressed through explicit strides:
//   A(m, k) = a[a_offset + mphys(m) + kphys(k)]
//   B(k, n) = b[b_offset + k * b_stride_k + n * b_stride_n]
//   C(m, n) = c[c_offset + m * c_stride_m + n * c_stride_n]
// so a transposed operand is only a swap of strides. kphys(k) = (k / a_k_segment) * a_k_segment_stride +
// (k % a_k_segment) * a_stride_k (k * a_stride_k without segments) lets A's reduction dimension skip gaps
// (MEC with vertical dilation reads R separate row segments of its lowered matrix) or run over two
// indices at once (MEC backward-filter reduces over output rows p and columns q of windows of L); mphys(m) = (m / a_m_segment) * a_m_segment_stride + (m % a_m_segment) *
// a_stride_m lets A's rows come from several overlapping windows (MEC: all output rows p of an image, each
// a window of Q rows, in one product). Two batch levels: dispatch z picks batch (i, j) = divmod(batch_base + z,
// batch_j_count) and every operand's offset moves by i * *_batch_i + j * *_batch_j (MEC's overlapping
// windows are just a batch stride smaller than the window).
//
// Access paths (chosen at build time, one SPIR-V per path):
//   ACCESS_SSBO            A and B are storage buffers, read as vec4[] (bindings 0, 2) or float[] (1, 3)
//   ACCESS_STORAGE_TEXEL   A and B are storage texel buffers: rgba32f views (0, 2) and r32f views (1, 3)
//   ACCESS_UNIFORM_TEXEL   A and B are uniform texel buffers (samplerBuffer), same binding split
// The vec4 bindings are used only where the host found the operand vec4-aligned (A_VEC4_K, A_VEC4_M,
// B_VEC4_K, B_VEC4_N); both views are always bound because both are statically used.
// Binding 4: C (storage buffer, read only when beta != 0 without a residual). Binding 5: bias (storage
// buffer). Binding 6: the residual (storage buffer, read only with HAS_RESIDUAL; it may be C's own memory).
// Built with ACCESS_SSBO and FOUR_BINDINGS (for devices that allow 4 storage buffers per stage): A's two
// views share binding 0 and B's binding 1, C is binding 2, and binding 3 holds the bias or the residual.
// With both, binding 3 holds the residual and the bias term is read from C, where the host first wrote the
// bias (engine/gemm/gemm.cpp: a K = 0 product, exact in any type).
//
// The epilogue, for each stored value v = (A * B)(m, n):
//   C(m, n) = act(alpha * v + beta * (HAS_RESIDUAL ? residual(m, n) : C(m, n)) + bias[n])
// with the beta term left out when beta == 0 and act the ACTIVATION (../common/epilogue.glsl) with slope
// negative_slope. The residual has C's strides: residual(m, n) = residual[index of C(m, n) + residual_shift]
// (modulo 2^32). It is the forward convolution's fused epilogue; the GEMM alone uses alpha, beta and bias.
//
// Specialization constants: one id map for both kernels. Ids 0 and 1 are the workgroup size in x (N) and
// y (M) (local_size_x_id, local_size_y_id), 2 TM and 3 TN the values per invocation in M and N (each
// kernel declares these four); the ones below are declared here; ids from 9 on are each kernel's own.
//   4 HAS_BIAS     add bias[bias_offset + n]
//   5 K_SEGMENTED, 6 M_SEGMENTED   A's k / m dimensions are segmented (a_k_segment, a_m_segment): without
//                  segments the divisions disappear (integer division costs tens of instructions on a GPU)
//   7 ACTIVATION   the activation applied to every stored value (0: none)
//   8 HAS_RESIDUAL beta scales the residual (binding 6) instead of C
//   9 A_TYPE, 10 B_TYPE, 11 C_TYPE, 12 BIAS_TYPE   the operands' element types (../common/elements.glsl; the
//                  residual is C's type): the 16-bit builds read and write any of them; the fp32 builds fp32 only
//
// 16-bit builds (ELEMENTS_16 or ELEMENTS_PACKED, with ACCESS_SSBO): every binding is an array of ELEMENT_WORD
// and each operand's offsets and strides count elements of its own type; a vec4 view reads the 4 elements
// from a multiple of 4. Products and sums stay fp32; each value of C is rounded to its type once, as stored.

#extension GL_EXT_control_flow_attributes : enable
#include "../common/epilogue.glsl"
#include "../common/elements.glsl"

layout(constant_id = 4) const bool HAS_BIAS = false;
layout(constant_id = 5) const bool K_SEGMENTED = false;
layout(constant_id = 6) const bool M_SEGMENTED = false;
layout(constant_id = 7) const uint ACTIVATION = 0;
layout(constant_id = 8) const bool HAS_RESIDUAL = false;
layout(constant_id = 9) const uint A_TYPE = 0;
layout(constant_id = 10) const uint B_TYPE = 0;
layout(constant_id = 11) const uint C_TYPE = 0;
layout(constant_id = 12) const uint BIAS_TYPE = 0;

#if (defined(ELEMENTS_16) || defined(ELEMENTS_PACKED)) && defined(ACCESS_SSBO)
// (The vec4 loads read quads of the scalar views' bindings, the same memory: bindings 0 and 2 go unread.)
#if defined(FOUR_BINDINGS)
layout(std430, binding = 0) readonly buffer AElements { ELEMENT_WORD a1[]; };
layout(std430, binding = 0) readonly buffer AQuads { ELEMENT_QUAD a_quads[]; };
layout(std430, binding = 1) readonly buffer BElements { ELEMENT_WORD b1[]; };
layout(std430, binding = 1) readonly buffer BQuads { ELEMENT_QUAD b_quads[]; };
#else
layout(std430, binding = 0) readonly buffer AVec4 { ELEMENT_WORD a4[]; };
layout(std430, binding = 1) readonly buffer AScalar { ELEMENT_WORD a1[]; };
layout(std430, binding = 1) readonly buffer AQuads { ELEMENT_QUAD a_quads[]; };
layout(std430, binding = 2) readonly buffer BVec4 { ELEMENT_WORD b4[]; };
layout(std430, binding = 3) readonly buffer BScalar { ELEMENT_WORD b1[]; };
layout(std430, binding = 3) readonly buffer BQuads { ELEMENT_QUAD b_quads[]; };
#endif
#define LOAD_A4(i) QUAD_AT(a_quads, A_TYPE, i)
#define LOAD_A1(i) ELEMENT_AT(a1, A_TYPE, i)
#define LOAD_B4(i) QUAD_AT(b_quads, B_TYPE, i)
#define LOAD_B1(i) ELEMENT_AT(b1, B_TYPE, i)
#elif defined(ELEMENTS_16) || defined(ELEMENTS_PACKED)
#error "the 16-bit builds read storage buffers (ACCESS_SSBO)"
#elif defined(ACCESS_SSBO) && defined(FOUR_BINDINGS)
layout(std430, binding = 0) readonly buffer AVec4 { vec4 a4[]; };
layout(std430, binding = 0) readonly buffer AScalar { float a1[]; };
layout(std430, binding = 1) readonly buffer BVec4 { vec4 b4[]; };
layout(std430, binding = 1) readonly buffer BScalar { float b1[]; };
#define LOAD_A4(i) a4[i]
#define LOAD_A1(i) a1[i]
#define LOAD_B4(i) b4[i]
#define LOAD_B1(i) b1[i]
#elif defined(ACCESS_SSBO)
layout(std430, binding = 0) readonly buffer AVec4 { vec4 a4[]; };
layout(std430, binding = 1) readonly buffer AScalar { float a1[]; };
layout(std430, binding = 2) readonly buffer BVec4 { vec4 b4[]; };
layout(std430, binding = 3) readonly buffer BScalar { float b1[]; };
#define LOAD_A4(i) a4[i]
#define LOAD_A1(i) a1[i]
#define LOAD_B4(i) b4[i]
#define LOAD_B1(i) b1[i]
#elif defined(ACCESS_STORAGE_TEXEL)
layout(binding = 0, rgba32f) uniform readonly imageBuffer a4;
layout(binding = 1, r32f) uniform readonly imageBuffer a1;
layout(binding = 2, rgba32f) uniform readonly imageBuffer b4;
layout(binding = 3, r32f) uniform readonly imageBuffer b1;
#define LOAD_A4(i) imageLoad(a4, int(i))
#define LOAD_A1(i) imageLoad(a1, int(i)).x
#define LOAD_B4(i) imageLoad(b4, int(i))
#define LOAD_B1(i) imageLoad(b1, int(i)).x
#elif defined(ACCESS_UNIFORM_TEXEL)
layout(binding = 0) uniform samplerBuffer a4;
layout(binding = 1) uniform samplerBuffer a1;
layout(binding = 2) uniform samplerBuffer b4;
layout(binding = 3) uniform samplerBuffer b1;
#define LOAD_A4(i) texelFetch(a4, int(i))
#define LOAD_A1(i) texelFetch(a1, int(i)).x
#define LOAD_B4(i) texelFetch(b4, int(i))
#define LOAD_B1(i) texelFetch(b1, int(i)).x
#else
#error "define one of ACCESS_SSBO, ACCESS_STORAGE_TEXEL, ACCESS_UNIFORM_TEXEL"
#endif

#if defined(FOUR_BINDINGS)
layout(std430, binding = 2) buffer CBuffer { ELEMENT_WORD c[]; };
layout(std430, binding = 3) readonly buffer BiasBuffer { ELEMENT_WORD bias[]; };
layout(std430, binding = 3) readonly buffer ResidualBuffer { ELEMENT_WORD residual[]; };
#else
layout(std430, binding = 4) buffer CBuffer { ELEMENT_WORD c[]; };
layout(std430, binding = 5) readonly buffer BiasBuffer { ELEMENT_WORD bias[]; };
layout(std430, binding = 6) readonly buffer ResidualBuffer { ELEMENT_WORD residual[]; };
#endif

layout(push_constant) uniform GemmParams {
    uint M, N, K;
    uint a_offset, a_stride_m, a_stride_k, a_batch_i, a_batch_j;
    uint b_offset, b_stride_k, b_stride_n, b_batch_i, b_batch_j;
    uint c_offset, c_stride_m, c_stride_n, c_batch_i, c_batch_j;
    uint batch_j_count, batch_base;
    uint a_k_segment, a_k_segment_stride;
    uint a_m_segment, a_m_segment_stride;
    float alpha, beta;
    uint bias_offset;
    float negative_slope;
    uint residual_shift;
} pc;

uint a_kphys(uint k) {
    return K_SEGMENTED ? (k / pc.a_k_segment) * pc.a_k_segment_stride + (k % pc.a_k_segment) * pc.a_stride_k
                       : k * pc.a_stride_k;
}
uint a_mphys(uint m) {
    return M_SEGMENTED ? (m / pc.a_m_segment) * pc.a_m_segment_stride + (m % pc.a_m_segment) * pc.a_stride_m
                       : m * pc.a_stride_m;
}

// Offsets of this dispatch's batch entry, in elements of each operand's type.
void batch_offsets(out uint a_base, out uint b_base, out uint c_base) {
    const uint batch = pc.batch_base + gl_WorkGroupID.z;
    const uint i = batch / pc.batch_j_count, j = batch % pc.batch_j_count;
    a_base = pc.a_offset + i * pc.a_batch_i + j * pc.a_batch_j;
    b_base = pc.b_offset + i * pc.b_batch_i + j * pc.b_batch_j;
    c_base = pc.c_offset + i * pc.c_batch_i + j * pc.c_batch_j;
}

// The epilogue: alpha, beta (C is read only when beta != 0 without a residual, so uninitialised output memory
// is fine), bias, activation.
void store_c(uint c_base, uint m, uint n, float value, bool with_bias) {
    const uint index = c_base + m * pc.c_stride_m + n * pc.c_stride_n;
    float result = pc.alpha * value;
    if (HAS_RESIDUAL)
        result += pc.beta * ELEMENT_AT(residual, C_TYPE, index + pc.residual_shift);
    else if (pc.beta != 0.0)
        result += pc.beta * ELEMENT_AT(c, C_TYPE, index);
#if defined(FOUR_BINDINGS)
    // Binding 3 holds the residual: the host wrote the bias into C first (exactly: K = 0), and it is added
    // from there, in the fused form's order.
    if (with_bias && HAS_RESIDUAL) result += ELEMENT_AT(c, C_TYPE, index);
    else if (with_bias) result += ELEMENT_AT(bias, BIAS_TYPE, pc.bias_offset + n);
#else
    if (with_bias) result += ELEMENT_AT(bias, BIAS_TYPE, pc.bias_offset + n);
#endif
    STORE_ELEMENT(c, C_TYPE, index, activate(ACTIVATION, result, pc.negative_slope));
}
