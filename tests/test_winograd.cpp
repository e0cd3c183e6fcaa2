// Winograd F(m×m, 3×3) (engine/conv/winograd/) against the CPU double reference: forward (bias, epilogue) and
// backward-data on odd 3×3 stride-1 shapes in both layouts, every output value poisoned first and checked against
// the elementwise error bound of winograd.hpp; both tiles (F(2×2) past kMaxRelativeBound); chunks of images and
// bands of tile rows under small binding and workspace limits; exact workspace and pool peak; bit-identical
// reruns; and the refusals (backward-filter, other kernels, strides, dilations).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "conv/winograd/winograd.hpp"
#include "conv_cases.hpp"
#include "test_util.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/find.hpp"
#include "vkconv/plan.hpp"
#include "vkconv/reference.hpp"

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Layout;
using vkconv::Pass;
namespace detail = vkconv::detail;

namespace {

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
                                   std::span<const float> w, int tile = 0) {
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

// The worst error over its bound and the worst error relative to max|reference| seen by the checks (reported
// by the summary case).
struct Observed {
    double ratio = 0, relative = 0;
    int m = 0;
};
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

struct EpilogueCase {
    float alpha = 1.0f, beta = 0.0f;
    bool residual = false;
    vkconv::Activation activation = vkconv::Activation::None;
    bool in_place = false;  // the residual is y itself (y holds z before the pass)
};

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

// `call` throws Error of `category` whose message holds every one of `words`.
template <typename Call>
void require_error(vkconv::ErrorCategory category, const std::vector<std::string>& words, Call&& call) {
    try {
        call();
        FAIL("no error");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == category);
        for (const std::string& word : words) CHECK_THAT(e.what(), Catch::Contains(word));
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
                                                                       uint32_t seed, const EpilogueCase& e = {},
                                                                       const vkconv::PassOptions& options = {},
                                                                       bool normwise = false) {
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
                                                                             const vkconv::PassOptions& options = {},
                                                                             bool normwise = false) {
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
                     vkconv::DataType type = vkconv::DataType::F32) {
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

}  // namespace

TEST_CASE("winograd forward and backward-data match the reference within the bound on odd shapes",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    check_odd_table(*context, {Layout::NCHW, Layout::NHWC}, true);
}

// The odd table once, each problem at one (tile, type, layout, bias) in turn, so that the table covers every
// tile with both 16-bit types and both layouts (16-bit stores in packed words are slow on SwiftShader).
void check_odd_table_16bit(vkconv::Context& context) {
    uint32_t seed = 700;
    size_t turn = 0;
    for (const auto& named : winograd_problems()) {
        ++turn;
        ConvProblem p = named.problem;
        const int m = turn % 2 == 0 ? 4 : 2;
        p.data_type = (turn / 2) % 2 == 0 ? vkconv::DataType::F16 : vkconv::DataType::BF16;
        p.layout = (turn / 4) % 2 == 0 ? Layout::NCHW : Layout::NHWC;
        p.has_bias = (turn / 8) % 2 == 0;
        INFO("F(" << m << "x" << m << ") " << named.name << ": " << p.str());
        check_winograd_forward(context, p, seed += 7, {}, with_tile({}, m));
        check_winograd_backward_data(context, p, seed += 7, with_tile({}, m));
    }
}

TEST_CASE("winograd runs f16 and bf16 tensors within its bound plus the output's rounding", "[winograd][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    check_odd_table_16bit(*context);
    for (vkconv::DataType type : {vkconv::DataType::F16, vkconv::DataType::BF16}) {
        INFO(vkconv::to_string(type));
        // The epilogue, each value rounded once: a residual of its own and in place, with the bias.
        for (const EpilogueCase& e : {EpilogueCase{-2.0f, 1.5f, true, vkconv::Activation::LeakyReLU},
                                      EpilogueCase{0.75f, 1.0f, true, vkconv::Activation::ReLU, true}}) {
            ConvProblem p = vkt::problem().batch(2).channels(6).image(11, 9).filters(7).kernel(3, 3).pads(1, 2, 0, 1).bias();
            p.data_type = type;
            check_winograd_forward(*context, p, 900, e, with_tile({}, 4));
        }
    }
}

TEST_CASE("winograd runs f16 and bf16 tensors on every odd shape, tile, layout and bias", "[winograd][types][gpu][slow]") {
    VKT_REQUIRE_CONTEXT(context);
    for (vkconv::DataType type : {vkconv::DataType::F16, vkconv::DataType::BF16})
        check_odd_table(*context, {Layout::NCHW, Layout::NHWC}, false, type);
}

TEST_CASE("winograd forward and backward-data match the reference on every odd shape, layout and bias",
          "[winograd][gpu][slow]") {
    VKT_REQUIRE_CONTEXT(context);
    check_odd_table(*context, {Layout::NCHW, Layout::NHWC}, false);
}

TEST_CASE("winograd forward applies the epilogue", "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const std::vector<EpilogueCase> epilogues = {
        {0.5f, 0.0f, false, vkconv::Activation::ReLU},
        {1.0f, -0.75f, true, vkconv::Activation::None},
        {-2.0f, 1.5f, true, vkconv::Activation::LeakyReLU},
        {1.0f, 1.0f, true, vkconv::Activation::ReLU6},
        {0.75f, 1.0f, true, vkconv::Activation::ReLU, true},  // y += conv in place, then ReLU
    };
    uint32_t seed = 300;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        for (const auto& e : epilogues) {
          for (int m : {4, 2}) {
            ConvProblem p = vkt::problem().batch(2).channels(6).image(11, 9).filters(7).kernel(3, 3).pads(1, 2, 0, 1)
                                .groups(1).layout(layout).bias();
            INFO("alpha " << e.alpha << " beta " << e.beta << " " << vkconv::to_string(e.activation) << " F" << m);
            check_winograd_forward(*context, p, seed += 5, e, with_tile({}, m));
          }
        }
    }
}

