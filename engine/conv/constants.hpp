// Specialization and push constants that several convolution shaders share, built in one place.
#pragma once

#include <cstdint>
#include <vector>

#include "vkconv/problem.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {

// The geometry constants the direct, backward, im2col and col2im shaders share, by their names: workgroup
// size, R, S, stride, padding, dilation, layout.
template <typename Shader>
void set_geometry(Specialization<Shader>& spec, const ConvProblem& p) {
    using Id = typename Shader::spec;
    spec.set(Id::LOCAL_SIZE_X, kElementwiseWorkgroup)
        .set(Id::R, p.R)
        .set(Id::S, p.S)
        .set(Id::STRIDE_H, p.stride_h)
        .set(Id::STRIDE_W, p.stride_w)
        .set(Id::PAD_H, p.pad_h)
        .set(Id::PAD_W, p.pad_w)
        .set(Id::DIL_H, p.dilation_h)
        .set(Id::DIL_W, p.dilation_w)
        .set(Id::NHWC, p.layout == Layout::NHWC);
}

// Push constants of the direct backward shaders (the dispatch slice is filled per dispatch).
struct DirectSizes {
    uint32_t N, C, H, W, K, P, Q;
    uint32_t channels_per_group, filters_per_group;
    uint32_t reduce_begin, reduce_end, accumulate;            // the piece of the reduction (set per piece)
    uint32_t first0 = 0, first1 = 0, first2 = 0, first3 = 0;  // element 0 of binding i (Operand::first)
    uint32_t base, count;
};

VKCONV_PUSH_SIZE(DirectSizes, conv2d_backward_data_direct)
VKCONV_PUSH_MEMBER(DirectSizes, conv2d_backward_data_direct, reduce_begin)
VKCONV_PUSH_MEMBER(DirectSizes, conv2d_backward_data_direct, first2)
VKCONV_PUSH_SIZE(DirectSizes, conv2d_backward_filter_direct)
VKCONV_PUSH_MEMBER(DirectSizes, conv2d_backward_filter_direct, reduce_begin)
VKCONV_PUSH_MEMBER(DirectSizes, conv2d_backward_filter_direct, first2)

// Push constants of the direct forward shader: the sizes, with the epilogue's numbers before the dispatch slice.
struct DirectForwardPush {
    uint32_t N, C, H, W, K, P, Q;
    uint32_t channels_per_group, filters_per_group;
    uint32_t reduce_begin, reduce_end, accumulate;
    uint32_t first0 = 0, first1 = 0, first2 = 0, first3 = 0, first4 = 0;  // first4: the residual's element 0
    float alpha = 1.0f, beta = 0.0f, negative_slope = 0.0f;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(DirectForwardPush, conv2d_direct)
VKCONV_PUSH_MEMBER(DirectForwardPush, conv2d_direct, channels_per_group)
VKCONV_PUSH_MEMBER(DirectForwardPush, conv2d_direct, reduce_begin)
VKCONV_PUSH_MEMBER(DirectForwardPush, conv2d_direct, accumulate)
VKCONV_PUSH_MEMBER(DirectForwardPush, conv2d_direct, first0)
VKCONV_PUSH_MEMBER(DirectForwardPush, conv2d_direct, first3)
VKCONV_PUSH_MEMBER(DirectForwardPush, conv2d_direct, first4)
VKCONV_PUSH_MEMBER(DirectForwardPush, conv2d_direct, alpha)
VKCONV_PUSH_MEMBER(DirectForwardPush, conv2d_direct, negative_slope)
VKCONV_PUSH_MEMBER(DirectForwardPush, conv2d_direct, base)

inline DirectSizes direct_sizes(const ConvProblem& p) {
    auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
    return {u(p.N),
            u(p.C),
            u(p.H),
            u(p.W),
            u(p.K),
            u(p.P()),
            u(p.Q()),
            u(p.channels_per_group()),
            u(p.filters_per_group()),
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0};
}

}  // namespace vkconv::detail
