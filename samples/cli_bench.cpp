// vkconv bench: GEMM throughput and per-layer, per-algorithm forward (and backward) timings with memory.
// Every result is checked (GEMM against a CPU product on sampled entries, convolutions against the
// direct algorithm) before it is timed; buffers are reused across repetitions so page faults and
// allocation are not measured. Times are GPU timestamps where the device has them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <random>


#include "bench.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "layers.hpp"
#include "vkconv/testing.hpp"

namespace vkconv_cli {
namespace {

struct GemmShape {
    std::string name;
    int64_t M, N, K;
};

// Shapes: the cubes the issue names, and the skinny GEMMs convolutions produce (a 3x3 conv on 56x56x64:
// 3136 x 64 x 576; a first layer: 12100 x 96 x 363; a late layer: 49 x 512 x 4608).
const GemmShape kGemmShapes[] = {{"256^3", 256, 256, 256},
                                 {"512^3", 512, 512, 512},
                                 {"1024^3", 1024, 1024, 1024},
                                 {"2048^3", 2048, 2048, 2048},
                                 {"4096^3", 4096, 4096, 4096},
                                 {"conv 3136x64x576", 3136, 64, 576},
                                 {"conv 12100x96x363", 12100, 96, 363},
                                 {"conv 49x512x4608", 49, 512, 4608}};

// --gemm-shape: a name of kGemmShapes, or any M,N,K.
GemmShape gemm_shape(const std::string& text) {
    for (const auto& shape : kGemmShapes)
        if (text == shape.name) return shape;
    long long m = 0, n = 0, k = 0;
    char extra = 0;
    if (std::sscanf(text.c_str(), "%lld,%lld,%lld%c", &m, &n, &k, &extra) == 3 && m > 0 && n > 0 && k > 0)
        return {std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k), m, n, k};
    throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                        "unknown GEMM shape '" + text +
                            "' (expected M,N,K or one of 256^3, 512^3, 1024^3, 2048^3, 4096^3, "
                            "'conv 3136x64x576', 'conv 12100x96x363', 'conv 49x512x4608')");
}

void bench_gemm(vkconv::Context& context, const BenchArgs& args, std::vector<std::string>& json_rows) {
    std::vector<GemmShape> shapes(std::begin(kGemmShapes), std::end(kGemmShapes));
    if (!args.gemm_shapes.empty()) {
        shapes.clear();
        for (const std::string& text : args.gemm_shapes) shapes.push_back(gemm_shape(text));
    }
    std::printf("\nGEMM (C = A*B, fp32, A and B row-major)\n%-20s %-36s %10s %10s\n", "shape", "configuration",
                "gpu ms", "GFLOP/s");
    std::vector<std::string> configs{""};
    if (args.all_configs) configs = vkconv::gemm_configurations(context);
    for (const auto& shape : shapes) {
        const auto av = random_values(shape.M * shape.K, 1), bv = random_values(shape.K * shape.N, 2);
        auto a = vkconv::Tensor::from_host(context, {shape.M, shape.K}, av);
        auto b = vkconv::Tensor::from_host(context, {shape.K, shape.N}, bv);
        vkconv::Tensor c(context, {shape.M, shape.N});
        for (const auto& config : configs) {
            vkconv::GemmOptions options;
            options.configuration = config;
            auto stats = vkconv::gemm(context, a, b, c, options);  // warm-up, and the result to check
            const auto result = c.download();
            std::mt19937 rng(3);
            for (int sample = 0; sample < 64; ++sample) {
                const int64_t m = rng() % shape.M, n = rng() % shape.N;
                double sum = 0, mag = 0;
                for (int64_t k = 0; k < shape.K; ++k) {
                    const double t = double(av[m * shape.K + k]) * bv[k * shape.N + n];
                    sum += t, mag += std::fabs(t);
                }
                if (!(std::fabs(result[m * shape.N + n] - sum) <= (shape.K + 2) * std::ldexp(1.0, -24) * mag))
                    throw vkconv::Error(vkconv::ErrorCategory::VulkanFailure,
                                        "GEMM " + shape.name + " with " + stats.variant +
                                            " gave a wrong result at (" + std::to_string(m) + ", " + std::to_string(n) +
                                            ")");
            }
            warm_up([&] { vkconv::gemm(context, a, b, c, options); });
            std::vector<double> times;
            for (int r = 0; r < args.repeat; ++r) times.push_back(vkconv::gemm(context, a, b, c, options).gpu_ms);
            const double ms = median(times);
            const double gflops = 2.0 * shape.M * shape.N * shape.K / (ms * 1e6);
            std::printf("%-20s %-36s %10.3f %10.2f\n", shape.name.c_str(), stats.variant.c_str(), ms, gflops);
            std::fflush(stdout);
            JsonObject row;
            row.add("kind", "gemm").add("shape", shape.name).add("M", shape.M).add("N", shape.N).add("K", shape.K);
            row.add("configuration", stats.variant).add("gpu_ms", ms).add("gflops", gflops);
            json_rows.push_back(row.str());
        }
    }
}

