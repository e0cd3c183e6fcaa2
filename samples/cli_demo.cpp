// vkconv demo: forward convolution and the whole backward step (layer_backward: dx, dw and db on one
// shared workspace) of the benchmark layers on one device, with per-layer algorithm, GPU time, GFLOP/s
// and memory, each result checked against the CPU reference where that is quick.
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
    EpilogueOptions epilogue;  // the forward rows' (z: random values)
};

std::string human_bytes(uint64_t bytes) {
    char buf[32];
    if (bytes >= (1ull << 20))
        std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
    else
        std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
    return buf;
}

std::vector<float> absolute(const std::vector<float>& values) {
    std::vector<float> out(values.size());
    std::transform(values.begin(), values.end(), out.begin(), [](float v) { return std::fabs(v); });
    return out;
}

// Largest |gpu - ref| over the fp32 summation bound (n + 2) u sum|terms| (`magnitude`: the reference on
// absolute values, `n` the reduction length): <= 1 means within rounding.
double error_over_bound(const std::vector<float>& gpu, const std::vector<double>& ref,
                        const std::vector<double>& magnitude, int64_t n) {
    const double factor = double(n + 2) * std::ldexp(1.0, -24);
    double worst = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const double ratio = std::fabs(gpu[i] - ref[i]) / (factor * magnitude[i] + 1e-30);
        worst = std::isnan(ratio) ? INFINITY : std::max(worst, ratio);
    }
    return worst;
}

double median_ms(std::vector<double> times) {
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

std::string check_text(double ratio, int& failures) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s (err/bound %.2g)", ratio <= 1 ? "ok" : "FAIL", ratio);
    failures += ratio <= 1 ? 0 : 1;
    return buf;
}

// The layers to run (--layer, else --all, a --layers file or the quick subset), with --batch applied.
std::vector<Layer> choose_layers(const DemoArgs& args) {
    const LayerTable table = read_layer_table(args.layers_file);
    auto layers = parse_layers(table.text, table.origin);
    std::vector<Layer> chosen;
    check_layer_names(layers, args.only, table.origin);
    for (auto& layer : layers) {
        const bool wanted = !args.only.empty()
                                ? std::count(args.only.begin(), args.only.end(), layer.name) > 0
                                : args.all || !args.layers_file.empty() || kQuickLayers.count(layer.name);
        if (!wanted) continue;
        if (args.batch > 0) layer.problem.N = args.batch;
        layer.problem.validate();
        chosen.push_back(layer);
    }
    return chosen;
}

void print_table_head(const vkconv::Context& context) {
    std::printf("device: %s\n", context.device().summary().c_str());
    std::printf("%-17s %-34s %-*s %9s %8s %10s %10s %10s  %s\n", "layer", "N,C,HxW -> K,PxQ  RxS/stride",
                algorithm_column_width(), "algo",
                "gpu ms", "GFLOP/s", "operands", "workspace", "peak", "check");
}

std::string shape_text(const vkconv::ConvProblem& p) {
    char shape[64];
    std::snprintf(shape, sizeof shape, "%lld,%lld,%lldx%lld -> %lld,%lldx%lld  %lldx%lld/%lld", (long long)p.N,
                  (long long)p.C, (long long)p.H, (long long)p.W, (long long)p.K, (long long)p.P(), (long long)p.Q(),
                  (long long)p.R, (long long)p.S, (long long)p.stride_h);
    return shape;
}

