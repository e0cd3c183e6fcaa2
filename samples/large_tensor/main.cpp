// vkconv_large_tensor: forward, backward-data and backward-filter of a convolution whose input is larger
// than one device buffer (stored by vkconv in pages), each pass with each algorithm that applies, checked
// at sampled points against double-precision sums, with GPU time and the pool's peak.
//
// The input, filter and output gradient are a hash of each element's index, so the reference at a sampled
// point recomputes the values it needs and the host never holds a second copy of the large tensors.
// Defaults: a 1 x 17 x 8192 x 8192 input (4.56 GB), 4 filters of 3 x 3, stride 2, padding 1.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "vkconv/vkconv.hpp"

namespace {

// Values in [-1, 1) with 24 significant bits (exact in fp32) from an element's index.
float value_at(uint64_t index, uint64_t seed) {
    uint64_t z = index + seed * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return float(int64_t(z >> 40) - (int64_t{1} << 23)) / float(1 << 23);
}

constexpr uint64_t kInputSeed = 1, kFilterSeed = 2, kGradSeed = 3;

std::vector<float> values(int64_t count, uint64_t seed) {
    std::vector<float> v(static_cast<size_t>(count));
    for (size_t i = 0; i < v.size(); ++i) v[i] = value_at(i, seed);
    return v;
}

// Flat indices of the four tensors in either layout.
struct Indexer {
    vkconv::ConvProblem p;
    bool nhwc() const { return p.layout == vkconv::Layout::NHWC; }
    uint64_t x(int64_t n, int64_t c, int64_t h, int64_t w) const {
        return uint64_t(nhwc() ? ((n * p.H + h) * p.W + w) * p.C + c : ((n * p.C + c) * p.H + h) * p.W + w);
    }
    uint64_t y(int64_t n, int64_t k, int64_t i, int64_t j) const {
        return uint64_t(nhwc() ? ((n * p.P() + i) * p.Q() + j) * p.K + k : ((n * p.K + k) * p.P() + i) * p.Q() + j);
    }
    uint64_t w(int64_t k, int64_t c, int64_t r, int64_t s) const {  // c within the group
        const int64_t Cg = p.channels_per_group();
        return uint64_t(nhwc() ? ((k * p.R + r) * p.S + s) * Cg + c : ((k * Cg + c) * p.R + r) * p.S + s);
    }
};

struct Sum {
    double value = 0, magnitude = 0;
    int64_t terms = 0;
    void add(double a, double b) { value += a * b, magnitude += std::fabs(a * b), ++terms; }
    // |gpu - value| over the worst-case bound of recursive fp32 summation of these terms.
    double error_over_bound(float gpu) const {
        const double bound = double(terms + 2) * std::ldexp(1.0, -24) * magnitude;
        const double error = std::fabs(double(gpu) - value);
        return bound > 0 ? error / bound : (error == 0 ? 0 : INFINITY);
    }
};

Sum forward_at(const Indexer& ix, int64_t n, int64_t k, int64_t i, int64_t j) {
    const auto& p = ix.p;
    const int64_t Cg = p.channels_per_group(), g = k / p.filters_per_group();
    Sum sum;
    for (int64_t c = 0; c < Cg; ++c)
        for (int64_t r = 0; r < p.R; ++r)
            for (int64_t s = 0; s < p.S; ++s) {
                const int64_t h = i * p.stride_h - p.pad_top() + r * p.dilation_h;
                const int64_t w = j * p.stride_w - p.pad_left() + s * p.dilation_w;
                if (h < 0 || h >= p.H || w < 0 || w >= p.W) continue;
                sum.add(value_at(ix.x(n, g * Cg + c, h, w), kInputSeed), value_at(ix.w(k, c, r, s), kFilterSeed));
            }
    return sum;
}

Sum backward_data_at(const Indexer& ix, int64_t n, int64_t c, int64_t h, int64_t w) {
    const auto& p = ix.p;
    const int64_t Cg = p.channels_per_group(), Kg = p.filters_per_group(), g = c / Cg;
    Sum sum;
    for (int64_t k = g * Kg; k < (g + 1) * Kg; ++k)
        for (int64_t r = 0; r < p.R; ++r)
            for (int64_t s = 0; s < p.S; ++s) {
                const int64_t hi = h + p.pad_top() - r * p.dilation_h, wj = w + p.pad_left() - s * p.dilation_w;
                if (hi < 0 || wj < 0 || hi % p.stride_h || wj % p.stride_w) continue;
                const int64_t i = hi / p.stride_h, j = wj / p.stride_w;
                if (i >= p.P() || j >= p.Q()) continue;
                sum.add(value_at(ix.y(n, k, i, j), kGradSeed), value_at(ix.w(k, c - g * Cg, r, s), kFilterSeed));
            }
    return sum;
}

Sum backward_filter_at(const Indexer& ix, int64_t k, int64_t c, int64_t r, int64_t s) {
    const auto& p = ix.p;
    const int64_t Cg = p.channels_per_group(), g = k / p.filters_per_group();
    Sum sum;
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t i = 0; i < p.P(); ++i) {
            const int64_t h = i * p.stride_h - p.pad_top() + r * p.dilation_h;
            if (h < 0 || h >= p.H) continue;
            for (int64_t j = 0; j < p.Q(); ++j) {
                const int64_t w = j * p.stride_w - p.pad_left() + s * p.dilation_w;
                if (w < 0 || w >= p.W) continue;
                sum.add(value_at(ix.y(n, k, i, j), kGradSeed), value_at(ix.x(n, g * Cg + c, h, w), kInputSeed));
            }
        }
    return sum;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void report(const char* pass, vkconv::Algorithm algorithm, const vkconv::RunStats& stats, double wall_s, int points,
            double worst) {
    std::printf("%-16s %-14s %10.1f %9.1f %12.2f %12.2f %8u %8d %10.3g\n", pass, vkconv::to_string(algorithm),
                stats.gpu_ms, wall_s, stats.peak_bytes / 1e9, stats.workspace_bytes / 1e6, stats.chunks, points, worst);
    std::fflush(stdout);
}

// The command line.
struct Args {
    std::vector<int64_t> shape{1, 17, 8192, 8192};
    int64_t filters = 4, kernel = 3, stride = 2, pad = 1;
    std::vector<std::string> algorithms;
    std::string layout = "nchw", device;
    int samples = 2000, filter_samples = 24;
    uint64_t max_buffer_bytes = 0;
};

void add_options(CLI::App& app, Args& a) {
    app.add_option("--shape", a.shape, "input N C H W")->expected(4)->capture_default_str();
    app.add_option("--filters", a.filters, "filters K")->capture_default_str();
    app.add_option("--kernel", a.kernel, "filter size R = S")->capture_default_str();
    app.add_option("--stride", a.stride, "stride")->capture_default_str();
    app.add_option("--pad", a.pad, "padding on every side")->capture_default_str();
    app.add_option("--algo", a.algorithms, "algorithms (repeatable; default: every one that applies)");
    app.add_option("--layout", a.layout, "nchw or nhwc")->check(CLI::IsMember({"nchw", "nhwc"}))->capture_default_str();
    app.add_option("--samples", a.samples, "sampled outputs checked per forward and backward-data run")
        ->capture_default_str();
    app.add_option("--filter-samples", a.filter_samples, "sampled filter-gradient entries checked per run")
        ->capture_default_str();
    app.add_option("--max-buffer-bytes", a.max_buffer_bytes, "lower the device's largest buffer (0: its own)");
    app.add_option("--device", a.device, "device index or name substring");
}

vkconv::ConvProblem problem_of(const Args& a) {
    vkconv::ConvProblem p;
    p.N = a.shape[0], p.C = a.shape[1], p.H = a.shape[2], p.W = a.shape[3];
    p.K = a.filters, p.R = p.S = a.kernel;
    p.stride_h = p.stride_w = a.stride;
    p.pad_h = p.pad_w = a.pad;
    p.layout = vkconv::parse_layout(a.layout);
    p.validate();
    return p;
}

// The algorithms named, else every one that applies to the forward pass.
std::vector<vkconv::Algorithm> chosen_algorithms(const Args& a, const vkconv::ConvProblem& p) {
    std::vector<vkconv::Algorithm> chosen;
    for (const auto& name : a.algorithms) chosen.push_back(vkconv::parse_algorithm(name));
    if (chosen.empty()) {
        for (vkconv::Algorithm algorithm : vkconv::all_algorithms())
            if (vkconv::algorithm_applies(algorithm, p, vkconv::Pass::Forward)) chosen.push_back(algorithm);
    }
    return chosen;
}

// The device, the problem and how the input is paged, then the table's header.
void print_header(const vkconv::Context& context, const vkconv::ConvProblem& p) {
    const uint64_t largest = context.device().max_buffer_bytes;
    std::printf("device: %s\n%s\ninput %.2f GB in %llu buffers of at most %llu bytes; output %.2f GB\n\n",
                context.device().summary().c_str(), p.str().c_str(), p.input_elements() * 4 / 1e9,
                static_cast<unsigned long long>((p.input_elements() * 4 + largest - 1) / largest),
                static_cast<unsigned long long>(largest), p.output_elements() * 4 / 1e9);
    std::printf("%-16s %-14s %10s %9s %12s %12s %8s %8s %10s\n", "pass", "algorithm", "gpu ms", "wall s", "peak GB",
                "workspace MB", "chunks", "checked", "err/bound");
}

// Runs passes and checks them at sampled points, one random sequence over all of them, keeping the worst.
struct Checker {
    const Indexer ix;
    std::mt19937_64 rng{7};
    double worst_overall = 0;

