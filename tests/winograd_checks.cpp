// Winograd's test checks (tests/test_winograd.cpp, tests/test_winograd_paths.cpp): the elementwise and normwise
// error bounds of engine/conv/winograd/winograd.hpp computed in double precision from the operands, and passes
// run on poisoned outputs with every value checked against them.
#include "winograd_checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "vkconv/conv.hpp"
#include "vkconv/reference.hpp"

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Layout;
using vkconv::Pass;
namespace detail = vkconv::detail;

namespace wgt {
size_t tensor_index(bool nhwc, int64_t n, int64_t c, int64_t h, int64_t w, int64_t C, int64_t H, int64_t W) {
    return size_t(nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w);
}

// |tap (r, s)| of the filter the Winograd pass transforms, for output channel o and input channel i of group g
// (backward-data: rotated and transposed, as winograd_filter.comp reads it).
double filter_tap(const ConvProblem& p, const detail::WinogradShape& s, std::span<const float> w, int64_t g,
                  int64_t o, int64_t i, int r, int c) {
    const int64_t cg = p.channels_per_group(), kg = p.filters_per_group();
    int64_t k = g * kg + o, ch = i;
    if (s.transposed) k = g * kg + i, ch = o, r = 2 - r, c = 2 - c;
    const size_t at = size_t(s.nhwc ? ((k * 3 + r) * 3 + c) * cg + ch : ((k * cg + ch) * 3 + r) * 3 + c);
    return std::fabs(double(w[at]));
}

// |X| · |D| · |Y|ᵀ for row-major X (rows × inner) and Y (cols × inner), D inner × inner.
template <size_t N>
std::array<double, 36> abs_sandwich(const std::array<double, N>& x, int rows, const std::array<double, 36>& d,
                                    int inner) {
    std::array<double, 36> left{}, out{};
    for (int a = 0; a < rows; ++a)
        for (int j = 0; j < inner; ++j)
            for (int b = 0; b < inner; ++b) left[a * inner + j] += std::fabs(x[a * inner + b]) * d[b * inner + j];
    for (int a = 0; a < rows; ++a)
        for (int c = 0; c < rows; ++c)
            for (int j = 0; j < inner; ++j) out[a * rows + c] += left[a * inner + j] * std::fabs(x[c * inner + j]);
    return out;
}

// The elementwise bound of winograd.hpp on every value of the pass's output (y, or dx), in its layout:
//   γ_k · (|Aᵀ| · Σ_i (|G||g_i||Gᵀ|) ⊙ (|Bᵀ||d_i||B|) · |A|),  k = CG4 + kTransformRoundings,
// over the tiles the pass uses. `in` is x (forward) or dy (backward-data).
std::vector<double> winograd_bound(const ConvProblem& p, Pass pass, std::span<const float> in,
                                   std::span<const float> w, int tile) {
    const detail::WinogradShape s = detail::winograd_shape(p, pass, tile);
    const detail::WinogradMatrices& t = detail::winograd_matrices(s.m);
    const int a = s.alpha, m = s.m;
    const double u = std::ldexp(1.0, -24), k = double(s.in_g4 + detail::kTransformRoundings);
    const double gamma = k * u / (1 - k * u);
    // |G| |g| |Gᵀ| for every (g, o, i).
    std::vector<std::array<double, 36>> ug(size_t(s.groups * s.out_g * s.in_g));
    for (int64_t g = 0; g < s.groups; ++g)
        for (int64_t o = 0; o < s.out_g; ++o)
            for (int64_t i = 0; i < s.in_g; ++i) {
                std::array<double, 36> taps{};  // 3 × 3 in a 3-wide layout, padded for abs_sandwich's shape
                std::array<double, 36> gg{}, full{};
                for (int r = 0; r < 3; ++r)
                    for (int c = 0; c < 3; ++c) taps[r * 3 + c] = filter_tap(p, s, w, g, o, i, r, c);
                for (int x = 0; x < a; ++x)  // |G| taps: a × 3
                    for (int c = 0; c < 3; ++c)
                        for (int r = 0; r < 3; ++r) gg[x * 3 + c] += std::fabs(t.g[x * 3 + r]) * taps[r * 3 + c];
                for (int x = 0; x < a; ++x)  // (|G| taps) |Gᵀ|: a × a
                    for (int y = 0; y < a; ++y)
                        for (int c = 0; c < 3; ++c) full[x * a + y] += gg[x * 3 + c] * std::fabs(t.g[y * 3 + c]);
                ug[size_t((g * s.out_g + o) * s.in_g + i)] = full;
            }
    std::vector<double> bound(size_t(p.N * s.out_image()), 0.0);
    std::vector<std::array<double, 36>> vd(size_t(s.in_g));
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t ty = 0; ty < s.tiles_h; ++ty)
            for (int64_t tx = 0; tx < s.tiles_w; ++tx)
                for (int64_t g = 0; g < s.groups; ++g) {
                    for (int64_t i = 0; i < s.in_g; ++i) {  // |Bᵀ| |d| |B|
                        std::array<double, 36> d{};
                        for (int r = 0; r < a; ++r)
                            for (int c = 0; c < a; ++c) {
                                const int64_t h = ty * m + s.origin_h + r, x = tx * m + s.origin_w + c;
                                if (h >= 0 && h < s.in_h && x >= 0 && x < s.in_w)
                                    d[r * a + c] = std::fabs(double(
                                        in[tensor_index(s.nhwc, n, g * s.in_g + i, h, x, s.in_c, s.in_h, s.in_w)]));
                            }
                        vd[size_t(i)] = abs_sandwich(t.bt, a, d, a);
                    }
                    for (int64_t o = 0; o < s.out_g; ++o) {
                        std::array<double, 36> sum{};
                        for (int64_t i = 0; i < s.in_g; ++i) {
                            const auto& f = ug[size_t((g * s.out_g + o) * s.in_g + i)];
                            for (int e = 0; e < a * a; ++e) sum[e] += f[e] * vd[size_t(i)][e];
                        }
                        const std::array<double, 36> e = abs_sandwich(t.at, m, sum, a);  // |Aᵀ| Σ |A|
                        for (int r = 0; r < m; ++r)
                            for (int c = 0; c < m; ++c) {
                                const int64_t h = ty * m + r, x = tx * m + c;
                                if (h < s.out_h && x < s.out_w)
                                    bound[tensor_index(s.nhwc, n, g * s.out_g + o, h, x, s.out_c, s.out_h, s.out_w)] =
                                        gamma * e[r * m + c];
                            }
                    }
                }
    return bound;
}