TEST_CASE("winograd takes F(2x2) where F(4x4)'s bound passes its limit or its tiles are few, and both hold their bounds",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // The rule: F(4×4) up to 476 channels per group (round_up(c, 4) + 33 ≤ 512 roundings) and from 32 F(4×4)
    // tiles in the pass on, F(2×2) otherwise.
    CHECK(detail::winograd_tile(476, 32) == 4);
    CHECK(detail::winograd_tile(477, 32) == 2);
    CHECK(detail::winograd_tile(64, 31) == 2);
    CHECK(detail::winograd_alpha(4) == 48.0);
    CHECK(detail::winograd_alpha(2) == 8.0);
    uint32_t seed = 500;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        for (int64_t channels : {476, 480}) {
            // 2 images of 4×4 F(4×4) tiles: 32.
            ConvProblem p = vkt::problem().batch(2).channels(channels).image(16, 13).filters(5).kernel(3, 3).pad(1)
                                .layout(layout).bias();
            INFO(p.str());
            CHECK(detail::winograd_shape(p, Pass::Forward).m == (channels == 476 ? 4 : 2));
            check_winograd_forward(*context, p, seed += 3);
            // Backward-data reduces over the filters: 5 per group, so F(4×4).
            CHECK(detail::winograd_shape(p, Pass::BackwardData).m == 4);
            check_winograd_backward_data(*context, p, seed += 3);
        }
        // Backward-data over 480 filters: F(2×2).
        ConvProblem q = vkt::problem().batch(2).channels(3).image(16, 14).filters(480).kernel(3, 3).pad(1).layout(layout);
        CHECK(detail::winograd_shape(q, Pass::BackwardData).m == 2);
        check_winograd_backward_data(*context, q, seed += 3);
    }
}