    int64_t pick(int64_t extent) { return std::uniform_int_distribution<int64_t>(0, extent - 1)(rng); }

    // One pass with one algorithm: its output poisoned (NaN), the pass run and timed, the output downloaded
    // into `out` and `points` sampled values checked; the row printed.
    template <typename Run, typename ErrorAtSample>
    void run_checked(const char* pass, vkconv::Algorithm algorithm, vkconv::Tensor& output, std::vector<float>& out,
                     int points, Run&& run, ErrorAtSample&& error_at_sample) {
        std::fill(out.begin(), out.end(), NAN);
        output.upload(out);
        const auto start = std::chrono::steady_clock::now();
        const vkconv::RunStats stats = run(algorithm);
        const double wall = seconds_since(start);
        output.download(out);
        double worst = 0;
        for (int t = 0; t < points; ++t) worst = std::max(worst, error_at_sample());
        worst_overall = std::max(worst_overall, worst);
        report(pass, algorithm, stats, wall, points, worst);
    }
};

// The passes that read x (forward, then backward-filter), x uploaded here and freed on return.
void run_passes_reading_x(vkconv::Context& context, const vkconv::ConvProblem& p, const Args& args,
                          const std::vector<vkconv::Algorithm>& chosen, Checker& check, const vkconv::Tensor& w,
                          const vkconv::Tensor& dy, vkconv::Tensor& y, vkconv::Tensor& dw) {
    const Indexer& ix = check.ix;
    std::optional<vkconv::Tensor> x;
    {
        const auto x_host = values(p.input_elements(), kInputSeed);  // freed once on the device
        x = vkconv::Tensor::from_host(context, p.input_shape(), x_host);
    }
    std::vector<float> y_out(size_t(p.output_elements())), dw_out(size_t(p.filter_elements()));
    for (vkconv::Algorithm algorithm : chosen)
        check.run_checked(
            "forward", algorithm, y, y_out, args.samples,
            [&](vkconv::Algorithm a) { return vkconv::forward(context, p, *x, w, nullptr, y, a); },
            [&] {
                const int64_t n = check.pick(p.N), k = check.pick(p.K), i = check.pick(p.P()), j = check.pick(p.Q());
                return forward_at(ix, n, k, i, j).error_over_bound(y_out[ix.y(n, k, i, j)]);
            });
    for (vkconv::Algorithm algorithm : chosen)
        check.run_checked(
            "backward-filter", algorithm, dw, dw_out, args.filter_samples,
            [&](vkconv::Algorithm a) { return vkconv::backward_filter(context, p, *x, dy, dw, nullptr, a); },
            [&] {
                const int64_t k = check.pick(p.K), c = check.pick(p.channels_per_group()), r = check.pick(p.R),
                              s = check.pick(p.S);
                return backward_filter_at(ix, k, c, r, s).error_over_bound(dw_out[ix.w(k, c, r, s)]);
            });
}

// Backward-data, once x is freed: it writes a tensor of x's size.
void run_backward_data(vkconv::Context& context, const vkconv::ConvProblem& p, const Args& args,
                       const std::vector<vkconv::Algorithm>& chosen, Checker& check, const vkconv::Tensor& w,
                       const vkconv::Tensor& dy) {
    const Indexer& ix = check.ix;
    vkconv::Tensor dx(context, p.input_shape());
    std::vector<float> dx_out(size_t(p.input_elements()));
    for (vkconv::Algorithm algorithm : chosen)
        check.run_checked(
            "backward-data", algorithm, dx, dx_out, args.samples,
            [&](vkconv::Algorithm a) { return vkconv::backward_data(context, p, dy, w, dx, a); },
            [&] {
                const int64_t n = check.pick(p.N), c = check.pick(p.C), h = check.pick(p.H), wi = check.pick(p.W);
                return backward_data_at(ix, n, c, h, wi).error_over_bound(dx_out[ix.x(n, c, h, wi)]);
            });
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Forward and backward passes of a convolution whose input is larger than one device buffer, checked "
                 "at sampled points"};
    Args args;
    add_options(app, args);
    CLI11_PARSE(app, argc, argv);