// The normwise form of the bound, for any placement of the tiles (a tiled pass's tiles start their own tile grid):
//   γ_k · α_4² · Σ_i max|d_i| · max|g_{o,i}|   over the pass's input channel i of the group, k = CG4 + 33,
// with α_4 = 48 ≥ α_2 covering either tile.
std::vector<double> normwise_bound(const ConvProblem& p, Pass pass, std::span<const float> in,
                                   std::span<const float> w) {
    const detail::WinogradShape s = detail::winograd_shape(p, pass);  // its in_g4 and layout, for either tile
    const double u = std::ldexp(1.0, -24), k = double(s.in_g4 + detail::kTransformRoundings);
    const double alpha = detail::winograd_alpha(4), scale = k * u / (1 - k * u) * alpha * alpha;
    std::vector<double> max_in(size_t(s.in_c), 0.0);
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t c = 0; c < s.in_c; ++c)
            for (int64_t h = 0; h < s.in_h; ++h)
                for (int64_t x = 0; x < s.in_w; ++x)
                    max_in[size_t(c)] = std::max(
                        max_in[size_t(c)],
                        std::fabs(double(in[tensor_index(s.nhwc, n, c, h, x, s.in_c, s.in_h, s.in_w)])));
    std::vector<double> per_channel(size_t(s.out_c), 0.0);
    for (int64_t g = 0; g < s.groups; ++g)
        for (int64_t o = 0; o < s.out_g; ++o)
            for (int64_t i = 0; i < s.in_g; ++i) {
                double g_max = 0;
                for (int r = 0; r < 3; ++r)
                    for (int c = 0; c < 3; ++c) g_max = std::max(g_max, filter_tap(p, s, w, g, o, i, r, c));
                per_channel[size_t(g * s.out_g + o)] += scale * g_max * max_in[size_t(g * s.in_g + i)];
            }
    std::vector<double> bound(size_t(p.N * s.out_image()));
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t c = 0; c < s.out_c; ++c)
            for (int64_t h = 0; h < s.out_h; ++h)
                for (int64_t x = 0; x < s.out_w; ++x)
                    bound[tensor_index(s.nhwc, n, c, h, x, s.out_c, s.out_h, s.out_w)] = per_channel[size_t(c)];
    return bound;
}