TEST_CASE("PassOptions::variant picks Winograd's tile, and F(4x4) past its bound and unknown forms are refused",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    CHECK(vkconv::algorithm_variants(Algorithm::Winograd, Pass::Forward) ==
          std::vector<std::string>{"F(4x4,3x3)", "F(2x2,3x3)"});
    CHECK(vkconv::algorithm_variants(Algorithm::Winograd, Pass::BackwardData).size() == 2);
    CHECK(vkconv::algorithm_variants(Algorithm::Winograd, Pass::BackwardFilter).empty());
    CHECK(vkconv::algorithm_variants(Algorithm::Mec, Pass::Forward) == std::vector<std::string>{"A", "B"});
    CHECK(vkconv::algorithm_variants(Algorithm::Mec, Pass::BackwardData).empty());
    CHECK(vkconv::algorithm_variants(Algorithm::Im2col, Pass::Forward).empty());
    CHECK(vkconv::algorithm_variants(Algorithm::Auto, Pass::Forward).empty());
    // The rule would take F(4x4) here (2 images of 4x4 tiles, 8 channels); F(2x2) asked for runs F(2x2).
    const ConvProblem p = vkt::problem().batch(2).channels(8).image(16, 13).filters(5).kernel(3, 3).pad(1).bias();
    REQUIRE(detail::winograd_shape(p, Pass::Forward).m == 4);
    CHECK(check_winograd_forward(*context, p, 551, {}, with_tile({}, 2)).first.variant == "F(2x2,3x3)");
    CHECK(check_winograd_backward_data(*context, p, 553, with_tile({}, 2)).first.variant == "F(2x2,3x3)");
    // Auto with Winograd's form: the algorithm that has it takes it, the others ignore it.
    {
        vkconv::Tensor x = vkconv::Tensor::from_host(*context, p.input_shape(), vkt::random_values(p.input_elements(), 1));
        vkconv::Tensor w = vkconv::Tensor::from_host(*context, p.filter_shape(), vkt::random_values(p.filter_elements(), 2));
        vkconv::Tensor b = vkconv::Tensor::from_host(*context, p.bias_shape(), vkt::random_values(p.K, 3));
        vkconv::Tensor y(*context, p.output_shape());
        vkconv::PassOptions options = with_tile({}, 2);
        options.auto_choice = vkconv::AutoChoice::Heuristic;  // 8 channels: not Winograd's rule
        const auto stats = vkconv::forward(*context, p, x, w, &b, y, Algorithm::Auto, options);
        CHECK(stats.algorithm != Algorithm::Winograd);
        CHECK(stats.variant != "F(2x2,3x3)");
    }
    // F(4x4) past kMaxRelativeBound (480 channels): refused, naming the bound; F(2x2) runs it.
    const ConvProblem wide = vkt::problem().batch(1).channels(480).image(8, 8).filters(4).kernel(3, 3).pad(1);
    require_error(vkconv::ErrorCategory::Unsupported, {"F(4x4,3x3)", "480 channels per group", "error bound"}, [&] {
        vkconv::forward_workspace_bytes(*context, wide, Algorithm::Winograd, with_tile({}, 4));
    });
    CHECK(vkconv::forward_workspace_bytes(*context, wide, Algorithm::Winograd, with_tile({}, 2)) > 0);
    // Forms the algorithm (with Auto, every algorithm) lacks in all its passes: InvalidArgument, naming them.
    const auto workspace = [&](Algorithm algorithm, Pass pass, const std::string& variant) {
        const vkconv::PassOptions options{.variant = variant};
        if (pass == Pass::Forward) return vkconv::forward_workspace_bytes(*context, p, algorithm, options);
        if (pass == Pass::BackwardData) return vkconv::backward_data_workspace_bytes(*context, p, algorithm, options);
        return vkconv::backward_filter_workspace_bytes(*context, p, algorithm, options);
    };
    const auto bad = [&](Algorithm algorithm, Pass pass, const std::string& variant,
                         const std::vector<std::string>& words) {
        INFO(vkconv::to_string(algorithm) << " " << vkconv::to_string(pass) << " '" << variant << "'");
        require_error(vkconv::ErrorCategory::InvalidArgument, words, [&] { workspace(algorithm, pass, variant); });
    };
    bad(Algorithm::Winograd, Pass::Forward, "F(6x6,3x3)", {"'F(6x6,3x3)'", "form of winograd", "F(4x4,3x3) (winograd)"});
    bad(Algorithm::Winograd, Pass::Forward, "A", {"'A'", "F(2x2,3x3) (winograd)"});
    bad(Algorithm::Im2col, Pass::Forward, "B", {"'B'", "form of im2col", "it has none"});
    bad(Algorithm::Auto, Pass::Forward, "f(2x2,3x3)", {"any algorithm", "A (mec), B (mec)", "F(2x2,3x3) (winograd)"});
    bad(Algorithm::Auto, Pass::BackwardFilter, "C", {"any algorithm", "A (mec)"});
    // A form of the algorithm in another pass runs without it here (one options value serves a training step).
    CHECK(workspace(Algorithm::Mec, Pass::BackwardData, "A") ==
          vkconv::backward_data_workspace_bytes(*context, p, Algorithm::Mec));
    CHECK(workspace(Algorithm::Auto, Pass::BackwardFilter, "F(2x2,3x3)") ==
          vkconv::backward_filter_workspace_bytes(*context, p, Algorithm::Auto));
    // Applicability comes first: Winograd's form on a 5x5 kernel is Winograd's refusal, Unsupported.
    ConvProblem five = p;
    five.R = five.S = 5, five.pad_h = five.pad_w = 2;
    require_error(vkconv::ErrorCategory::Unsupported, {"3x3 kernel"}, [&] {
        vkconv::forward_workspace_bytes(*context, five, Algorithm::Winograd, with_tile({}, 2));
    });
}