// Worst |gpu - exact| over the bound the algorithm that ran holds to (vkconv::error_over_bound) at 512 outputs
// spread over y; above 1 is a wrong result. `x` and `w` are the values the tensors hold (16-bit ones narrowed).
double sampled_error(const vkconv::ConvProblem& p, const vkconv::RunStats& ran, const std::vector<float>& x,
                     const std::vector<float>& w, const std::vector<float>& y) {
    return vkconv::error_over_bound(vkconv::Pass::Forward, p, ran.algorithm, ran.variant, x, w, {}, y, 512);
}

// One layer's forward operands in the first context and, with --paged, in the paged one.
struct LayerTensors {
    vkconv::Tensor input, filter, output;
    std::optional<vkconv::Tensor> paged_input, paged_filter, paged_output;
};

// The operands in the problem's type (x and w narrowed to a 16-bit one).
LayerTensors upload_layer(vkconv::Context& context, vkconv::Context* paged, const vkconv::ConvProblem& p,
                          const std::vector<float>& x, const std::vector<float>& w) {
    const vkconv::DataType type = p.data_type;
    LayerTensors t{vkconv::Tensor::from_host(context, p.input_shape(), x, type),
                   vkconv::Tensor::from_host(context, p.filter_shape(), w, type),
                   vkconv::Tensor(context, p.output_shape(), type),
                   {},
                   {},
                   {}};
    if (paged) {
        t.paged_input = vkconv::Tensor::from_host(*paged, p.input_shape(), x, type);
        t.paged_filter = vkconv::Tensor::from_host(*paged, p.filter_shape(), w, type);
        t.paged_output.emplace(*paged, p.output_shape(), type);
    }
    return t;
}

// One layer in one element type: its problem, the inputs as its tensors hold them, the tensors, and direct's
// result once it ran (the other algorithms are compared with it).
struct LayerRun {
    std::string name;
    vkconv::ConvProblem p;
    std::vector<float> x, w;
    LayerTensors t;
    std::vector<float> direct;
};

// The check column without --paged: the sampled error, and how far the result is from Direct's (kept in
// `direct` when this is Direct's own run).
std::string check_column(vkconv::Algorithm ran, double ratio, const std::vector<float>& result,
                         std::vector<float>& direct) {
    char check[96];
    if (ran == vkconv::Algorithm::Direct) {
        direct = result;
        std::snprintf(check, sizeof check, "%.2g; baseline", ratio);
    } else if (!direct.empty()) {
        double worst = 0, scale = 0;
        for (size_t i = 0; i < result.size(); ++i) {
            worst = std::max(worst, double(std::fabs(result[i] - direct[i])));
            scale = std::max(scale, double(std::fabs(direct[i])));
        }
        std::snprintf(check, sizeof check, "%.2g; max|diff| %.2g of max|y| %.2g", ratio, worst, scale);
    } else {
        std::snprintf(check, sizeof check, "%.2g", ratio);
    }
    return check;
}

// A wrong result stops the benchmark: its timing would mean nothing.
void require_within_bound(double ratio, const std::string& what, vkconv::DataType type) {
    if (!(ratio <= 1))
        throw vkconv::Error(vkconv::ErrorCategory::VulkanFailure,
                            what + " a result beyond the " + vkconv::to_string(type) + " rounding bound (err/bound " +
                                std::to_string(ratio) + ")");
}

// The medians' inputs: the first context's times and the paged one's, run in turn.
struct Times {
    std::vector<double> times, paged_times;
};

