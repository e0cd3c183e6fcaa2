#version 450
// winograd_filter — the filter transform of Winograd's F(m×m, 3×3), U = G g Gᵀ (winograd_transforms.glsl), one
// invocation per (group, output channel, 4 input channels) of the convolution the transform serves.
//
// Forward: output channel o = filter k, input channel i = channel c, g = w[g·KG + k][c] as given.
// Backward-data (TRANSPOSED): dx = a forward pass over dy with the filter rotated by 180° and transposed in
//   each group, so o = c, i = k and g(r, s) = w[g·KG + k][c](2 - r, 2 - s).
// U is stored [ξ][g][o4][i4] (o and i rounded up to 4, the extra ones zero): each ξ, g is the GEMM's operand B =
// U(i, o) with contiguous, vec4-aligned columns, and its product has vec4-aligned rows for winograd_output.
//
// Built as winograd_filter_f4 (WINOGRAD_M 4) and winograd_filter_f2 (WINOGRAD_M 2), each also as _texel
// (ACCESS_TEXEL): w read through a texel view of quads (rgba32f, or R16G16B16A16_UINT of the 16-bit bits), 9
// fetches an invocation instead of 36 element loads. On lavapipe each storage-buffer load is a scalar access per
// SIMD lane and these loads were most of the transform's time (cv12 at batch 1: 2.8 of 3.5 ms; 0.7 ms with
// the texel build). The host takes it (WinogradPlan::filter_texels) for a forward pass whose channels per group
// are a multiple of 4 and whose w starts on a quad: then the four channels of an invocation are one quad
// (OHWI), or its 36 taps 9 consecutive quads (OIHW).
// Specialization constants: 0 WORKGROUP_SIZE, 1 NHWC (w OHWI, else OIHW), 2 CG (the filter's channels per
//   group), 3 KG (its filters per group), 4 GROUPS, 5 TRANSPOSED, 6 OUT_G (o per group: KG, or CG when
//   TRANSPOSED), 7 IN_G (i per group: CG, or KG), 8 IN_G4 (IN_G rounded up to 4), 9 OUT_G4 (OUT_G rounded up),
//   10 TENSOR_TYPE (w's element type; U is fp32).
// Bindings: 0 w (read: a storage buffer, or in the _texel builds a uniform texel buffer of quads), 1 U (write).
// Push constants: w_offset (elements from the binding's start to w's element 0), then the dispatch's slice
//   [base, base + count) of the GROUPS · OUT_G4 · IN_G4 / 4 invocations.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1), split by the host past maxComputeWorkGroupCount.

#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "winograd_transforms.glsl"
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const bool NHWC = false;
layout(constant_id = 2) const uint CG = 1;
layout(constant_id = 3) const uint KG = 1;
layout(constant_id = 4) const uint GROUPS = 1;
layout(constant_id = 5) const bool TRANSPOSED = false;
layout(constant_id = 6) const uint OUT_G = 1;
layout(constant_id = 7) const uint IN_G = 1;
layout(constant_id = 8) const uint IN_G4 = 4;
layout(constant_id = 9) const uint OUT_G4 = 4;
layout(constant_id = 10) const uint TENSOR_TYPE = 0;  // w's element type (../common/elements.glsl)

#if defined(ACCESS_TEXEL) && (defined(ELEMENTS_16) || defined(ELEMENTS_PACKED))
layout(binding = 0) uniform usamplerBuffer w_quads;
#define W_QUAD(q) decode16x4(TENSOR_TYPE, texelFetch(w_quads, int(q)))
#elif defined(ACCESS_TEXEL)
layout(binding = 0) uniform samplerBuffer w_quads;
#define W_QUAD(q) texelFetch(w_quads, int(q))
#else
layout(std430, binding = 0) readonly buffer FilterBuffer { ELEMENT_WORD w[]; };
#endif
layout(std430, binding = 1) writeonly buffer TransformBuffer { vec4 u[]; };

layout(push_constant) uniform Params {
    uint w_offset;
    uint base, count;
} pc;

const uint ALPHA = WINOGRAD_ALPHA;