TEST_CASE("winograd runs in chunks of images and bands of tile rows, with exact workspace and peak",
          "[winograd][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    const ConvProblem base =
        vkt::problem().batch(3).channels(5).image(23, 18).filters(6).kernel(3, 3).pads(1, 0, 2, 1).bias();
    uint32_t seed = 700;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        ConvProblem p = base;
        p.layout = layout;
        const uint64_t align = context->pool_stats().alignment;
        // One image's input is 23·18·5·4 = 8,280 bytes: 12 KiB bindings hold one image but not its V (6×5 tiles of
        // 36·8 floats = 34,560 bytes), so every image runs in bands of tile rows.
        const std::vector<vkconv::PassOptions> limits = {
            {},
            {.max_binding_bytes = 40000},  // one image a chunk
            {.max_binding_bytes = 12 * 1024},  // bands of tile rows
            {.workspace_limit = 40 * 1024},    // bands under the workspace limit alone
        };
        for (const auto& options : limits) {
            INFO(vkconv::to_string(layout) << " max_binding_bytes " << options.max_binding_bytes << " workspace_limit "
                                           << options.workspace_limit);
            const uint64_t live = context->pool_stats().in_use;
            const auto forward = check_winograd_forward(*context, p, seed += 3, {}, options);
            const auto data = check_winograd_backward_data(*context, p, seed += 3, options);
            if (options.max_binding_bytes || options.workspace_limit) {
                CHECK(forward.first.chunks > 1);
                CHECK(data.first.chunks > 1);
            } else {
                CHECK(forward.first.chunks == 1);
            }
            if (options.max_binding_bytes == 12 * 1024) CHECK(forward.first.chunks > uint32_t(p.N));
            if (options.workspace_limit) CHECK(forward.first.workspace_bytes <= options.workspace_limit);
            // The workspace written from the sizes: V then M (M on the pool alignment) and U, each rounded.
            for (Pass pass : {Pass::Forward, Pass::BackwardData}) {
                const auto s = detail::winograd_shape(p, pass);
                const auto& stats = pass == Pass::Forward ? forward.first : data.first;
                // Tiles per chunk: all of an image's rows times the images, or one band.
                bool matched = false;
                for (int64_t images = 1; images <= p.N; ++images)
                    for (int64_t rows = 1; rows <= s.tiles_h; ++rows) {
                        if (images > 1 && rows != s.tiles_h) continue;
                        const int64_t tiles = images * rows * s.tiles_w;
                        const uint64_t v = (s.v_floats(tiles) * 4 + align - 1) / align * align;
                        const uint64_t bytes = context->pool_stats().rounded(v + s.m_floats(tiles) * 4) +
                                               context->pool_stats().rounded(s.u_floats() * 4);
                        const uint32_t chunks = uint32_t(images == 1 && rows < s.tiles_h
                                                             ? p.N * ((s.tiles_h + rows - 1) / rows)
                                                             : (p.N + images - 1) / images);
                        matched = matched || (bytes == stats.workspace_bytes && chunks == stats.chunks);
                    }
                CHECK(matched);
                CHECK(stats.workspace_bytes > 0);
            }
            CHECK(context->pool_stats().in_use == live);  // the workspace went back
        }
    }
}