Times time_forward(vkconv::Context& context, vkconv::Context* paged, const vkconv::ConvProblem& p, LayerTensors& t,
                   vkconv::Algorithm algorithm, int repeat) {
    warm_up([&] {
        vkconv::forward(context, p, t.input, t.filter, nullptr, t.output, algorithm);
        if (paged) vkconv::forward(*paged, p, *t.paged_input, *t.paged_filter, nullptr, *t.paged_output, algorithm);
    });
    Times r;
    for (int i = 0; i < repeat; ++i) {
        r.times.push_back(vkconv::forward(context, p, t.input, t.filter, nullptr, t.output, algorithm).gpu_ms);
        if (paged)
            r.paged_times.push_back(
                vkconv::forward(*paged, p, *t.paged_input, *t.paged_filter, nullptr, *t.paged_output, algorithm).gpu_ms);
    }
    return r;
}

// The table's row and the JSON row of one algorithm's run on one layer. `f32`: the same algorithm's f32 figures
// on this layer, for a 16-bit run (nullptr otherwise).
void report_forward(const LayerRun& run, const vkconv::RunStats& stats, double ms, double ratio,
                    const std::string& check, vkconv::Context* paged, const Times& times, const Measured* f32,
                    std::vector<std::string>& json_rows) {
    const vkconv::ConvProblem& p = run.p;
    const double gflops = p.forward_flops() / (ms * 1e6);
    std::string name = vkconv::to_string(stats.algorithm);
    if (stats.algorithm == vkconv::Algorithm::Mec) name += "-" + stats.variant;
    std::printf("%-17s %-*s %-5s %10.3f %s %9.2f %10s %10s %7u  %s\n", run.name.c_str(), algorithm_column_width(),
                name.c_str(), vkconv::to_string(p.data_type), ms, pad_left(time_ratio_cell(ms, f32), 7).c_str(), gflops,
                mib(stats.workspace_bytes).c_str(), mib(stats.peak_bytes).c_str(), stats.chunks, check.c_str());
    std::fflush(stdout);
    JsonObject row;
    row.add("kind", "forward").add("layer", run.name).add("algorithm", vkconv::to_string(stats.algorithm));
    row.add("data_type", vkconv::to_string(p.data_type));
    if (stats.algorithm == vkconv::Algorithm::Mec) row.add("mec_schedule", stats.variant);
    if (!stats.variant.empty()) row.add("variant", stats.variant);
    row.add("gpu_ms", ms).add("gflops", gflops).add_memory(stats);
    add_f32_ratios(row, ms, stats.peak_bytes, f32);
    row.add("chunks", static_cast<uint64_t>(stats.chunks));
    row.add("check_error_over_bound", ratio).add_raw("problem", problem_json(p));
    if (paged)
        row.add("paged_gpu_ms", median(times.paged_times)).add("paged_buffer_bytes", paged->device().max_buffer_bytes);
    json_rows.push_back(row.str());
}

// With --paged: the run in pages, checked first as the one-buffer run was. Returns false where the paged context
// cannot run it (a 16-bit problem today), said in `check`, so the algorithm is timed in one buffer only.
bool check_paged(vkconv::Context& paged, LayerRun& run, vkconv::Algorithm algorithm, double& paged_ratio,
                 std::string& check) {
    LayerTensors& t = run.t;
    vkconv::RunStats ran;
    try {
        ran = vkconv::forward(paged, run.p, *t.paged_input, *t.paged_filter, nullptr, *t.paged_output, algorithm);
    } catch (const vkconv::Error& e) {
        if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
        check += "; in pages unsupported: " + std::string(e.what());
        return false;
    }
    paged_ratio = sampled_error(run.p, ran, run.x, run.w, t.paged_output->download());
    require_within_bound(paged_ratio, run.name + ": " + vkconv::to_string(algorithm) + " in pages gave",
                         run.p.data_type);
    return true;
}