// One layer's forward pass into `output`, timed and checked where quick, as one row; returns whether it was
// checked (its backward step is checked alike).
// With --beta, the forward pass reads `z` through `residual` (the epilogue's; see --activation, --alpha).
bool run_forward_row(vkconv::Context& context, const Layer& layer, const DemoArgs& args, vkconv::Algorithm algorithm,
                     const std::vector<float>& x, const std::vector<float>& w, const vkconv::Tensor& input,
                     const vkconv::Tensor& filter, vkconv::Tensor& output, const std::vector<float>& z,
                     const vkconv::Tensor& residual, int& failures) {
    const auto& p = layer.problem;
    const uint64_t operands =
        input.bytes() + filter.bytes() + output.bytes() + (residual.empty() ? 0 : residual.bytes());
    const vkconv::Epilogue epilogue = args.epilogue.epilogue(residual.empty() ? nullptr : &residual);
    std::vector<double> times;
    vkconv::RunStats stats;
    vkconv::forward(context, p, input, filter, nullptr, output, algorithm, {}, epilogue);  // warm-up: pipelines
    for (int r = 0; r < args.repeat; ++r) {
        stats = vkconv::forward(context, p, input, filter, nullptr, output, algorithm, {}, epilogue);
        times.push_back(stats.gpu_ms);
    }
    const double ms = median_ms(times);
    std::string check = "skipped";
    const double macs = p.forward_flops() / 2;
    const bool checked = !args.no_check && macs <= kCheckLimitMacs;
    if (checked) {
        auto expected = vkconv::reference::forward(p, x, w);
        auto magnitude = vkconv::reference::forward(p, absolute(x), absolute(w));
        args.epilogue.apply(expected, magnitude, z);
        // (The epilogue's roundings: alpha's product and the residual's term.)
        check = check_text(
            error_over_bound(output.download(), expected, magnitude, p.channels_per_group() * p.R * p.S + 3), failures);
    }
    const std::string shape = shape_text(p);
    std::printf("%-17s %-34s %-*s %9.3f %8.2f %10s %10s %10s  %s\n", layer.name.c_str(), shape.c_str(),
                algorithm_column_width(), vkconv::to_string(stats.algorithm), ms, p.forward_flops() / (ms * 1e6), human_bytes(operands).c_str(),
                human_bytes(stats.workspace_bytes).c_str(), human_bytes(stats.peak_bytes).c_str(), check.c_str());
    std::fflush(stdout);
    return checked;
}

// The worse of dx's and dw's error over their bounds.
double backward_error_over_bound(const vkconv::ConvProblem& p, const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>& dy, const vkconv::Tensor& grad_input,
                                 const vkconv::Tensor& grad_filter) {
    const double data = error_over_bound(grad_input.download(), vkconv::reference::backward_data(p, dy, w),
                                         vkconv::reference::backward_data(p, absolute(dy), absolute(w)),
                                         p.filters_per_group() * p.R * p.S);
    const double weights =
        error_over_bound(grad_filter.download(), vkconv::reference::backward_filter(p, x, dy),
                         vkconv::reference::backward_filter(p, absolute(x), absolute(dy)), p.N * p.P() * p.Q());
    return std::max(data, weights);
}

// The backward step of the same layer with a bias: dx, dw and db in one submission.
void run_backward_row(vkconv::Context& context, const Layer& layer, const DemoArgs& args, vkconv::Algorithm algorithm,
                      const std::vector<float>& x, const std::vector<float>& w, const vkconv::Tensor& input,
                      const vkconv::Tensor& filter, bool checked, uint32_t& seed, int& failures) {
    const auto& p = layer.problem;
    auto pb = p;
    pb.has_bias = true;
    const auto dy = random_values(p.output_elements(), seed++);
    auto grad_output = vkconv::Tensor::from_host(context, p.output_shape(), dy);
    vkconv::Tensor grad_input(context, p.input_shape()), grad_filter(context, p.filter_shape()),
        grad_bias(context, pb.bias_shape());
    const uint64_t step_operands = input.bytes() + filter.bytes() + grad_output.bytes() + grad_input.bytes() +
                                   grad_filter.bytes() + grad_bias.bytes();
    vkconv::LayerBackwardStats step;
    std::vector<double> times;
    for (int r = 0; r <= args.repeat; ++r) {  // the first run creates the pipelines
        step = vkconv::layer_backward(context, pb, input, filter, grad_output, grad_input, grad_filter, &grad_bias,
                                      algorithm);
        if (r > 0) times.push_back(step.step.gpu_ms);
    }
    const double step_ms = median_ms(times);
    std::string step_check = "skipped";
    if (checked) step_check = check_text(backward_error_over_bound(p, x, w, dy, grad_input, grad_filter), failures);
    const std::string algorithms = std::string("  backward: ") + vkconv::to_string(step.data_algorithm) + " + " +
                                   vkconv::to_string(step.filter_algorithm);
    std::printf("%-17s %-34s %-*s %9.3f %8.2f %10s %10s %10s  %s\n", "", algorithms.c_str(), algorithm_column_width(),
                "step", step_ms,
                2 * p.forward_flops() / (step_ms * 1e6), human_bytes(step_operands).c_str(),
                human_bytes(step.step.workspace_bytes).c_str(), human_bytes(step.step.peak_bytes).c_str(),
                step_check.c_str());
}