std::array<Observed, 2> observed;  // F(2×2), F(4×4)

// Every value within `bound` (plus the epilogue's own roundings, `slack`), none NaN; records the worst ratio.
void check_bound(const std::vector<float>& gpu, const std::vector<double>& ref, const std::vector<double>& bound,
                 const std::vector<double>& slack, int m, const std::string& what) {
    INFO(what);
    REQUIRE(gpu.size() == ref.size());
    size_t bad = gpu.size();
    double worst = 0, worst_abs = 0, scale = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const double error = std::fabs(double(gpu[i]) - ref[i]), limit = bound[i] + slack[i] + 1e-30;
        if (!(error <= limit) && bad == gpu.size()) bad = i;
        worst = std::max(worst, error / limit);
        worst_abs = std::max(worst_abs, error);
        scale = std::max(scale, std::fabs(ref[i]));
    }
    if (bad != gpu.size()) {
        INFO("first bad index " << bad << ": gpu " << gpu[bad] << ", reference " << ref[bad] << ", bound "
                                << bound[bad] + slack[bad]);
        CHECK(false);
    }
    Observed& o = observed[m == 2 ? 0 : 1];
    o.m = m;
    o.ratio = std::max(o.ratio, worst);
    if (scale > 0) o.relative = std::max(o.relative, worst_abs / scale);
}


double activate(vkconv::Activation a, double v, double slope) {
    switch (a) {
        case vkconv::Activation::ReLU:
            return std::max(v, 0.0);
        case vkconv::Activation::ReLU6:
            return std::min(std::max(v, 0.0), 6.0);
        case vkconv::Activation::LeakyReLU:
            return v < 0 ? slope * v : v;
        default:
            return v;
    }
}


// The tile options.variant names (4 or 2), else 0: the rule's.
int tile_of(const vkconv::PassOptions& options) {
    return options.variant == "F(4x4,3x3)" ? 4 : options.variant == "F(2x2,3x3)" ? 2 : 0;
}

// `options` asking for tile m.
vkconv::PassOptions with_tile(vkconv::PassOptions options, int m) {
    options.variant = m == 4 ? "F(4x4,3x3)" : "F(2x2,3x3)";
    return options;
}

// Random values as a tensor of `type` holds them (narrowed to it, widened back), and that tensor.
std::pair<std::vector<float>, vkconv::Tensor> typed_values(vkconv::Context& context, const vkconv::Shape& shape,
                                                           uint32_t seed, vkconv::DataType type) {
    auto tensor = vkconv::Tensor::from_host(context, shape, vkt::random_values(size_t(vkconv::shape_elements(shape)), seed), type);
    return {tensor.download(), tensor};
}

// A 16-bit output is the fp32 one rounded once more: the bound grows by that rounding (docs/algorithms.md,
// "Element types"), (1 + u_t)·bound + u_t·|y| + η.
void add_output_rounding(vkconv::DataType type, const std::vector<double>& ref, std::vector<double>& bound,
                         std::vector<double>& slack) {
    if (type == vkconv::DataType::F32) return;
    const double ut = std::ldexp(1.0, type == vkconv::DataType::F16 ? -11 : -8);
    const double eta = type == vkconv::DataType::F16 ? std::ldexp(1.0, -25) : 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        bound[i] = (1 + ut) * bound[i] + ut * std::fabs(ref[i]) + eta;
        slack[i] *= 1 + ut;
    }
}