// One algorithm on one layer in one type: run and checked (in pages too with --paged), timed, reported. An
// algorithm the device cannot run (or not in this type) is reported as such. An f32 run's figures go to
// `f32` for the 16-bit runs after it.
void bench_algorithm(vkconv::Context& context, vkconv::Context* paged, const BenchArgs& args, LayerRun& run,
                     vkconv::Algorithm algorithm, F32Figures& f32, std::vector<std::string>& json_rows) {
    const vkconv::ConvProblem& p = run.p;
    LayerTensors& t = run.t;
    vkconv::RunStats stats;
    std::vector<float> result;
    try {
        stats = vkconv::forward(context, p, t.input, t.filter, nullptr, t.output, algorithm);
        result = t.output.download();
    } catch (const vkconv::Error& e) {
        if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
        std::printf("%-17s %-*s %-5s unsupported: %s\n", run.name.c_str(), algorithm_column_width(),
                    vkconv::to_string(algorithm), vkconv::to_string(p.data_type), e.what());
        return;
    }
    const double ratio = sampled_error(p, stats, run.x, run.w, result);
    require_within_bound(ratio, run.name + ": " + vkconv::to_string(stats.algorithm) + " gave", p.data_type);
    std::string check = check_column(stats.algorithm, ratio, result, run.direct);
    double paged_ratio = 0;
    if (paged && !check_paged(*paged, run, algorithm, paged_ratio, check)) paged = nullptr;
    const Times times = time_forward(context, paged, p, t, algorithm, args.repeat);
    const double ms = median(times.times);
    if (paged) {
        const double paged_ms = median(times.paged_times);
        const uint64_t page = paged->device().max_buffer_bytes;
        const uint64_t input_bytes = uint64_t(p.input_elements()) * vkconv::element_bytes(p.data_type);
        char column[96];
        std::snprintf(column, sizeof column, "%.3f, %.3f, %llu, %.2g", paged_ms, paged_ms / ms,
                      static_cast<unsigned long long>((input_bytes + page - 1) / page), paged_ratio);
        check = column;
    }
    const std::string key = vkconv::to_string(algorithm);
    const bool is_f32 = p.data_type == vkconv::DataType::F32;
    report_forward(run, stats, ms, ratio, check, paged, times, !is_f32 && f32.count(key) ? &f32[key] : nullptr,
                   json_rows);
    if (is_f32) f32[key] = {ms, stats.peak_bytes};
}

// `paged`: a second context with smaller buffers (--paged), where each layer and algorithm also runs, checked
// and timed in turn with the first context's runs. Each layer runs in every type of --dtype in turn, f32 first.
void bench_layers(vkconv::Context& context, vkconv::Context* paged, const BenchArgs& args,
                  std::vector<std::string>& json_rows) {
    auto layers = parse_layers(builtin_layers_csv(), "built-in layers.csv");
    std::vector<vkconv::Algorithm> algorithms;
    for (const auto& name : args.algorithms) algorithms.push_back(vkconv::parse_algorithm(name));
    std::printf(
        "\nForward convolution (%s), median of %d runs; t/f32: the time over f32's\n"
        "%-17s %-*s %-5s %10s %7s %9s %10s %10s %7s  %s\n",
        args.layout.c_str(), args.repeat, "layer", algorithm_column_width(), "algo", "dtype", "gpu ms", "t/f32",
        "GFLOP/s", "workspace", "peak", "chunks",
        paged ? "paged: gpu ms, / one buffer, pages of x, check" : "check (sampled err/bound; vs direct)");
    for (auto& layer : layers) {
        const bool wanted = args.only.empty() ? true : std::count(args.only.begin(), args.only.end(), layer.name) > 0;
        if (!wanted) continue;
        auto p = layer.problem;
        if (args.batch > 0) p.N = args.batch;
        p.layout = vkconv::parse_layout(args.layout);
        const auto x = random_values(p.input_elements(), 7), w = random_values(p.filter_elements(), 8);
        F32Figures f32;
        for (vkconv::DataType type : data_types(args.dtypes)) {
            p.data_type = type;
            LayerRun run{layer.name, p, {}, {}, upload_layer(context, paged, p, x, w), {}};
            // The checks' exact sums take the values the tensors hold: a 16-bit type's narrowed ones.
            run.x = type == vkconv::DataType::F32 ? x : run.t.input.download();
            run.w = type == vkconv::DataType::F32 ? w : run.t.filter.download();
            for (auto algorithm : algorithms) {
                if (!applies(algorithm, p)) continue;
                bench_algorithm(context, paged, args, run, algorithm, f32, json_rows);
            }
        }
    }
}

