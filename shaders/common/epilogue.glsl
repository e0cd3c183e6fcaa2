// epilogue.glsl — the activations of the forward pass's fused epilogue,
// y = act(alpha * conv(x, w) + bias + beta * z), applied by whichever shader writes y (engine/conv/epilogue.hpp
// says which): conv2d_direct, depthwise_forward, the GEMM kernels, permute4d (MEC's Solution A) and copy_box
// (tiled passes).
//
// Each of those shaders declares the activation as a specialization constant ACTIVATION, numbered as
// vkconv::Activation: 0 none, 1 ReLU (max(v, 0)), 2 ReLU6 (min(max(v, 0), 6)), 3 leaky ReLU (v < 0 ?
// slope * v : v), and passes it here; with the kind a constant, the other kinds fold away. The slope is a
// push constant (negative_slope).
//
// Shaders include it as "../common/epilogue.glsl" (with GL_GOOGLE_include_directive).

#ifndef VKCONV_EPILOGUE_GLSL
#define VKCONV_EPILOGUE_GLSL

const uint ACTIVATION_NONE = 0;
const uint ACTIVATION_RELU = 1;
const uint ACTIVATION_RELU6 = 2;
const uint ACTIVATION_LEAKY_RELU = 3;

float activate(uint kind, float v, float negative_slope) {
    if (kind == ACTIVATION_RELU) return max(v, 0.0);
    if (kind == ACTIVATION_RELU6) return min(max(v, 0.0), 6.0);
    if (kind == ACTIVATION_LEAKY_RELU) return v < 0.0 ? negative_slope * v : v;
    return v;
}

vec4 activate(uint kind, vec4 v, float negative_slope) {
    if (kind == ACTIVATION_RELU) return max(v, vec4(0.0));
    if (kind == ACTIVATION_RELU6) return min(max(v, vec4(0.0)), vec4(6.0));
    if (kind == ACTIVATION_LEAKY_RELU) return mix(v, negative_slope * v, lessThan(v, vec4(0.0)));
    return v;
}

#endif