TEST_CASE("a winograd pass's peak is its operands plus the queried workspace", "[winograd][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    ConvProblem p = vkt::problem().batch(2).channels(7).image(13, 11).filters(5).kernel(3, 3).pad(1).bias();
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        p.layout = layout;
        vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), b(*context, p.bias_shape());
        vkconv::Tensor y(*context, p.output_shape()), dx(*context, p.input_shape());
        INFO(vkconv::to_string(layout));
        const uint64_t in_use = context->pool_stats().in_use;
        const uint64_t fw = vkconv::forward_workspace_bytes(*context, p, Algorithm::Winograd);
        const auto forward = vkconv::forward(*context, p, x, w, &b, y, Algorithm::Winograd);
        CHECK(forward.workspace_bytes == fw);
        CHECK(forward.peak_bytes == in_use + fw);
        const uint64_t dw = vkconv::backward_data_workspace_bytes(*context, p, Algorithm::Winograd);
        const auto data = vkconv::backward_data(*context, p, y, w, dx, Algorithm::Winograd);
        CHECK(data.workspace_bytes == dw);
        CHECK(data.peak_bytes == in_use + dw);
        CHECK(context->pool_stats().in_use == in_use);
    }
}

TEST_CASE("winograd reruns are bit-identical", "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        ConvProblem p = vkt::problem().batch(2).channels(10).image(9, 14).filters(6).kernel(3, 3).pad(1).groups(2)
                            .layout(layout).bias();
        INFO(p.str());
        const vkconv::PassOptions chunked{.max_binding_bytes = 16 * 1024};
        for (const auto& options : {vkconv::PassOptions{}, chunked}) {
          for (int m : {4, 2}) {
            const vkconv::PassOptions tiled = with_tile(options, m);
            const auto first = check_winograd_forward(*context, p, 900, {}, tiled);
            const auto again = check_winograd_forward(*context, p, 900, {}, tiled);
            CHECK(std::memcmp(first.second.data(), again.second.data(), first.second.size() * 4) == 0);
            const auto data = check_winograd_backward_data(*context, p, 901, tiled);
            const auto data_again = check_winograd_backward_data(*context, p, 901, tiled);
            CHECK(std::memcmp(data.second.data(), data_again.second.data(), data.second.size() * 4) == 0);
          }
        }
    }
}