// One row of the host-time tables: median, p10 and p90 of `us` (sorted here), the objects created.
void host_time_row(const char* kind, const char* name, std::vector<double> us, uint64_t created,
                   std::vector<std::string>& json_rows) {
    std::sort(us.begin(), us.end());
    const double median = us[us.size() / 2], p10 = us[us.size() / 10], p90 = us[us.size() * 9 / 10];
    std::printf("%-28s %10.1f %10.1f %10.1f %8llu\n", name, median, p10, p90, static_cast<unsigned long long>(created));
    JsonObject row;
    row.add("kind", kind).add("call", name).add("median_us", median).add("p10_us", p10).add("p90_us", p90);
    row.add("objects_created", static_cast<int64_t>(created));
    json_rows.push_back(row.str());
}

double microseconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

// Host time of two one-dispatch passes on a small layer, and the Vulkan objects they created:
//  - blocking calls: wall time around the whole call (argument checks and planning included) less GPU
//    time, over 1,000 calls after 100 to warm up;
//  - recorded passes (recording.hpp): wall time of each recording call, 10 recordings of 100 passes, each
//    submitted as one and waited for, after one such recording to warm up.
void bench_overhead(vkconv::Context& context, std::vector<std::string>& json_rows) {
    vkconv::ConvProblem p;
    p.N = 1, p.C = 8, p.H = 8, p.W = 8, p.K = 8, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1, p.has_bias = true;
    auto dy = vkconv::Tensor::from_host(context, p.output_shape(), random_values(p.output_elements(), 1));
    auto x = vkconv::Tensor::from_host(context, p.input_shape(), random_values(p.input_elements(), 2));
    auto w = vkconv::Tensor::from_host(context, p.filter_shape(), random_values(p.filter_elements(), 3));
    vkconv::Tensor db(context, p.bias_shape()), y(context, p.output_shape());
    const char* header = "%-28s %10s %10s %10s %8s\n";
    std::printf("\nHost overhead per blocking call (wall - GPU time), %s, 1000 calls\n", p.str().c_str());
    std::printf(header, "call", "median us", "p10 us", "p90 us", "objects");
    const std::pair<const char*, std::function<vkconv::RunStats()>> calls[] = {
        {"backward_bias", [&] { return vkconv::backward_bias(context, p, dy, db); }},
        {"forward direct", [&] { return vkconv::forward(context, p, x, w, &db, y, vkconv::Algorithm::Direct); }},
    };
    for (const auto& [name, call] : calls) {
        for (int i = 0; i < 100; ++i) call();
        const uint64_t objects = vkconv::testing::vulkan_objects_created(context);
        std::vector<double> us;
        for (int i = 0; i < 1000; ++i) {
            const auto start = std::chrono::steady_clock::now();
            const vkconv::RunStats s = call();
            us.push_back(microseconds_since(start) - s.gpu_ms * 1000.0);
        }
        host_time_row("host_overhead", name, us, vkconv::testing::vulkan_objects_created(context) - objects, json_rows);
    }
    std::printf("\nHost time per recorded pass (10 recordings of 100 passes, each one submission)\n");
    std::printf(header, "call", "median us", "p10 us", "p90 us", "objects");
    const std::pair<const char*, std::function<void(vkconv::Recording&)>> recorded[] = {
        {"backward_bias", [&](vkconv::Recording& r) { vkconv::backward_bias(r, p, dy, db); }},
        {"forward direct",
         [&](vkconv::Recording& r) { vkconv::forward(r, p, x, w, &db, y, vkconv::Algorithm::Direct); }},
    };
    for (const auto& [name, call] : recorded) {
        std::vector<double> us;
        uint64_t objects = 0;
        for (int round = 0; round < 11; ++round) {
            if (round == 1) objects = vkconv::testing::vulkan_objects_created(context), us.clear();
            vkconv::Recording recording(context);
            for (int i = 0; i < 100; ++i) {
                const auto start = std::chrono::steady_clock::now();
                call(recording);
                us.push_back(microseconds_since(start));
            }
            recording.submit().wait();
        }
        host_time_row("host_recorded", name, us, vkconv::testing::vulkan_objects_created(context) - objects, json_rows);
    }
}

void write_bench_json(const std::string& path, const std::string& device, int repeat,
                      const std::vector<std::string>& rows) {
    JsonObject doc;
    doc.add("device", device).add("repeat", static_cast<int64_t>(repeat));
    std::string list = "[";
    for (size_t i = 0; i < rows.size(); ++i) list += (i ? ",\n  " : "\n  ") + rows[i];
    doc.add_raw("results", list + "\n]");
    const std::string text = doc.str() + "\n";
    const std::string tmp = path + ".tmp";
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.close();
    if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "cannot write --json '" + path + "'");
    }
}

