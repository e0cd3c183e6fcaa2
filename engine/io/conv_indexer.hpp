// Flat offsets into a convolution's tensors in the problem's layout, for host code that walks them
// element by element (the CPU reference and find's sampled checks).
#pragma once

#include <cstddef>
#include <cstdint>

#include "vkconv/problem.hpp"

namespace vkconv::detail {

// Flat offsets of the three tensors in the problem's layout. `c` of filter() is the channel within the group.
struct ConvIndexer {
    int64_t C, H, W, K, P, Q, Cg, R, S;
    bool nhwc;

    explicit ConvIndexer(const ConvProblem& pr)
        : C(pr.C),
          H(pr.H),
          W(pr.W),
          K(pr.K),
          P(pr.P()),
          Q(pr.Q()),
          Cg(pr.channels_per_group()),
          R(pr.R),
          S(pr.S),
          nhwc(pr.layout == Layout::NHWC) {}

    size_t input(int64_t n, int64_t c, int64_t h, int64_t w) const {
        return static_cast<size_t>(nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w);
    }
    size_t filter(int64_t k, int64_t c, int64_t r, int64_t s) const {
        return static_cast<size_t>(nhwc ? ((k * R + r) * S + s) * Cg + c : ((k * Cg + c) * R + r) * S + s);
    }
    size_t output(int64_t n, int64_t k, int64_t p, int64_t q) const {
        return static_cast<size_t>(nhwc ? ((n * P + p) * Q + q) * K + k : ((n * K + k) * P + p) * Q + q);
    }
};

}  // namespace vkconv::detail
