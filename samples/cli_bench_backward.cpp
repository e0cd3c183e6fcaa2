// vkconv bench --backward: backward-data and backward-filter per layer, checked, then timed.
#include <cmath>
#include <functional>
#include <random>

#include "bench.hpp"
#include "layers.hpp"

namespace vkconv_cli {
namespace {

struct Exact {
    double value = 0, magnitude = 0;  // the exact gradient and the sum of |terms| (for the fp32 bound)
    int64_t terms = 0;                // the reduction length
};

int64_t x_index(const vkconv::ConvProblem& p, int64_t n, int64_t c, int64_t h, int64_t w) {
    return p.layout == vkconv::Layout::NHWC ? ((n * p.H + h) * p.W + w) * p.C + c : ((n * p.C + c) * p.H + h) * p.W + w;
}
int64_t y_index(const vkconv::ConvProblem& p, int64_t n, int64_t k, int64_t oh, int64_t ow) {
    return p.layout == vkconv::Layout::NHWC ? ((n * p.P() + oh) * p.Q() + ow) * p.K + k
                                            : ((n * p.K + k) * p.P() + oh) * p.Q() + ow;
}
int64_t w_index(const vkconv::ConvProblem& p, int64_t k, int64_t c, int64_t r, int64_t s) {
    const int64_t cg = p.channels_per_group();
    return p.layout == vkconv::Layout::NHWC ? ((k * p.R + r) * p.S + s) * cg + c : ((k * cg + c) * p.R + r) * p.S + s;
}

// dx at a flat index of the input, by gathering every tap that reaches it.
Exact exact_dx(const vkconv::ConvProblem& p, const std::vector<float>& dy, const std::vector<float>& w, int64_t index) {
    int64_t n, c, h, x;
    if (p.layout == vkconv::Layout::NHWC)
        c = index % p.C, x = index / p.C % p.W, h = index / (p.C * p.W) % p.H, n = index / (p.C * p.W * p.H);
    else
        x = index % p.W, h = index / p.W % p.H, c = index / (p.W * p.H) % p.C, n = index / (p.W * p.H * p.C);
    const int64_t cg = p.channels_per_group(), kg = p.filters_per_group(), g = c / cg;
    Exact e;
    for (int64_t r = 0; r < p.R; ++r)
        for (int64_t s = 0; s < p.S; ++s) {
            const int64_t th = h + p.pad_h - r * p.dilation_h, tw = x + p.pad_w - s * p.dilation_w;
            if (th < 0 || tw < 0 || th % p.stride_h || tw % p.stride_w) continue;
            const int64_t oh = th / p.stride_h, ow = tw / p.stride_w;
            if (oh >= p.P() || ow >= p.Q()) continue;
            for (int64_t k = g * kg; k < (g + 1) * kg; ++k) {
                const double t = double(dy[y_index(p, n, k, oh, ow)]) * w[w_index(p, k, c - g * cg, r, s)];
                e.value += t, e.magnitude += std::fabs(t), ++e.terms;
            }
        }
    return e;
}

// dw at a flat index of the filter, by the full reduction over n, p, q.
Exact exact_dw(const vkconv::ConvProblem& p, const std::vector<float>& x, const std::vector<float>& dy, int64_t index) {
    const int64_t cg = p.channels_per_group();
    int64_t k, c, r, s;
    if (p.layout == vkconv::Layout::NHWC)
        c = index % cg, s = index / cg % p.S, r = index / (cg * p.S) % p.R, k = index / (cg * p.S * p.R);
    else
        s = index % p.S, r = index / p.S % p.R, c = index / (p.S * p.R) % cg, k = index / (p.S * p.R * cg);
    const int64_t channel = k / p.filters_per_group() * cg + c;
    Exact e;
    e.terms = p.N * p.P() * p.Q();
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t oh = 0; oh < p.P(); ++oh)
            for (int64_t ow = 0; ow < p.Q(); ++ow) {
                const int64_t h = oh * p.stride_h - p.pad_h + r * p.dilation_h;
                const int64_t wi = ow * p.stride_w - p.pad_w + s * p.dilation_w;
                if (h < 0 || h >= p.H || wi < 0 || wi >= p.W) continue;
                const double t = double(x[x_index(p, n, channel, h, wi)]) * dy[y_index(p, n, k, oh, ow)];
                e.value += t, e.magnitude += std::fabs(t);
            }
    return e;
}

// Worst |gpu - exact| over the bound of the problem's type (output_bound) on 128 sampled entries.
template <typename ExactAt>
double sampled_error_over_bound(vkconv::DataType type, const std::vector<float>& result, ExactAt&& exact_at) {
    return worst_sampled_ratio(static_cast<int64_t>(result.size()), 128, 13, [&](int64_t index) {
        const Exact e = exact_at(index);
        const double bound = output_bound(type, e.terms, e.magnitude, e.value) + 1e-30;
        return std::fabs(result[index] - e.value) / bound;
    });
}

// One backward pass of a layer: how it runs with an algorithm, and its check (worst err/bound).
struct Pass {
    const char* name;
    std::function<vkconv::RunStats(vkconv::Algorithm)> run;
    std::function<double()> check;
};

// One layer in one type: its operands (the host values as the tensors hold them: 16-bit ones narrowed),
// with the bias gradient, as bench times it.
struct BackwardRun {
    std::string layer;
    vkconv::ConvProblem p;
    vkconv::Tensor tx, tw, tdy, tdx, tdw, tdb;
    std::vector<float> x, w, dy;
};

BackwardRun make_run(vkconv::Context& context, const std::string& layer, const vkconv::ConvProblem& p) {
    const vkconv::DataType type = p.data_type;
    BackwardRun r;
    r.layer = layer, r.p = p;
    r.x = random_values(p.input_elements(), 21), r.w = random_values(p.filter_elements(), 22);
    r.dy = random_values(p.output_elements(), 23);
    r.tx = vkconv::Tensor::from_host(context, p.input_shape(), r.x, type);
    r.tw = vkconv::Tensor::from_host(context, p.filter_shape(), r.w, type);
    r.tdy = vkconv::Tensor::from_host(context, p.output_shape(), r.dy, type);
    r.tdx = vkconv::Tensor(context, p.input_shape(), type);
    r.tdw = vkconv::Tensor(context, p.filter_shape(), type);
    r.tdb = vkconv::Tensor(context, p.bias_shape(), type);
    if (type != vkconv::DataType::F32)  // the exact sums take the narrowed values the tensors hold
        r.x = r.tx.download(), r.w = r.tw.download(), r.dy = r.tdy.download();
    return r;
}

// One pass with one algorithm: run, checked, timed, reported (or "unsupported", naming why). An f32 run's figures
// go to `f32`, and a 16-bit run after it prints its time over f32's.
void bench_pass(const BenchArgs& args, const BackwardRun& run, const Pass& pass, const std::string& algorithm_name,
                F32Figures& f32, std::vector<std::string>& json_rows) {
    const vkconv::ConvProblem& p = run.p;
    const auto algorithm = vkconv::parse_algorithm(algorithm_name);
    vkconv::RunStats stats;
    try {
        stats = pass.run(algorithm);
    } catch (const vkconv::Error& e) {
        if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
        std::printf("%-17s %-16s %-*s %-5s unsupported: %s\n", run.layer.c_str(), pass.name, algorithm_column_width(),
                    algorithm_name.c_str(), vkconv::to_string(p.data_type), e.what());
        return;
    }
    const double ratio = pass.check();
    if (!(ratio <= 1))
        throw vkconv::Error(
            vkconv::ErrorCategory::VulkanFailure,
            run.layer + ": " + pass.name + " gave a result beyond the " + vkconv::to_string(p.data_type) + " bound");
    warm_up([&] { pass.run(algorithm); });
    std::vector<double> times;
    for (int r = 0; r < args.repeat; ++r) times.push_back(pass.run(algorithm).gpu_ms);
    const double ms = median(times), gflops = p.forward_flops() / (ms * 1e6);
    const std::string key = std::string(pass.name) + " " + algorithm_name;
    const bool is_f32 = p.data_type == vkconv::DataType::F32;
    const Measured* base = !is_f32 && f32.count(key) ? &f32[key] : nullptr;
    std::printf("%-17s %-16s %-*s %-5s %10.3f %s %9.2f %10s %10s  %.2g\n", run.layer.c_str(), pass.name,
                algorithm_column_width(), vkconv::to_string(stats.algorithm), vkconv::to_string(p.data_type), ms,
                pad_left(time_ratio_cell(ms, base), 7).c_str(), gflops, mib(stats.workspace_bytes).c_str(),
                mib(stats.peak_bytes).c_str(), ratio);
    std::fflush(stdout);
    JsonObject row;
    row.add("kind", pass.name).add("layer", run.layer).add("data_type", vkconv::to_string(p.data_type));
    row.add("algorithm", vkconv::to_string(stats.algorithm)).add("gpu_ms", ms).add("gflops", gflops);
    row.add_memory(stats);
    add_f32_ratios(row, ms, stats.peak_bytes, base);
    row.add("check_error_over_bound", ratio).add_raw("problem", problem_json(p));
    json_rows.push_back(row.str());
    if (is_f32) f32[key] = {ms, stats.peak_bytes};
}

// Both passes of one layer in one type, with every algorithm asked for.
void bench_layer_type(vkconv::Context& context, const BenchArgs& args, const std::string& layer,
                      const vkconv::ConvProblem& p, F32Figures& f32, std::vector<std::string>& json_rows) {
    BackwardRun run = make_run(context, layer, p);
    const Pass passes[] = {
        {"backward-data",
         [&](vkconv::Algorithm a) { return vkconv::backward_data(context, p, run.tdy, run.tw, run.tdx, a); },
         [&] {
             const auto dx = run.tdx.download();
             return sampled_error_over_bound(p.data_type, dx, [&](int64_t i) { return exact_dx(p, run.dy, run.w, i); });
         }},
        {"backward-filter",
         [&](vkconv::Algorithm a) {
             return vkconv::backward_filter(context, p, run.tx, run.tdy, run.tdw, &run.tdb, a);
         },
         [&] {
             const auto dw = run.tdw.download();
             return sampled_error_over_bound(p.data_type, dw, [&](int64_t i) { return exact_dw(p, run.x, run.dy, i); });
         }},
    };
    for (const auto& pass : passes)
        for (const auto& algorithm_name : args.algorithms)
            if (applies(vkconv::parse_algorithm(algorithm_name), p))
                bench_pass(args, run, pass, algorithm_name, f32, json_rows);
}

}  // namespace

