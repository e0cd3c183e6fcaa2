// The taps of a convolution, one (input, filter, output) offset triple per multiply-add: the one statement
// of its geometry that the CPU reference (io/reference.cpp) and find's sampled checks
// (select/sampled_reference.cpp) enumerate, the whole tensor or one value at a time. Taps that fall into
// the padding are skipped: they multiply a zero. Each calls tap(input offset, filter offset, output offset).
#pragma once

#include <cstdint>

#include "io/conv_indexer.hpp"

namespace vkconv::detail {

// The taps that reach output (n, k, p, q): forward's sum for one y value.
template <class Tap>
void for_each_output_tap(const ConvProblem& pr, const ConvIndexer& ix, int64_t n, int64_t k, int64_t p, int64_t q,
                         Tap&& tap) {
    const int64_t c0 = k / pr.filters_per_group() * ix.Cg;  // first input channel of k's group
    const size_t out = ix.output(n, k, p, q);
    for (int64_t c = 0; c < ix.Cg; ++c)
        for (int64_t r = 0; r < pr.R; ++r) {
            const int64_t h = p * pr.stride_h - pr.pad_h + r * pr.dilation_h;
            if (h < 0 || h >= pr.H) continue;
            for (int64_t s = 0; s < pr.S; ++s) {
                const int64_t w = q * pr.stride_w - pr.pad_w + s * pr.dilation_w;
                if (w < 0 || w >= pr.W) continue;
                tap(ix.input(n, c0 + c, h, w), ix.filter(k, c, r, s), out);
            }
        }
}

// The output position that input position `at` reaches through tap `t` of a dimension, or -1: the inverse
// of at = o * stride - pad + t * dilation.
inline int64_t output_position(int64_t at, int64_t t, int64_t stride, int64_t pad, int64_t dilation, int64_t extent) {
    const int64_t offset = at + pad - t * dilation;
    if (offset < 0 || offset % stride) return -1;
    const int64_t o = offset / stride;
    return o < extent ? o : -1;
}

// The taps that read input (n, c, h, w): backward-data's sum for one dx value.
template <class Tap>
void for_each_input_tap(const ConvProblem& pr, const ConvIndexer& ix, int64_t n, int64_t c, int64_t h, int64_t w,
                        Tap&& tap) {
    const int64_t Kg = pr.filters_per_group(), group = c / ix.Cg;
    const size_t in = ix.input(n, c, h, w);
    for (int64_t k = group * Kg; k < (group + 1) * Kg; ++k)
        for (int64_t r = 0; r < pr.R; ++r) {
            const int64_t p = output_position(h, r, pr.stride_h, pr.pad_h, pr.dilation_h, ix.P);
            if (p < 0) continue;
            for (int64_t s = 0; s < pr.S; ++s) {
                const int64_t q = output_position(w, s, pr.stride_w, pr.pad_w, pr.dilation_w, ix.Q);
                if (q < 0) continue;
                tap(in, ix.filter(k, c % ix.Cg, r, s), ix.output(n, k, p, q));
            }
        }
}

// The taps that use filter value (k, c, r, s), c within the group: backward-filter's sum for one dw value.
template <class Tap>
void for_each_filter_tap(const ConvProblem& pr, const ConvIndexer& ix, int64_t k, int64_t c, int64_t r, int64_t s,
                         Tap&& tap) {
    const int64_t c0 = k / pr.filters_per_group() * ix.Cg;
    const size_t f = ix.filter(k, c, r, s);
    for (int64_t n = 0; n < pr.N; ++n)
        for (int64_t p = 0; p < ix.P; ++p) {
            const int64_t h = p * pr.stride_h - pr.pad_h + r * pr.dilation_h;
            if (h < 0 || h >= pr.H) continue;
            for (int64_t q = 0; q < ix.Q; ++q) {
                const int64_t w = q * pr.stride_w - pr.pad_w + s * pr.dilation_w;
                if (w < 0 || w >= pr.W) continue;
                tap(ix.input(n, c0 + c, h, w), f, ix.output(n, k, p, q));
            }
        }
}

// Every tap of the convolution, output by output in a fixed order (so a scatter over them is deterministic).
template <class Tap>
void for_each_tap(const ConvProblem& pr, Tap&& tap) {
    const ConvIndexer ix(pr);
    for (int64_t n = 0; n < pr.N; ++n)
        for (int64_t k = 0; k < pr.K; ++k)
            for (int64_t p = 0; p < ix.P; ++p)
                for (int64_t q = 0; q < ix.Q; ++q) for_each_output_tap(pr, ix, n, k, p, q, tap);
}

}  // namespace vkconv::detail
