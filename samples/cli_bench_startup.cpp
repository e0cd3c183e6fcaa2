// vkconv bench --first-call: what a fresh process waits for before its first results. It times the
// context's creation (instance, device, the pipeline cache file read), then the first forward,
// backward-data and backward-filter with Algorithm::Auto (or one --algo), which measures the algorithms on first use and
// so builds their pipelines, then each call once more. Run in two fresh processes, one with an empty and
// one with a filled pipeline cache file (VKCONV_PIPELINE_CACHE), it shows what the file saves.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>

#include "bench.hpp"
#include "layers.hpp"

namespace vkconv_cli {
namespace {

double milliseconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double timed_ms(const std::function<void()>& call) {
    const auto start = std::chrono::steady_clock::now();
    call();
    return milliseconds_since(start);
}

vkconv::ConvProblem first_call_problem(const BenchArgs& args) {
    const auto layers = parse_layers(builtin_layers_csv(), "built-in layers.csv");
    const std::string name = args.only.empty() ? "resnet_3x3_56" : args.only.front();
    for (const auto& layer : layers) {
        if (layer.name != name) continue;
        vkconv::ConvProblem p = layer.problem;
        if (args.batch > 0) p.N = args.batch;
        p.layout = vkconv::parse_layout(args.layout);
        p.has_bias = true;
        return p;
    }
    throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "--layer '" + name + "' is not in the layer table");
}

}  // namespace

std::string bench_first_call(const vkconv::ContextOptions& options, const BenchArgs& args,
                             std::vector<std::string>& rows) {
    const vkconv::ConvProblem p = first_call_problem(args);
    // One --algo names the algorithm; otherwise Auto, what a caller gets by default.
    const vkconv::Algorithm a =
        args.algorithms.size() == 1 ? vkconv::parse_algorithm(args.algorithms.front()) : vkconv::Algorithm::Auto;
    std::string cache = options.pipeline_cache_path;
    if (cache.empty())
        if (const char* env = std::getenv("VKCONV_PIPELINE_CACHE")) cache = env;
    std::error_code ignored;
    const bool cache_found = !cache.empty() && std::filesystem::exists(cache, ignored);
    const uint64_t cache_bytes = cache_found ? std::filesystem::file_size(cache, ignored) : 0;

    std::optional<vkconv::Context> context;
    const double context_ms = timed_ms([&] { context.emplace(options); });
    std::printf("device: %s\n", context->device().summary().c_str());
    std::printf("\nFirst calls of this process, %s, algorithm %s; pipeline cache file: %s\n", p.str().c_str(),
                vkconv::to_string(a),
                cache.empty() ? "none" : (cache + (cache_found ? " (found, " + std::to_string(cache_bytes) + " bytes)"
                                                               : " (not there yet)"))
                                              .c_str());
    std::printf("%-18s %12s %12s\n", "step", "first ms", "second ms");
    std::printf("%-18s %12.1f %12s\n", "context", context_ms, "-");
    auto x = vkconv::Tensor::from_host(*context, p.input_shape(), random_values(p.input_elements(), 1));
    auto w = vkconv::Tensor::from_host(*context, p.filter_shape(), random_values(p.filter_elements(), 2));
    auto b = vkconv::Tensor::from_host(*context, p.bias_shape(), random_values(p.K, 3));
    auto dy = vkconv::Tensor::from_host(*context, p.output_shape(), random_values(p.output_elements(), 4));
    vkconv::Tensor y(*context, p.output_shape()), dx(*context, p.input_shape()), dw(*context, p.filter_shape()),
        db(*context, p.bias_shape());
    const std::pair<const char*, std::function<void()>> calls[] = {
        {"forward", [&] { vkconv::forward(*context, p, x, w, &b, y, a); }},
        {"backward-data", [&] { vkconv::backward_data(*context, p, dy, w, dx, a); }},
        {"backward-filter", [&] { vkconv::backward_filter(*context, p, x, dy, dw, &db, a); }},
    };
    auto row = [&](const char* step, double first, double second) {
        JsonObject r;
        r.add("kind", "first_call").add("step", step).add("algorithm", vkconv::to_string(a));
        r.add("first_ms", first).add("second_ms", second);
        r.add("pipeline_cache", cache).add("pipeline_cache_found", cache_found).add("pipeline_cache_bytes", cache_bytes);
        r.add_raw("problem", problem_json(p));
        rows.push_back(r.str());
    };
    row("context", context_ms, 0);
    double total = context_ms;
    for (const auto& [name, call] : calls) {
        const double first = timed_ms(call), second = timed_ms(call);
        total += first;
        std::printf("%-18s %12.1f %12.2f\n", name, first, second);
        row(name, first, second);
    }
    std::printf("%-18s %12.1f\n", "until all three", total);
    row("total", total, 0);
    std::fflush(stdout);
    return context->device().summary();
}

}  // namespace vkconv_cli