// One layer's forward row and backward-step row, on random operands seeded from `seed`; returns whether
// they were checked against the CPU reference.
bool run_layer(vkconv::Context& context, const Layer& layer, const DemoArgs& args, vkconv::Algorithm algorithm,
               uint32_t& seed, int& failures) {
    const auto& p = layer.problem;
    const auto x = random_values(p.input_elements(), seed++);
    const auto w = random_values(p.filter_elements(), seed++);
    auto input = vkconv::Tensor::from_host(context, p.input_shape(), x);
    auto filter = vkconv::Tensor::from_host(context, p.filter_shape(), w);
    vkconv::Tensor output(context, p.output_shape()), residual;
    std::vector<float> z;
    if (args.epilogue.has_residual()) {
        z = random_values(p.output_elements(), seed++);
        residual = vkconv::Tensor::from_host(context, p.output_shape(), z);
    }
    const bool checked =
        run_forward_row(context, layer, args, algorithm, x, w, input, filter, output, z, residual, failures);
    run_backward_row(context, layer, args, algorithm, x, w, input, filter, checked, seed, failures);
    return checked;
}

void print_summary(const vkconv::Context& context, const DemoArgs& args, vkconv::Algorithm algorithm, size_t layers,
                   size_t checked, int failures, int unsupported) {
    if (unsupported) std::printf("%d layer(s) unsupported on this device\n", unsupported);
    // Claims only what was checked: layers above the check's size are counted apart.
    char verdict[160];
    if (failures)
        std::snprintf(verdict, sizeof verdict, "SOME CHECKS FAILED");
    else if (args.no_check || checked == 0)
        std::snprintf(verdict, sizeof verdict, "not checked (%s)", args.no_check ? "--no-check" : "all too large");
    else
        std::snprintf(verdict, sizeof verdict, "%zu of %zu checked, all within fp32 rounding bounds%s", checked,
                      layers, checked < layers ? " (the others are above the check's size)" : "");
    std::printf("%zu layers, forward and backward step (GFLOP/s of the step counts both passes), %s; times are the "
                "median of %d runs (%s)%s\n",
                layers, verdict, args.repeat, context.device().timestamps ? "GPU timestamps" : "wall clock",
                algorithm == vkconv::Algorithm::Auto ? "; auto: a stored measurement, else the heuristic" : "");
}

int run_demo(const DemoArgs& args) {
    const std::vector<Layer> chosen = choose_layers(args);
    if (args.repeat < 1) throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "--repeat must be at least 1");
    args.epilogue.check();
    const auto algorithm = vkconv::parse_algorithm(args.algorithm);

    vkconv::ContextOptions options;
    options.device = args.device;
    vkconv::Context context(options);
    print_table_head(context);
    int failures = 0;
    uint32_t seed = 1;
    int unsupported = 0;
    size_t checked = 0;
    for (const auto& layer : chosen) {
        try {
            checked += run_layer(context, layer, args, algorithm, seed, failures) ? 1 : 0;
        } catch (const vkconv::Error& e) {
            // A layer this device cannot run (too large a binding, say) is reported, not fatal.
            if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
            std::printf("%-17s unsupported on this device: %s\n", layer.name.c_str(), e.what());
            ++unsupported;
        }
        std::fflush(stdout);
    }
    print_summary(context, args, algorithm, chosen.size(), checked, failures, unsupported);
    return failures ? kRuntimeFailure : kSuccess;
}

}  // namespace

Action add_demo_command(CLI::App& root) {
    auto args = std::make_shared<DemoArgs>();
    auto* command = root.add_subcommand(
        "demo", "forward and backward convolution of the benchmark layers (a quick subset by default)");
    command->add_option("--layers", args->layers_file, "layer table in layers.csv format (default: the built-in one)");
    command->add_option("--layer", args->only, "run only these layers (repeatable)");
    command->add_flag("--all", args->all, "run every layer of the table, not the quick subset");
    command->add_option("--batch", args->batch, "override the batch size N of every layer")->check(positive_integer());
    command->add_option("--repeat", args->repeat, "timed runs per layer (median reported)")->capture_default_str();
    command->add_flag("--no-check", args->no_check, "skip the CPU-reference check");
    command->add_option("--algo", args->algorithm, "algorithm: " + algorithm_choices())
        ->check(parsed_by([](const std::string& text) { vkconv::parse_algorithm(text); }, "ALGORITHM"))
        ->capture_default_str();
    command->add_option("--device", args->device, "device index or case-insensitive name substring");
    args->epilogue.add_to(*command,
                          "forward rows: y = act(alpha * conv + beta * z): beta, with z random values of y's shape");
    return [args] { return run_demo(*args); };
}

}  // namespace vkconv_cli