// Forward with Winograd on a poisoned output, every value checked; returns the stats and the output.
std::pair<vkconv::RunStats, std::vector<float>> check_winograd_forward(vkconv::Context& context, const ConvProblem& p,
                                                                       uint32_t seed, const EpilogueCase& e,
                                                                       const vkconv::PassOptions& options,
                                                                       bool normwise) {
    const vkconv::DataType type = p.data_type;
    auto [x, tx] = typed_values(context, p.input_shape(), seed, type);
    auto [w, tw] = typed_values(context, p.filter_shape(), seed + 1, type);
    auto [b, tb] = typed_values(context, p.bias_shape(), seed + 2, type);
    auto [z, tz] = typed_values(context, p.output_shape(), seed + 3, type);
    ConvProblem plain = p;
    plain.has_bias = false;
    const auto conv = vkconv::reference::forward(plain, x, w, {});
    const auto magnitude = vkconv::reference::forward(plain, vkt::absolute(x), vkt::absolute(w), {});
    const int m = detail::winograd_shape(p, Pass::Forward, tile_of(options)).m;
    const auto bound0 = normwise ? normwise_bound(p, Pass::Forward, x, w) : winograd_bound(p, Pass::Forward, x, w, m);
    const double u = std::ldexp(1.0, -24), slope = 0.01;
    std::vector<double> ref(conv.size()), bound(conv.size()), slack(conv.size());
    const int64_t P = p.P(), Q = p.Q();
    for (size_t i = 0; i < conv.size(); ++i) {
        const int64_t k = p.layout == Layout::NHWC ? int64_t(i) % p.K : int64_t(i) / (P * Q) % p.K;
        const double bias = p.has_bias ? b[size_t(k)] : 0.0, res = e.residual ? double(e.beta) * z[i] : 0.0;
        ref[i] = activate(e.activation, e.alpha * conv[i] + bias + res, slope);
        // The activation is 1-Lipschitz: the conv's error scaled by alpha, and the epilogue's 4 roundings.
        bound[i] = std::fabs(e.alpha) * bound0[i];
        slack[i] = 4 * u * (std::fabs(e.alpha) * magnitude[i] + std::fabs(bias) + std::fabs(res));
    }
    add_output_rounding(type, ref, bound, slack);
    auto ty = vkconv::Tensor::from_host(context, p.output_shape(), e.in_place ? z : vkt::poison(p.output_elements()), type);
    vkconv::Epilogue epilogue;
    epilogue.alpha = e.alpha, epilogue.beta = e.beta, epilogue.activation = e.activation;
    epilogue.negative_slope = float(slope);
    if (e.residual) epilogue.residual = e.in_place ? &ty : &tz;
    const auto stats =
        vkconv::forward(context, p, tx, tw, p.has_bias ? &tb : nullptr, ty, Algorithm::Winograd, options, epilogue);
    CHECK(stats.algorithm == Algorithm::Winograd);
    CHECK(stats.workspace_bytes == vkconv::forward_workspace_bytes(context, p, Algorithm::Winograd, options));
    // The tile that ran (a tiled pass reports its first tile's, whose own problem may pick the other tile).
    CHECK((stats.variant == "F(4x4,3x3)" || stats.variant == "F(2x2,3x3)"));
    if (stats.chunks == 1 || tile_of(options)) CHECK(stats.variant == with_tile({}, m).variant);
    const auto result = ty.download();
    check_bound(result, ref, bound, slack, m, "winograd forward: " + p.str());
    return {stats, result};
}

// Backward-data with Winograd on a poisoned dx, every value checked; returns the stats and dx.
std::pair<vkconv::RunStats, std::vector<float>> check_winograd_backward_data(vkconv::Context& context,
                                                                             const ConvProblem& p, uint32_t seed,
                                                                             const vkconv::PassOptions& options,
                                                                             bool normwise) {
    auto [dy, tdy] = typed_values(context, p.output_shape(), seed, p.data_type);
    auto [w, tw] = typed_values(context, p.filter_shape(), seed + 1, p.data_type);
    const auto ref = vkconv::reference::backward_data(p, dy, w);
    const int m = detail::winograd_shape(p, Pass::BackwardData, tile_of(options)).m;
    auto bound =
        normwise ? normwise_bound(p, Pass::BackwardData, dy, w) : winograd_bound(p, Pass::BackwardData, dy, w, m);
    std::vector<double> slack(ref.size(), 0.0);
    add_output_rounding(p.data_type, ref, bound, slack);
    auto tdx = vkconv::Tensor::from_host(context, p.input_shape(), vkt::poison(p.input_elements()), p.data_type);
    const auto stats = vkconv::backward_data(context, p, tdy, tw, tdx, Algorithm::Winograd, options);
    CHECK(stats.algorithm == Algorithm::Winograd);
    CHECK(stats.workspace_bytes == vkconv::backward_data_workspace_bytes(context, p, Algorithm::Winograd, options));
    const auto result = tdx.download();
    if (stats.chunks == 1 || tile_of(options)) CHECK(stats.variant == with_tile({}, m).variant);
    check_bound(result, ref, bound, slack, m, "winograd backward-data: " + p.str());
    return {stats, result};
}