TEST_CASE("winograd refuses backward-filter and problems that are not 3x3, stride 1, dilation 1",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const ConvProblem ok = vkt::problem().batch(1).channels(4).image(8, 8).filters(4).kernel(3, 3).pad(1);
    auto refused = [&](const ConvProblem& p, Pass pass, const std::string& why) {
        INFO(vkconv::to_string(pass) << " " << p.str());
        vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), y(*context, p.output_shape());
        try {
            if (pass == Pass::Forward) vkconv::forward(*context, p, x, w, nullptr, y, Algorithm::Winograd);
            else if (pass == Pass::BackwardData) vkconv::backward_data(*context, p, y, w, x, Algorithm::Winograd);
            else vkconv::backward_filter(*context, p, x, y, w, nullptr, Algorithm::Winograd);
            FAIL("not refused");
        } catch (const vkconv::Error& e) {
            CHECK(e.category() == vkconv::ErrorCategory::Unsupported);
            CHECK_THAT(e.what(), Catch::Contains(why));
        }
    };
    refused(ok, Pass::BackwardFilter, "winograd does not run backward-filter");
    CHECK_THROWS_AS(vkconv::backward_filter_workspace_bytes(*context, ok, Algorithm::Winograd), vkconv::Error);
    ConvProblem k5 = ok, stride = ok, dilated = ok, k3x1 = ok;
    k5.R = k5.S = 5, k5.pad_h = k5.pad_w = 2;
    stride.stride_h = 2;
    dilated.dilation_w = 2;
    k3x1.S = 1, k3x1.pad_w = 0;
    for (Pass pass : {Pass::Forward, Pass::BackwardData}) {
        // The table's refusal says what Winograd needs.
        for (const ConvProblem& p : {k5, k3x1, stride, dilated}) {
            refused(p, pass, "a 3x3 kernel, stride 1 and dilation 1");
            CHECK_FALSE(vkconv::algorithm_applies(Algorithm::Winograd, p, pass));
        }
    }
    CHECK(vkconv::algorithm_applies(Algorithm::Winograd, ok, Pass::Forward));
    CHECK(vkconv::algorithm_applies(Algorithm::Winograd, ok, Pass::BackwardData));
    CHECK_FALSE(vkconv::algorithm_applies(Algorithm::Winograd, ok, Pass::BackwardFilter));
    CHECK(vkconv::parse_algorithm("Winograd") == Algorithm::Winograd);
    CHECK(std::string(vkconv::to_string(Algorithm::Winograd)) == "winograd");
}

TEST_CASE("winograd's observed errors against its bound (summary)", "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // Runs after the cases above in one process: prints the worst ratios they saw.
    for (const Observed& o : observed)
        if (o.m)
            std::printf("winograd F(%dx%d, 3x3): worst |error| / bound %.3g, worst |error| / max|reference| %.3g\n",
                        o.m, o.m, o.ratio, o.relative);
    for (int m : {2, 4})
        std::printf("winograd F(%dx%d, 3x3): alpha %.0f, relative normwise bound at 64 / 256 / 512 channels: %.3g "
                    "/ %.3g / %.3g\n",
                    m, m, detail::winograd_alpha(m), detail::winograd_relative_bound(m, 64),
                    detail::winograd_relative_bound(m, 256), detail::winograd_relative_bound(m, 512));
}

TEST_CASE("find measures winograd where it applies and the heuristic takes it on CPU devices where it pays",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // 16 channels and filters, 90 F(2×2) tiles: the heuristic's rule holds.
    const ConvProblem p = vkt::problem().batch(1).channels(16).image(20, 18).filters(16).kernel(3, 3).pad(1);
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
        INFO(vkconv::to_string(pass));
        const auto results = vkconv::find_algorithms(*context, pass, p);
        const auto it = std::find_if(results.begin(), results.end(),
                                     [](const vkconv::AlgorithmPerf& r) { return r.algorithm == Algorithm::Winograd; });
        if (pass == Pass::BackwardFilter) {
            CHECK(it == results.end());
        } else {
            REQUIRE(it != results.end());
            CHECK(it->verified);
            CHECK(it->deterministic);
        }
    }
    vkt::TempDir dir("vkconv winograd profile");
    const auto profile = [&](const std::string& type) {
        const auto path = dir.path / (type + ".json");
        vkt::write_bytes(path, R"({"capabilities": {"device": {"properties": {"VkPhysicalDeviceProperties": {)"
                               R"("deviceName": "Test", "deviceType": "VK_PHYSICAL_DEVICE_TYPE_)" + type +
                                   R"(", "limits": {"maxComputeSharedMemorySize": 32768}}}}}})");
        return vkconv::DeviceProfile::load(path.string());
    };
    const auto cpu = profile("CPU"), gpu = profile("DISCRETE_GPU");
    for (Pass pass : {Pass::Forward, Pass::BackwardData}) {
        INFO(vkconv::to_string(pass));
        CHECK(vkconv::plan_pass(cpu, p, pass, Algorithm::Auto).algorithm == Algorithm::Winograd);
        CHECK(vkconv::plan_pass(gpu, p, pass, Algorithm::Auto).algorithm != Algorithm::Winograd);
        ConvProblem few = p;  // 3 channels: the transforms, not the GEMM, would dominate
        few.C = 3;
        CHECK(vkconv::plan_pass(cpu, few, pass, Algorithm::Auto).algorithm != Algorithm::Winograd);
        ConvProblem small = p;  // 3×3 outputs: 4 F(2×2) tiles, below the rule's 16
        small.H = small.W = 3;
        CHECK(vkconv::plan_pass(cpu, small, pass, Algorithm::Auto).algorithm != Algorithm::Winograd);
    }
    CHECK(vkconv::plan_pass(cpu, p, Pass::BackwardFilter, Algorithm::Auto).algorithm != Algorithm::Winograd);
}

