// Spot checks against the CPU reference: one output value at a time (the reference's taps, io/conv_taps.hpp),
// with its error bound.
#include "select/sampled_reference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "conv/winograd/winograd.hpp"
#include "io/conv_taps.hpp"

namespace vkconv::detail {
namespace {

struct Sum {
    double value = 0, magnitude = 0;
    void add(double term) { value += term, magnitude += std::fabs(term); }
};

// Four coordinates from a flat offset, `extents` being the layout's dimensions outermost first.
std::array<int64_t, 4> coordinates(uint64_t flat, std::array<int64_t, 4> extents) {
    std::array<int64_t, 4> at{};
    for (int d = 3; d >= 0; --d) {
        at[d] = static_cast<int64_t>(flat % static_cast<uint64_t>(extents[d]));
        flat /= static_cast<uint64_t>(extents[d]);
    }
    return at;
}

Sum forward_at(const ConvProblem& p, const ConvIndexer& ix, std::span<const float> x, std::span<const float> w,
               std::span<const float> bias, uint64_t flat) {
    const bool nhwc = p.layout == Layout::NHWC;
    auto at = coordinates(flat, nhwc ? std::array{p.N, ix.P, ix.Q, p.K} : std::array{p.N, p.K, ix.P, ix.Q});
    const int64_t n = at[0], k = nhwc ? at[3] : at[1], op = nhwc ? at[1] : at[2], oq = nhwc ? at[2] : at[3];
    Sum sum;
    if (!bias.empty()) sum.add(bias[static_cast<size_t>(k)]);
    for_each_output_tap(p, ix, n, k, op, oq,
                        [&](size_t i, size_t f, size_t) { sum.add(double(x[i]) * double(w[f])); });
    return sum;
}

Sum backward_data_at(const ConvProblem& p, const ConvIndexer& ix, std::span<const float> dy, std::span<const float> w,
                     uint64_t flat) {
    const bool nhwc = p.layout == Layout::NHWC;
    auto at = coordinates(flat, nhwc ? std::array{p.N, p.H, p.W, p.C} : std::array{p.N, p.C, p.H, p.W});
    const int64_t n = at[0], c = nhwc ? at[3] : at[1], h = nhwc ? at[1] : at[2], wi = nhwc ? at[2] : at[3];
    Sum sum;
    for_each_input_tap(p, ix, n, c, h, wi, [&](size_t, size_t f, size_t o) { sum.add(double(dy[o]) * double(w[f])); });
    return sum;
}

Sum backward_filter_at(const ConvProblem& p, const ConvIndexer& ix, std::span<const float> x, std::span<const float> dy,
                       uint64_t flat) {
    const bool nhwc = p.layout == Layout::NHWC;
    auto at = coordinates(flat, nhwc ? std::array{p.K, p.R, p.S, ix.Cg} : std::array{p.K, ix.Cg, p.R, p.S});
    const int64_t k = at[0], c = nhwc ? at[3] : at[1], r = nhwc ? at[1] : at[2], s = nhwc ? at[2] : at[3];
    Sum sum;
    for_each_filter_tap(p, ix, k, c, r, s, [&](size_t i, size_t, size_t o) { sum.add(double(x[i]) * double(dy[o])); });
    return sum;
}

Sum backward_bias_at(const ConvProblem& p, const ConvIndexer& ix, std::span<const float> dy, uint64_t k) {
    Sum sum;
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t op = 0; op < ix.P; ++op)
            for (int64_t oq = 0; oq < ix.Q; ++oq) sum.add(double(dy[ix.output(n, int64_t(k), op, oq)]));
    return sum;
}

double largest_magnitude(std::span<const float> values) {
    double most = 0;
    for (float v : values) most = std::max(most, double(std::fabs(v)));
    return most;
}

// Winograd's normwise bound on every output of the pass (forward over x and w, backward-data over dy and w):
// γ_k·α_m²/9 (winograd_relative_bound) times n = 9 · the transformed conv's input channels per group, times
// the largest |input| and |filter| value.
double winograd_normwise_bound(Pass pass, const ConvProblem& p, int tile, std::span<const float> a,
                               std::span<const float> b) {
    if (tile == 0 || (pass != Pass::Forward && pass != Pass::BackwardData)) return 0;
    const int64_t channels = pass == Pass::Forward ? p.channels_per_group() : p.filters_per_group();
    return winograd_relative_bound(tile, channels) * double(9 * channels) * largest_magnitude(a) *
           largest_magnitude(b);
}

}  // namespace

double sampled_error_over_bound(Pass pass, const ConvProblem& p, std::span<const float> a, std::span<const float> b,
                                std::span<const float> bias, std::span<const float> result, size_t samples,
                                int winograd_tile) {
    const double normwise = winograd_normwise_bound(pass, p, winograd_tile, a, b);
    const ConvIndexer ix(p);
    int64_t reduction = 0;
    switch (pass) {
        case Pass::Forward:
            reduction = ix.Cg * p.R * p.S + (bias.empty() ? 0 : 1);
            break;
        case Pass::BackwardData:
            reduction = p.filters_per_group() * p.R * p.S;
            break;
        case Pass::BackwardFilter:
        case Pass::BackwardBias:
            reduction = p.N * ix.P * ix.Q;
            break;
    }
    const double factor = double(reduction + 2) * std::ldexp(1.0, -24);
    // A 16-bit result is the fp32 one rounded once more (docs/algorithms.md, "Element types"); dw and db are
    // in the weight-gradient type.
    const bool gradient = pass == Pass::BackwardFilter || pass == Pass::BackwardBias;
    const DataType type = gradient ? p.weight_gradient_type() : p.data_type;
    const double rounding = type == DataType::F16    ? std::ldexp(1.0, -11)
                            : type == DataType::BF16 ? std::ldexp(1.0, -8)
                                                     : 0.0;
    const double eta = type == DataType::F16 ? std::ldexp(1.0, -25) : 0.0;
    const uint64_t total = result.size();
    samples = std::max<size_t>(1, std::min<size_t>(samples, total));
    double worst = 0;
    for (size_t i = 0; i < samples; ++i) {
        // Evenly spaced, the first and the last output included.
        const uint64_t flat = samples == 1 ? 0 : static_cast<uint64_t>((__uint128_t(total - 1) * i) / (samples - 1));
        Sum sum;
        switch (pass) {
            case Pass::Forward:
                sum = forward_at(p, ix, a, b, bias, flat);
                break;
            case Pass::BackwardData:
                sum = backward_data_at(p, ix, a, b, flat);
                break;
            case Pass::BackwardFilter:
                sum = backward_filter_at(p, ix, a, b, flat);
                break;
            case Pass::BackwardBias:
                sum = backward_bias_at(p, ix, a, flat);
                break;
        }
        const double error = std::fabs(double(result[flat]) - sum.value);
        const double e = factor * sum.magnitude + normwise;
        const double ratio = error / ((1 + rounding) * e + rounding * std::fabs(sum.value) + eta + 1e-30);
        if (!(ratio <= worst)) worst = std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
    }
    return worst;
}

}  // namespace vkconv::detail