int run_bench(const BenchArgs& args) {
    if (!args.json_file.empty()) check_writable(args.json_file, "--json");
    if (args.repeat < 1) throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "--repeat must be at least 1");
    for (const auto& name : args.algorithms) vkconv::parse_algorithm(name);
    data_types(args.dtypes);  // refused before any device is opened
    for (const auto& text : args.gemm_shapes) gemm_shape(text);
    const auto layers = parse_layers(builtin_layers_csv(), "built-in layers.csv");
    check_layer_names(layers, args.only, "built-in layers.csv");

    vkconv::ContextOptions options;
    options.device = args.device;
    std::vector<std::string> rows;
    if (args.first_call) {  // the context is part of what it measures
        const std::string device = bench_first_call(options, args, rows);
        if (!args.json_file.empty()) write_bench_json(args.json_file, device, 1, rows);
        return kSuccess;
    }
    vkconv::Context context(options);
    std::printf("device: %s\n", context.device().summary().c_str());
    std::optional<vkconv::Context> paged;
    if (args.paged_bytes) {
        vkconv::ContextOptions paged_options = options;
        paged_options.max_buffer_bytes = args.paged_bytes;
        paged.emplace(paged_options);
        std::printf("paged: buffers of at most %llu bytes\n", static_cast<unsigned long long>(args.paged_bytes));
    }
    if (args.overhead) {
        bench_overhead(context, rows);
    } else {
        if (!args.layers_only) bench_gemm(context, args, rows);
        if (!args.gemm_only) bench_layers(context, paged ? &*paged : nullptr, args, rows);
        if (args.backward) bench_backward(context, args, rows);
    }
    if (!args.json_file.empty()) write_bench_json(args.json_file, context.device().summary(), args.repeat, rows);
    return kSuccess;
}

}  // namespace

Action add_bench_command(CLI::App& root) {
    auto args = std::make_shared<BenchArgs>();
    auto* command = root.add_subcommand("bench", "GEMM and per-layer forward benchmarks (checked, then timed)");
    command->add_option("--layer", args->only, "only these layers (repeatable; default: every layer)");
    command->add_option("--batch", args->batch, "override the batch size N of every layer")->check(positive_integer());
    command->add_option("--repeat", args->repeat, "timed runs (median reported)")->capture_default_str();
    command->add_option("--algo", args->algorithms, "algorithms to time (repeatable): " + algorithm_choices(false))
        ->check(parsed_by([](const std::string& text) { vkconv::parse_algorithm(text); }, "ALGORITHM"))
        ->capture_default_str();
    command->add_option("--layout", args->layout, "nchw or nhwc")
        ->check(CLI::IsMember({"nchw", "nhwc"}, CLI::ignore_case))
        ->capture_default_str();
    command->add_flag("--gemm-only", args->gemm_only, "only the GEMM shapes");
    command->add_flag("--layers-only", args->layers_only, "only the layers");
    command->add_flag("--backward", args->backward, "also time backward-data and backward-filter per layer");
    command->add_flag("--all-configs", args->all_configs, "time every GEMM tile configuration of the device");
    command->add_flag("--overhead", args->overhead, "only the host overhead of blocking calls (wall - GPU time)");
    command->add_flag("--first-call", args->first_call,
                      "only the first calls of this process: the context, then forward, backward-data and "
                      "backward-filter with algorithm auto (or the one --algo) on one layer (--layer, default resnet_3x3_56)");
    command->add_option("--gemm-shape", args->gemm_shapes, "only these GEMM shapes: a name (e.g. 1024^3) or M,N,K (repeatable)");
    command->add_option("--paged", args->paged_bytes,
                        "also run each layer in a context whose buffers hold at most BYTES (tensors above it in "
                        "pages), timed in turn with the one-buffer runs")
        ->check(CLI::Range(uint64_t{4096}, UINT64_MAX));
    add_data_types_option(*command, args->dtypes,
                          "element types the layers run in, each in turn (repeatable, or a list: f32,bf16); with "
                          "f32 and a 16-bit type, also each 16-bit time over f32's");
    command->add_option("--json", args->json_file, "also write the results as JSON to this file");
    command->add_option("--device", args->device, "device index or case-insensitive name substring");
    return [args] { return run_bench(*args); };
}

}  // namespace vkconv_cli
