// winograd_transforms.glsl — the 1-D transforms of Winograd's minimal filtering F(m, 3) (Lavin & Gray 2016),
// applied to rows and then columns for F(m×m, 3×3): V = Bᵀ d B (input tile), U = G g Gᵀ (filter),
// y = Aᵀ M A (output tile). Written out term by term rather than as matrix products so that no multiply by a
// zero or a one is left for the compiler to keep (IEEE rules forbid folding x·0 away).
//
// Each works on vec4s: the shaders transform 4 channels (or filters) an invocation, so that every load and
// store of the transformed tensors is one aligned vec4 and the index arithmetic is shared by four values.
// The including shader defines WINOGRAD_M (2 or 4, the build variant), and gets:
//   WINOGRAD_ALPHA = m + 2 (the tile's side),  vec4[ALPHA] input_1d(vec4[ALPHA]),
//   vec4[ALPHA] filter_1d(vec4[3]),            vec4[M] output_1d(vec4[ALPHA]).
// The constants, for F(4, 3) with points 0, ±1, ±2, ∞:
//   Bᵀ = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   G  = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   Aᵀ = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
// and for F(2, 3) with points 0, ±1, ∞:
//   Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
//   Aᵀ = [1 1 1 0; 0 1 -1 -1].
// engine/conv/winograd/winograd.hpp holds the same matrices for the error bound; the tests check both against
// a double-precision reference.

#ifndef VKCONV_WINOGRAD_TRANSFORMS_GLSL
#define VKCONV_WINOGRAD_TRANSFORMS_GLSL

#if WINOGRAD_M == 4
#define WINOGRAD_ALPHA 6

vec4[6] input_1d(vec4[6] d) {
    return vec4[6](4.0 * d[0] - 5.0 * d[2] + d[4],
                    -4.0 * (d[1] + d[2]) + d[3] + d[4],
                    4.0 * (d[1] - d[2]) - d[3] + d[4],
                    2.0 * (d[3] - d[1]) - d[2] + d[4],
                    2.0 * (d[1] - d[3]) - d[2] + d[4],
                    4.0 * d[1] - 5.0 * d[3] + d[5]);
}

vec4[6] filter_1d(vec4[3] g) {
    const float sixth = 1.0 / 6.0, twelfth = 1.0 / 12.0, twenty_fourth = 1.0 / 24.0;
    return vec4[6](0.25 * g[0],
                    -sixth * (g[0] + g[1] + g[2]),
                    -sixth * (g[0] - g[1] + g[2]),
                    twenty_fourth * g[0] + twelfth * g[1] + sixth * g[2],
                    twenty_fourth * g[0] - twelfth * g[1] + sixth * g[2],
                    g[2]);
}

vec4[4] output_1d(vec4[6] m) {
    const vec4 p12 = m[1] + m[2], m12 = m[1] - m[2], p34 = m[3] + m[4], m34 = m[3] - m[4];
    return vec4[4](m[0] + p12 + p34,
                    m12 + 2.0 * m34,
                    p12 + 4.0 * p34,
                    m12 + 8.0 * m34 + m[5]);
}

#elif WINOGRAD_M == 2
#define WINOGRAD_ALPHA 4

vec4[4] input_1d(vec4[4] d) {
    return vec4[4](d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]);
}

vec4[4] filter_1d(vec4[3] g) {
    return vec4[4](g[0], 0.5 * (g[0] + g[1] + g[2]), 0.5 * (g[0] - g[1] + g[2]), g[2]);
}

vec4[2] output_1d(vec4[4] m) {
    return vec4[2](m[0] + m[1] + m[2], m[1] - m[2] - m[3]);
}

#else
#error "WINOGRAD_M must be 2 or 4"
#endif

#endif
