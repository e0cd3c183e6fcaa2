// vkconv bench --backward: backward-data and backward-filter per layer, checked, then timed.
#include <cmath>
#include <functional>
#include <random>

#include "bench.hpp"
#include "layers.hpp"

namespace vkconv_cli {
namespace {

// One backward pass of a layer: how it runs with an algorithm, and its check of what the run wrote (worst
// err/bound at 128 outputs, the bound the algorithm that ran holds to: vkconv::error_over_bound).
struct Pass {
    const char* name;
    std::function<vkconv::RunStats(vkconv::Algorithm)> run;
    std::function<double(const vkconv::RunStats&)> check;
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
    const double ratio = pass.check(stats);
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
         [&](const vkconv::RunStats& ran) {
             return vkconv::error_over_bound(vkconv::Pass::BackwardData, p, ran.algorithm, ran.variant, run.dy, run.w,
                                             {}, run.tdx.download(), 128);
         }},
        {"backward-filter",
         [&](vkconv::Algorithm a) {
             return vkconv::backward_filter(context, p, run.tx, run.tdy, run.tdw, &run.tdb, a);
         },
         [&](const vkconv::RunStats& ran) {
             return vkconv::error_over_bound(vkconv::Pass::BackwardFilter, p, ran.algorithm, ran.variant, run.x,
                                             run.dy, {}, run.tdw.download(), 128);
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