#if defined(ACCESS_TEXEL)
// The taps of output channel o (zero past OUT_G), input channels i0 .. i0 + 3 of group g, from whole quads.
void load_taps(uint g, uint o, uint i0, out vec4 taps[3][3]) {
    if (o >= OUT_G) {  // padding: zero columns of B
        [[unroll]] for (uint r = 0; r < 3; ++r) [[unroll]] for (uint s = 0; s < 3; ++s) taps[r][s] = vec4(0.0);
        return;
    }
    const uint k = g * KG + o, q_offset = pc.w_offset / 4;
    if (NHWC) {  // OHWI: the four channels of tap (r, s) are one quad
        [[unroll]] for (uint r = 0; r < 3; ++r)
            [[unroll]] for (uint s = 0; s < 3; ++s) taps[r][s] = W_QUAD(q_offset + (((k * 3 + r) * 3 + s) * CG + i0) / 4);
        return;
    }
    // OIHW: the four channels' 36 taps are 9 consecutive quads, channel j's tap (r, s) element 9j + 3r + s.
    float flat_taps[36];
    const uint q0 = q_offset + (k * CG + i0) * 9 / 4;
    [[unroll]] for (uint q = 0; q < 9; ++q) {
        const vec4 quad = W_QUAD(q0 + q);
        [[unroll]] for (uint e = 0; e < 4; ++e) flat_taps[q * 4 + e] = quad[e];
    }
    [[unroll]] for (uint r = 0; r < 3; ++r)
        [[unroll]] for (uint s = 0; s < 3; ++s)
            [[unroll]] for (uint j = 0; j < 4; ++j) taps[r][s][j] = flat_taps[j * 9 + r * 3 + s];
}
#else
// Tap (r, s) of filter k (in the whole tensor), channel c (within its group).
float tap(uint k, uint c, uint r, uint s) {
    const uint at = NHWC ? ((k * 3 + r) * 3 + s) * CG + c : ((k * CG + c) * 3 + r) * 3 + s;
    return ELEMENT_AT(w, TENSOR_TYPE, pc.w_offset + at);
}

// The taps of output channel o, input channels i0 .. i0 + 3 of group g (zero past OUT_G and IN_G), one by one.
void load_taps(uint g, uint o, uint i0, out vec4 taps[3][3]) {
    [[unroll]] for (uint r = 0; r < 3; ++r) {
        [[unroll]] for (uint s = 0; s < 3; ++s) {
            [[unroll]] for (uint j = 0; j < 4; ++j) {
                const uint in_channel = i0 + j;
                if (in_channel >= IN_G || o >= OUT_G) taps[r][s][j] = 0.0;  // padding: zero rows and columns of B
                else if (TRANSPOSED) taps[r][s][j] = tap(g * KG + in_channel, o, 2 - r, 2 - s);
                else taps[r][s][j] = tap(g * KG + o, in_channel, r, s);
            }
        }
    }
}
#endif

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint index = pc.base + i;
    const uint quads = IN_G4 / 4;
    const uint i0 = (index % quads) * 4;
    const uint o = (index / quads) % OUT_G4;
    const uint g = index / (quads * OUT_G4);

    vec4 taps[3][3];  // component j: input channel i0 + j
    load_taps(g, o, i0, taps);
    // G g: down the columns, then (G g) Gᵀ along the rows.
    vec4 gg[ALPHA][3];
    [[unroll]] for (uint s = 0; s < 3; ++s) {
        const vec4[ALPHA] column = filter_1d(vec4[3](taps[0][s], taps[1][s], taps[2][s]));
        [[unroll]] for (uint r = 0; r < ALPHA; ++r) gg[r][s] = column[r];
    }
    const uint plane = GROUPS * OUT_G4 * quads;  // vec4s from one transform position ξ to the next
    [[unroll]] for (uint r = 0; r < ALPHA; ++r) {
        const vec4[ALPHA] row = filter_1d(gg[r]);
        [[unroll]] for (uint s = 0; s < ALPHA; ++s) u[(r * ALPHA + s) * plane + index] = row[s];
    }
}