void bench_backward(vkconv::Context& context, const BenchArgs& args, std::vector<std::string>& json_rows) {
    auto layers = parse_layers(builtin_layers_csv(), "built-in layers.csv");
    std::printf(
        "\nBackward passes (%s), median of %d runs (GFLOP/s counts the forward's 2*N*K*P*Q*C/G*R*S); t/f32: the time "
        "over f32's\n%-17s %-16s %-*s %-5s %10s %7s %9s %10s %10s  %s\n",
        args.layout.c_str(), args.repeat, "layer", "pass", algorithm_column_width(), "algo", "dtype", "gpu ms", "t/f32",
        "GFLOP/s", "workspace", "peak", "check (sampled err/bound)");
    for (auto& layer : layers) {
        if (!args.only.empty() && std::count(args.only.begin(), args.only.end(), layer.name) == 0) continue;
        auto p = layer.problem;
        if (args.batch > 0) p.N = args.batch;
        p.layout = vkconv::parse_layout(args.layout);
        p.has_bias = true;
        F32Figures f32;
        for (vkconv::DataType type : data_types(args.dtypes)) {
            p.data_type = type;
            try {
                bench_layer_type(context, args, layer.name, p, f32, json_rows);
            } catch (const vkconv::Error& e) {
                if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
                std::printf("%-17s unsupported on this device: %s\n", layer.name.c_str(), e.what());
            }
        }
    }
}

}  // namespace vkconv_cli