    try {
        const vkconv::ConvProblem p = problem_of(args);
        const std::vector<vkconv::Algorithm> chosen = chosen_algorithms(args, p);
        vkconv::ContextOptions options;
        options.device = args.device;
        options.max_buffer_bytes = args.max_buffer_bytes;
        vkconv::Context context(options);
        print_header(context, p);

        Checker check{Indexer{p}};
        const auto w_host = values(p.filter_elements(), kFilterSeed);
        const auto dy_host = values(p.output_elements(), kGradSeed);
        vkconv::Tensor w = vkconv::Tensor::from_host(context, p.filter_shape(), w_host);
        vkconv::Tensor dy = vkconv::Tensor::from_host(context, p.output_shape(), dy_host);
        vkconv::Tensor y(context, p.output_shape()), dw(context, p.filter_shape());
        run_passes_reading_x(context, p, args, chosen, check, w, dy, y, dw);
        run_backward_data(context, p, args, chosen, check, w, dy);
        const double worst_overall = check.worst_overall;
        std::printf("\nworst sampled error / fp32 bound: %.3g (%s)\n", worst_overall,
                    worst_overall <= 1 ? "within the bound" : "BEYOND THE BOUND");
        return worst_overall <= 1 ? 0 : 1;
    } catch (const vkconv::Error& e) {
        std::fprintf(stderr, "vkconv_large_tensor: error (%s): %s\n", vkconv::to_string(e.category()), e.what());
        return 2;
    }
}