TEST_CASE("winograd runs the tiles of tensors too large to bind", "[winograd][gpu]") {
    // 6144 bytes: one image of the problems below is larger, a tile row fits
    auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 6144});
    if (!context) return;
    uint32_t seed = 1100;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        for (const ConvProblem& base :
             {vkt::problem().batch(2).channels(5).image(23, 17).filters(6).kernel(3, 3).pad(1).bias().build(),
              vkt::problem().batch(1).channels(8).image(13, 19).filters(4).kernel(3, 3).pads(2, 0, 1, 1).groups(2)
                  .build()}) {
            ConvProblem p = base;
            p.layout = layout;
            INFO(p.str());
            // One image exceeds the binding limit, so Winograd (which binds whole images or tile rows) runs only
            // in tiles: without them the pass is refused. A tile is a problem of its own with its own tile grid:
            // the normwise bound, valid for any grid.
            check_winograd_forward(*context, p, seed += 3, {}, {}, true);
            check_winograd_backward_data(*context, p, seed += 3, {}, true);
        }
    }
}

TEST_CASE("a layer step under auto runs winograd's backward-data beside another algorithm's backward-filter",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    if (context->device().type != "CPU") {
        vkt::skip_case("the heuristic takes winograd on CPU devices only");
        return;
    }
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        const ConvProblem p =
            vkt::problem().batch(1).channels(16).image(20, 18).filters(16).kernel(3, 3).pad(1).layout(layout).bias();
        INFO(p.str());
        const auto x = vkt::random_values(size_t(p.input_elements()), 1201);
        const auto w = vkt::random_values(size_t(p.filter_elements()), 1202);
        const auto dy = vkt::random_values(size_t(p.output_elements()), 1203);
        auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
        auto tw = vkconv::Tensor::from_host(*context, p.filter_shape(), w);
        auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
        auto tdx = vkconv::Tensor::from_host(*context, p.input_shape(), vkt::poison(p.input_elements()));
        auto tdw = vkconv::Tensor::from_host(*context, p.filter_shape(), vkt::poison(p.filter_elements()));
        auto tdb = vkconv::Tensor::from_host(*context, p.bias_shape(), vkt::poison(p.K));
        const auto stats = vkconv::layer_backward(*context, p, tx, tw, tdy, tdx, tdw, &tdb, Algorithm::Auto);
        CHECK(stats.data_algorithm == Algorithm::Winograd);
        CHECK(stats.filter_algorithm != Algorithm::Winograd);
        CHECK(stats.step.workspace_bytes == vkconv::layer_backward_workspace_bytes(*context, p, Algorithm::Auto));
        const std::vector<double> none(size_t(p.input_elements()), 0.0);
        check_bound(tdx.download(), vkconv::reference::backward_data(p, dy, w),
                    winograd_bound(p, Pass::BackwardData, dy, w), none, detail::winograd_shape(p, Pass::BackwardData).m,
                    "layer step dx");
        vkt::check_close(tdw.download(), vkconv::reference::backward_filter(p, x, dy),
                         vkconv::reference::backward_filter(p, vkt::absolute(x), vkt::absolute(dy)),
                         p.N * p.P() * p.Q(), "layer step dw");
    }
}

