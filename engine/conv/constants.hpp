// Specialization and push constants that several convolution shaders share, built in one place.
#pragma once

#include <cstdint>
#include <vector>

#include "vulkan/dispatch.hpp"
#include "vkconv/problem.hpp"

namespace vkconv::detail {

// Constant ids 0..9 of the direct, backward and im2col shaders: workgroup size, R, S, stride h/w,
// padding h/w, dilation h/w, NHWC.
inline std::vector<uint32_t> geometry_constants(const ConvProblem& p) {
    auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
    return {kElementwiseWorkgroup,
            u(p.R),
            u(p.S),
            u(p.stride_h),
            u(p.stride_w),
            u(p.pad_h),
            u(p.pad_w),
            u(p.dilation_h),
            u(p.dilation_w),
            p.layout == Layout::NHWC ? 1u : 0u};
}

// Push constants of the direct forward and backward shaders (the dispatch slice is filled per dispatch).
struct DirectSizes {
    uint32_t N, C, H, W, K, P, Q;
    uint32_t channels_per_group, filters_per_group;
    uint32_t reduce_begin, reduce_end, accumulate;  // the piece of the reduction (set per piece)
    uint32_t base, count;
};

inline DirectSizes direct_sizes(const ConvProblem& p) {
    auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
    return {
        u(p.N), u(p.C), u(p.H), u(p.W), u(p.K), u(p.P()), u(p.Q()), u(p.channels_per_group()), u(p.filters_per_group()),
        0,      0,      0,      0,      0};
}

}  // namespace vkconv::detail