bool winograd_applies(const ConvProblem& p) {
    return p.R == 3 && p.S == 3 && p.stride_h == 1 && p.stride_w == 1 && p.dilation_h == 1 && p.dilation_w == 1;
}

// The 3×3 stride-1 cases of the project's odd table, and more of Winograd's own: images smaller than one tile,
// sizes that leave partial tiles, pads on one side only (and beyond the kernel: negative backward-data pads),
// channel counts off multiples of 4, groups and depthwise.
std::vector<vkt::NamedProblem> winograd_problems() {
    std::vector<vkt::NamedProblem> cases;
    for (const auto& named : vkt::odd_problems())
        if (winograd_applies(named.problem)) cases.push_back(named);
    using vkt::problem;
    const std::vector<vkt::NamedProblem> own = {
        {"1x1 image pad 1", problem().batch(2).channels(3).image(1, 1).filters(5).kernel(3, 3).pad(1)},
        {"1x1 image pads 2,0,0,2", problem().batch(1).channels(5).image(1, 1).filters(2).kernel(3, 3).pads(2, 0, 0, 2)},
        {"3x3 image no pad", problem().batch(1).channels(6).image(3, 3).filters(3).kernel(3, 3)},
        {"5x7 no pad", problem().batch(2).channels(7).image(5, 7).filters(9).kernel(3, 3)},
        {"9x6 pads 0,2,1,0", problem().batch(1).channels(5).image(9, 6).filters(6).kernel(3, 3).pads(0, 2, 1, 0)},
        {"pads 3,1,0,3 beyond", problem().batch(1).channels(4).image(6, 7).filters(3).kernel(3, 3).pads(3, 1, 0, 3)},
        {"groups 3 of 3 channels", problem().batch(2).channels(9).image(10, 11).filters(6).kernel(3, 3).pad(1).groups(3)},
        {"groups 4 of 5 channels, 3 filters",
         problem().batch(1).channels(20).image(13, 9).filters(12).kernel(3, 3).pads(1, 0, 2, 1).groups(4)},
        {"depthwise 3x3", problem().batch(1).channels(6).image(9, 10).filters(6).kernel(3, 3).pad(1).groups(6)},
        {"17x19 channels 33 to 17", problem().batch(1).channels(33).image(17, 19).filters(17).kernel(3, 3).pad(1)},
    };
    cases.insert(cases.end(), own.begin(), own.end());
    return cases;
}

// Every odd problem at both tiles, forward (with and without a bias) and backward-data, in `layouts`; with
// `rotate`, one layout and one bias setting per (tile, problem), taken in turn so that the set covers both of
// each (CI's representative subset; the whole product is tagged [slow]).
void check_odd_table(vkconv::Context& context, const std::vector<Layout>& layouts, bool rotate,
                     vkconv::DataType type) {
    uint32_t seed = 100;
    size_t turn = 0;
    for (int m : {4, 2}) {
        const vkconv::PassOptions tile = with_tile({}, m);
        for (const auto& named : winograd_problems()) {
            ++turn;
            for (Layout layout : layouts) {
                for (bool bias : {false, true}) {
                    if (rotate && (layout != layouts[turn % layouts.size()] || bias != ((turn / 2) % 2 == 1))) continue;
                    ConvProblem p = named.problem;
                    p.layout = layout;
                    p.has_bias = bias;
                    p.data_type = type;
                    INFO("F(" << m << "x" << m << ") " << named.name << ": " << p.str());
                    check_winograd_forward(context, p, seed += 7, {}, tile);
                    if (!bias || rotate) check_winograd_backward_data(context, p, seed += 7, tile);
                }
            }
        }
    }
}

}  // namespace wgt
