// vkconv demo: forward convolution of the benchmark layers on one device, with per-layer algorithm,
// GPU time, GFLOP/s and memory, each result checked against the CPU reference where that is quick.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "cli_common.hpp"
#include "commands.hpp"
#include "layers.hpp"

namespace vkconv_cli {
namespace {

// Layers small enough for a quick look on a software device; --all runs the whole table.
const std::set<std::string> kQuickLayers = {
    "cv5", "cv6", "cv9", "cv10", "cv11", "cv12", "resnet_3x3_14", "mobilenet_dw_112", "dilated_3x3_d2"};
// The CPU reference is skipped above this many multiply-adds (about a second of double loops).
constexpr double kCheckLimitMacs = 4e8;

struct DemoArgs {
    std::string layers_file;
    std::vector<std::string> only;
    bool all = false;
    int64_t batch = 0;
    int repeat = 3;
    bool no_check = false;
    std::string algorithm = "auto";
    std::string device;
};

std::string human_bytes(uint64_t bytes) {
    char buf[32];
    if (bytes >= (1ull << 20))
        std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
    else
        std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
    return buf;
}

// Largest |gpu - ref| over the fp32 summation bound (n + 2) u sum|terms|: <= 1 means within rounding.
double error_over_bound(const vkconv::ConvProblem& p, const std::vector<float>& x, const std::vector<float>& w,
                        const std::vector<float>& y) {
    const auto ref = vkconv::reference::forward(p, x, w);
    std::vector<float> ax(x.size()), aw(w.size());
    std::transform(x.begin(), x.end(), ax.begin(), [](float v) { return std::fabs(v); });
    std::transform(w.begin(), w.end(), aw.begin(), [](float v) { return std::fabs(v); });
    const auto mag = vkconv::reference::forward(p, ax, aw);
    const double factor = (p.channels_per_group() * p.R * p.S + 2) * std::ldexp(1.0, -24);
    double worst = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        const double ratio = std::fabs(y[i] - ref[i]) / (factor * mag[i] + 1e-30);
        worst = std::isnan(ratio) ? INFINITY : std::max(worst, ratio);
    }
    return worst;
}

int run_demo(const DemoArgs& args) {
    std::string text(builtin_layers_csv());
    std::string origin = "built-in layers.csv";
    if (!args.layers_file.empty()) {
        std::ifstream in(args.layers_file);
        if (!in)
            throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                                "cannot open --layers '" + args.layers_file + "'");
        std::stringstream buffer;
        buffer << in.rdbuf();
        text = buffer.str();
        origin = args.layers_file;
    }
    auto layers = parse_layers(text, origin);
    std::vector<Layer> chosen;
    for (const auto& name : args.only)
        if (std::none_of(layers.begin(), layers.end(), [&](const Layer& l) { return l.name == name; }))
            throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "no layer named '" + name + "' in " + origin);
    for (auto& layer : layers) {
        const bool wanted = !args.only.empty()
                                ? std::count(args.only.begin(), args.only.end(), layer.name) > 0
                                : args.all || !args.layers_file.empty() || kQuickLayers.count(layer.name);
        if (!wanted) continue;
        if (args.batch > 0) layer.problem.N = args.batch;
        layer.problem.validate();
        chosen.push_back(layer);
    }
    if (args.repeat < 1) throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "--repeat must be at least 1");
    const auto algorithm = vkconv::parse_algorithm(args.algorithm);

    vkconv::ContextOptions options;
    options.device = args.device;
    vkconv::Context context(options);
    std::printf("device: %s\n", context.device().summary().c_str());
    std::printf("%-17s %-34s %-7s %9s %8s %10s %10s %10s  %s\n", "layer", "N,C,HxW -> K,PxQ  RxS/stride", "algo",
                "gpu ms", "GFLOP/s", "operands", "workspace", "peak", "check");
    int failures = 0;
    uint32_t seed = 1;
    int unsupported = 0;
    for (const auto& layer : chosen) {
        const auto& p = layer.problem;
        try {
            const auto x = random_values(p.input_elements(), seed++);
            const auto w = random_values(p.filter_elements(), seed++);
            auto input = vkconv::Tensor::from_host(context, p.input_shape(), x);
            auto filter = vkconv::Tensor::from_host(context, p.filter_shape(), w);
            vkconv::Tensor output(context, p.output_shape());
            const uint64_t operands = input.bytes() + filter.bytes() + output.bytes();
            std::vector<double> times;
            vkconv::RunStats stats;
            vkconv::forward(context, p, input, filter, nullptr, output, algorithm);  // warm-up: pipeline creation
            for (int r = 0; r < args.repeat; ++r) {
                stats = vkconv::forward(context, p, input, filter, nullptr, output, algorithm);
                times.push_back(stats.gpu_ms);
            }
            std::sort(times.begin(), times.end());
            const double ms = times[times.size() / 2];
            std::string check = "skipped";
            const double macs = p.forward_flops() / 2;
            if (!args.no_check && macs <= kCheckLimitMacs) {
                const double ratio = error_over_bound(p, x, w, output.download());
                char buf[48];
                std::snprintf(buf, sizeof buf, "%s (err/bound %.2g)", ratio <= 1 ? "ok" : "FAIL", ratio);
                check = buf;
                failures += ratio <= 1 ? 0 : 1;
            }
            char shape[64];
            std::snprintf(shape, sizeof shape, "%lld,%lld,%lldx%lld -> %lld,%lldx%lld  %lldx%lld/%lld", (long long)p.N,
                          (long long)p.C, (long long)p.H, (long long)p.W, (long long)p.K, (long long)p.P(),
                          (long long)p.Q(), (long long)p.R, (long long)p.S, (long long)p.stride_h);
            std::printf("%-17s %-34s %-7s %9.3f %8.2f %10s %10s %10s  %s\n", layer.name.c_str(), shape,
                        vkconv::to_string(stats.algorithm), ms, p.forward_flops() / (ms * 1e6),
                        human_bytes(operands).c_str(), human_bytes(stats.workspace_bytes).c_str(),
                        human_bytes(stats.peak_bytes).c_str(), check.c_str());
        } catch (const vkconv::Error& e) {
            // A layer this device cannot run (too large a binding, say) is reported, not fatal.
            if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
            std::printf("%-17s unsupported on this device: %s\n", layer.name.c_str(), e.what());
            ++unsupported;
        }
        std::fflush(stdout);
    }
    if (unsupported) std::printf("%d layer(s) unsupported on this device\n", unsupported);
    std::printf("%zu layers, %s; times are the median of %d runs (%s)\n", chosen.size(),
                failures        ? "SOME CHECKS FAILED"
                : args.no_check ? "not checked (--no-check)"
                                : "all checked results within fp32 rounding bounds",
                args.repeat, context.device().timestamps ? "GPU timestamps" : "wall clock");
    return failures ? kRuntimeFailure : kSuccess;
}

}  // namespace

Action add_demo_command(CLI::App& root) {
    auto args = std::make_shared<DemoArgs>();
    auto* command =
        root.add_subcommand("demo", "forward convolution of the benchmark layers (a quick subset by default)");
    command->add_option("--layers", args->layers_file, "layer table in layers.csv format (default: the built-in one)");
    command->add_option("--layer", args->only, "run only these layers (repeatable)");
    command->add_flag("--all", args->all, "run every layer of the table, not the quick subset");
    command->add_option("--batch", args->batch, "override the batch size N of every layer")->check(CLI::PositiveNumber);
    command->add_option("--repeat", args->repeat, "timed runs per layer (median reported)")->capture_default_str();
    command->add_flag("--no-check", args->no_check, "skip the CPU-reference check");
    command->add_option("--algo", args->algorithm, "algorithm: auto, direct, im2col or mec")->capture_default_str();
    command->add_option("--device", args->device, "device index or case-insensitive name substring");
    return [args] { return run_demo(*args); };
}

}  // namespace vkconv_cli
