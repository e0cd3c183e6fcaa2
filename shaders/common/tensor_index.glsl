// tensor_index.glsl — where an element of a 4-D tensor lives, in either layout: the offset of (n, c, h, w),
// the inverse (an offset back to its coordinates), the distances between neighbouring channels and
// columns, and the bounds check of a signed coordinate. Every convolution shader addresses x, y, dx, dy
// and w this way; one copy keeps the layouts' index arithmetic in one place.
//
// nhwc false: NCHW order (w fastest, then h, c, n); nhwc true: NHWC order (c fastest, then w, h, n).
// Filters use the same functions with (k, c, r, s) for (n, c, h, w): OIHW is the NCHW order and OHWI the
// NHWC order. One image, a box of one, or a filter's taps is the same with n = 0.
//
// Everything comes in as parameters (the layout flag and the extents C, H, W; N never matters), so one
// helper serves push-constant sizes (pc.C), specialization constants (C) and boxes alike; with the flag a
// specialization constant, the other layout's arithmetic folds away. Integer arithmetic only, equal
// (modulo 2^32) to the copies it replaced: every shader addresses the same elements as before.
//
// Shaders include it as "../common/tensor_index.glsl" (with GL_GOOGLE_include_directive); the
// guard makes a second include, say through depthwise_common.glsl, harmless.

#ifndef VKCONV_TENSOR_INDEX_GLSL
#define VKCONV_TENSOR_INDEX_GLSL

// Offset of element (n, c, h, w) from the tensor's first element.
uint tensor_offset(bool nhwc, uint n, uint c, uint h, uint w, uint C, uint H, uint W) {
    return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

// Distance between channels c and c + 1 of one position.
uint channel_stride(bool nhwc, uint H, uint W) {
    return nhwc ? 1 : H * W;
}

// Distance between columns w and w + 1 of one row.
uint column_stride(bool nhwc, uint C) {
    return nhwc ? C : 1;
}

// The coordinates of the element at `index` (the inverse of tensor_offset). One invocation per element
// indexed this way walks the layout's fastest dimension, so neighbouring invocations touch neighbouring
// addresses.
void tensor_coords(bool nhwc, uint index, uint C, uint H, uint W, out uint n, out uint c, out uint h, out uint w) {
    if (nhwc) {
        c = index % C;
        uint t = index / C;
        w = t % W; t /= W;
        h = t % H;
        n = t / H;
    } else {
        w = index % W;
        uint t = index / W;
        h = t % H; t /= H;
        c = t % C;
        n = t / C;
    }
}

// tensor_coords within one image (index < C * H * W), one division fewer.
void image_coords(bool nhwc, uint index, uint C, uint H, uint W, out uint c, out uint h, out uint w) {
    if (nhwc) {
        c = index % C;
        const uint t = index / C;
        w = t % W;
        h = t / W;
    } else {
        w = index % W;
        const uint t = index / W;
        h = t % H;
        c = t / H;
    }
}

// Whether signed coordinate i lies in [0, extent): one unsigned compare rejects negatives too (they wrap
// past any extent). Coordinates in the padding are negative or past the extent.
bool in_range(int i, uint extent) {
    return uint(i) < extent;
}

#endif
