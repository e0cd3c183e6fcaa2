// mec_spec_geometry.glsl — the specialization constants 1..13 of MEC's lowered layout L[g][n][q][h][s][c],
// which mec_lower (writes L) and mec_gather (reads its gradient dL) declare with these very ids:
//
//   1 S, 2 STRIDE_W, 3 PAD_H, 4 PAD_W, 5 DIL_W   the column geometry (rows are the GEMM's job: no R,
//                                                 STRIDE_H, DIL_H here), plus PAD_H for the lowered rows
//   6 NHWC                                        x (or dx) is NHWC, else NCHW
//   7 C, 8 H, 9 W, 10 CG (channels per group), 11 Q, 12 HL (lowered rows), 13 IMAGES (in the chunk)
//
// Id 0 is the including shader's workgroup size (local_size_x_id = 0); its own constants follow from 14.
// Sizes are constants so the index arithmetic divides by constants. The ids are literal numbers on purpose:
// cmake/shader_contracts.cmake reads them from the text into contract::mec_lower::spec and
// contract::mec_gather::spec. This is not conv_spec_geometry.glsl's block (other names at other ids).
//
// Included as "../common/mec_spec_geometry.glsl" (with GL_GOOGLE_include_directive); the guard makes a
// second include harmless.

#ifndef VKCONV_MEC_SPEC_GEOMETRY_GLSL
#define VKCONV_MEC_SPEC_GEOMETRY_GLSL

layout(constant_id = 1) const uint S = 1;
layout(constant_id = 2) const uint STRIDE_W = 1;
layout(constant_id = 3) const uint PAD_H = 0;
layout(constant_id = 4) const uint PAD_W = 0;
layout(constant_id = 5) const uint DIL_W = 1;
layout(constant_id = 6) const bool NHWC = false;
layout(constant_id = 7) const uint C = 1;
layout(constant_id = 8) const uint H = 1;
layout(constant_id = 9) const uint W = 1;
layout(constant_id = 10) const uint CG = 1;
layout(constant_id = 11) const uint Q = 1;
layout(constant_id = 12) const uint HL = 1;
layout(constant_id = 13) const uint IMAGES = 1;

#endif
