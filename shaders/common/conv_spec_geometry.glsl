// conv_spec_geometry.glsl — the convolution's fixed geometry as specialization constants 1..9, the block
// that the direct, im2col/col2im and depthwise shaders all declare with these very ids:
//
//   1 R, 2 S           kernel height, width
//   3 STRIDE_H, 4 STRIDE_W, 5 PAD_H, 6 PAD_W, 7 DIL_H, 8 DIL_W
//   9 NHWC             tensors NHWC (else NCHW); what that means for each operand, the including shader says
//
// Id 0 is left to the including shader (its workgroup size, local_size_x_id = 0), and its own constants
// follow from 10. The ids are written as literal numbers on purpose: cmake/shader_contracts.cmake reads them
// from the text (this file too, through the include) into the host's contract::<shader>::spec, so they
// cannot come from a macro. The implicit-GEMM shaders declare the same names at ids 4..12 and MEC a subset
// at other ids, so they keep their own declarations.
//
// Shaders include it as "../common/conv_spec_geometry.glsl" (with GL_GOOGLE_include_directive); the guard
// makes a second include harmless.

#ifndef VKCONV_CONV_SPEC_GEOMETRY_GLSL
#define VKCONV_CONV_SPEC_GEOMETRY_GLSL

layout(constant_id = 1) const uint R = 1;
layout(constant_id = 2) const uint S = 1;
layout(constant_id = 3) const uint STRIDE_H = 1;
layout(constant_id = 4) const uint STRIDE_W = 1;
layout(constant_id = 5) const uint PAD_H = 0;
layout(constant_id = 6) const uint PAD_W = 0;
layout(constant_id = 7) const uint DIL_H = 1;
layout(constant_id = 8) const uint DIL_W = 1;
layout(constant_id = 9) const bool NHWC = false;

#endif
