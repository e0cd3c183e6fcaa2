// conv_geometry.glsl — how output positions, filter taps and input positions of a convolution relate along
// one axis (rows or columns):
//
//   input = output * stride + tap * dilation - padding
//
// forwards (the input position a tap of an output reads: forward passes, lowerings, backward-filter) and
// backwards (the output a tap feeds from an input position: the gathers of backward-data). Every shader
// with a filter copied this arithmetic for both axes; here it is once, for one axis at a time.
//
// Stride, padding and dilation come in as parameters (each shader passes its own STRIDE_H, PAD_H, DIL_H or
// the W ones, usually specialization constants). Input positions are signed: they are negative in the
// top or left padding; check them with in_range (tensor_index.glsl). Integer arithmetic only, equal to
// the copies it replaced.
//
// Shaders include it as "../common/conv_geometry.glsl" (with GL_GOOGLE_include_directive); the
// guard makes a second include, say through depthwise_common.glsl, harmless.

#ifndef VKCONV_CONV_GEOMETRY_GLSL
#define VKCONV_CONV_GEOMETRY_GLSL

// The input position that tap `tap` of output position `out_pos` reads (may lie in the padding).
int tap_input(uint out_pos, uint tap, uint stride, uint pad, uint dil) {
    return int(out_pos * stride + tap * dil) - int(pad);
}

// The input position of tap 0 of output `out_pos`: where its window starts (may lie in the padding).
int window_origin(uint out_pos, uint stride, uint pad) {
    return int(out_pos * stride) - int(pad);
}

// Whether tap `tap` of some output reads input position `in_pos`, and that output (0 when none): in_pos +
// pad - tap * dil must be a non-negative multiple of the stride. Only taps with an exact division reach,
// so a gather skips the others; the caller checks out_pos against the outputs it covers.
bool tap_output(uint in_pos, uint tap, uint stride, uint pad, uint dil, out uint out_pos) {
    const int t = int(in_pos + pad) - int(tap * dil);  // out_pos * stride when the tap reaches in_pos
    const bool reaches = t >= 0 && uint(t) % stride == 0;
    out_pos = reaches ? uint(t) / stride : 0;
    return reaches;
}

#endif
