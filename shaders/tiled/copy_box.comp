#version 450
// copy_box — dst box (+)= src box, one element an invocation: the tiled path's copies between one image of
// a tensor too large to bind whole and a compact tile in the workspace, in either direction.
//
// A box is channels [c0, c0 + box_c) x rows [h0, h0 + box_h) x columns [0, box_w) of one image in the
// problem's layout. Source positions outside the source image (a row or channel below 0 or past its
// extent) read as zero: the padding rows a tile carries instead of asymmetric padding.
// Each destination element is written by one invocation: no atomics, deterministic.
//
// Copying a forward tile's result into y, it applies the part of the forward epilogue that is applied where
// y is written: dst = act(value + beta * z), z the residual at the destination's position (the tile's pass
// applied alpha and the bias). Without it (ACTIVATION 0, no residual) a plain copy or sum.
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 NHWC (0: NCHW order, w fastest; 1: NHWC, c fastest),
//   2 ACTIVATION (../common/epilogue.glsl), 3 HAS_RESIDUAL (add beta * z before the activation),
//   4 SRC_TYPE, 5 DST_TYPE (the element types of src and of dst and z, ../common/elements.glsl; the 16-bit
//   builds round each written value once).
// Bindings: 0 src (readonly), 1 dst (read when accumulating, written), 2 the residual z, laid out as dst
//   (readonly; any buffer without HAS_RESIDUAL; may be dst's own memory, read before the value is written).
// Push constants: box_c, box_h, box_w; src_c, src_h, src_w (the source image's extents), src_c0, src_h0
//   (the box's origin in it, signed), src_shift (added, modulo 2^32, to an image-relative index to give
//   the binding's index: the window's delta minus its first index); the same five for dst; accumulate
//   (0/1); residual_shift (dst's image-relative index to binding 2's index), beta and negative_slope; then
//   the dispatch's slice [base, base + count) of the box's elements.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

#extension GL_GOOGLE_include_directive : require
#include "../common/tensor_index.glsl"
#include "../common/epilogue.glsl"
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint NHWC = 0;
layout(constant_id = 2) const uint ACTIVATION = 0;
layout(constant_id = 3) const bool HAS_RESIDUAL = false;
layout(constant_id = 4) const uint SRC_TYPE = 0;
layout(constant_id = 5) const uint DST_TYPE = 0;

layout(std430, binding = 0) readonly buffer Src { ELEMENT_WORD src[]; };
layout(std430, binding = 1) buffer Dst { ELEMENT_WORD dst[]; };
layout(std430, binding = 2) readonly buffer Residual { ELEMENT_WORD residual[]; };

layout(push_constant) uniform Params {
    uint box_c, box_h, box_w;
    uint src_c, src_h, src_w;
    int src_c0, src_h0;
    uint src_shift;
    uint dst_c, dst_h, dst_w;
    int dst_c0, dst_h0;
    uint dst_shift;
    uint accumulate;
    uint residual_shift;
    float beta, negative_slope;
    uint base, count;
} pc;

// Offset of (c, h, w) in an image of C x H x W in the layout.
uint image_index(uint c, uint h, uint w, uint C, uint H, uint W) {
    return tensor_offset(NHWC != 0, 0, c, h, w, C, H, W);
}

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint e = pc.base + i;
    uint c, h, w;
    image_coords(NHWC != 0, e, pc.box_c, pc.box_h, pc.box_w, c, h, w);
    const int sc = pc.src_c0 + int(c), sh = pc.src_h0 + int(h);
    float value = 0.0;
    if (in_range(sc, pc.src_c) && in_range(sh, pc.src_h))
        value = ELEMENT_AT(src, SRC_TYPE, image_index(uint(sc), uint(sh), w, pc.src_c, pc.src_h, pc.src_w) + pc.src_shift);
    const uint at = image_index(uint(pc.dst_c0 + int(c)), uint(pc.dst_h0 + int(h)), w, pc.dst_c, pc.dst_h, pc.dst_w);
    const uint d = at + pc.dst_shift;
    value = pc.accumulate != 0 ? ELEMENT_AT(dst, DST_TYPE, d) + value : value;
    if (HAS_RESIDUAL) value += pc.beta * ELEMENT_AT(residual, DST_TYPE, at + pc.residual_shift);
    STORE_ELEMENT(dst, DST_TYPE, d, activate(ACTIVATION, value, pc.negative_slope));
}
