// direct_sizes.glsl — the push constants of the direct backward shaders (conv2d_backward_data_direct and
// conv2d_backward_filter_direct), one block as the host has one struct for both (DirectSizes in
// engine/conv/constants.hpp, checked against each shader's offsets by VKCONV_PUSH_SIZE / VKCONV_PUSH_MEMBER):
//
//   N C H W K P Q                      the problem's sizes
//   channels_per_group, filters_per_group
//   reduce_begin, reduce_end           the piece of the reduction this dispatch adds (what it runs over, the
//                                      including shader says), accumulate (0: write the piece; 1: add it)
//   first0 .. first3                   element 0 of binding i, in floats from the binding's start
//   base, count                        the dispatch's slice [base, base + count) of the output
//
// cmake/shader_contracts.cmake reads the block through the include into contract::<shader>::push.
// Included as "../common/direct_sizes.glsl" (with GL_GOOGLE_include_directive); the guard makes a second
// include harmless.

#ifndef VKCONV_DIRECT_SIZES_GLSL
#define VKCONV_DIRECT_SIZES_GLSL

layout(push_constant) uniform Params {
    uint N, C, H, W, K, P, Q;
    uint channels_per_group, filters_per_group;
    uint reduce_begin, reduce_end, accumulate;
    uint first0, first1, first2, first3;  // element 0 of binding i, in floats from the binding's start
    uint base, count;
} pc;

#endif
