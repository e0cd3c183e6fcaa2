// separable_layer — the channel-wise separable layer of a video model, forward and backward, on vkconv.
//
//   separable_layer [--frames 30] [--channels 64] [--height 256] [--width 256] [--budget BYTES] [--json]
//   separable_layer --check        (a reduced size, 6 frames x 8 channels x 19x23, against the CPU reference)
//   separable_layer --max-peak-ratio 1.25   (exit 1 when the pool peak exceeds 1.25 x the operands)
//
// Prints, per pass, GPU and wall time, the pool's peak and peak reserved, the pass's operand bytes, and
// what the im2col route (full-size difference tensors, the im2col lowering as vkconv would run it, and
// unchunked) would have needed. Exit status 1 on a check mismatch or an error.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "separable_layer.hpp"

namespace {

using vkconv::Tensor;
using vkconv::shape_elements;

double mib(uint64_t bytes) {
    return static_cast<double>(bytes) / (1 << 20);
}

// Deterministic values in [-1, 1) without the cost of <random> on half a gigabyte.
std::vector<float> values(int64_t count, uint32_t seed) {
    std::vector<float> v(static_cast<size_t>(count));
    uint32_t s = seed * 2654435761u + 1;
    for (float& x : v) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        x = static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
    return v;
}

struct Operands {
    Tensor frames, k_minus, b1, k_plus, b2, z, g, df, dk_minus, dk_plus, db1, db2;
    std::vector<float> host_frames, host_k_minus, host_b1, host_k_plus, host_b2, host_g;
};

Operands make_operands(vkconv::Context& context, const separable::Layer& layer, const separable::Shape& shape) {
    Operands o;
    const vkconv::ConvProblem p = layer.problem(shape.clips());
    vkconv::Shape frames_shape = p.input_shape();
    frames_shape[0] = shape.frames;
    o.host_frames = values(shape_elements(frames_shape), 1);
    o.host_k_minus = values(shape_elements(p.filter_shape()), 2);
    o.host_k_plus = values(shape_elements(p.filter_shape()), 3);
    o.host_b1 = values(p.K, 4);
    o.host_b2 = values(p.K, 5);
    o.host_g = values(shape_elements(p.output_shape()), 6);
    o.frames = Tensor::from_host(context, frames_shape, o.host_frames);
    o.k_minus = Tensor::from_host(context, p.filter_shape(), o.host_k_minus);
    o.k_plus = Tensor::from_host(context, p.filter_shape(), o.host_k_plus);
    o.b1 = Tensor::from_host(context, p.bias_shape(), o.host_b1);
    o.b2 = Tensor::from_host(context, p.bias_shape(), o.host_b2);
    o.z = Tensor(context, p.output_shape());
    o.g = Tensor::from_host(context, p.output_shape(), o.host_g);
    o.df = Tensor(context, frames_shape);
    o.dk_minus = Tensor(context, p.filter_shape());
    o.dk_plus = Tensor(context, p.filter_shape());
    o.db1 = Tensor(context, p.bias_shape());
    o.db2 = Tensor(context, p.bias_shape());
    return o;
}

// The im2col route: d1 and d3 at full size (kept for the backward pass), a full-size convolution output
// (forward) or e1 and e3 (backward), plus the im2col lowering.
struct Im2colRoute {
    uint64_t forward_buffers = 0, backward_buffers = 0;
    uint64_t forward_workspace = 0, backward_workspace = 0;  // as vkconv runs im2col here (chunked to the binding limit)
    uint64_t lowered_unchunked = 0;                          // the whole N*P*Q x R*S*C/G lowered matrix per group
};

Im2colRoute im2col_route(vkconv::Context& context, const separable::Layer& layer, const separable::Shape& shape) {
    const vkconv::ConvProblem p = layer.problem(shape.clips());
    const uint64_t full = context.pool_stats().rounded(static_cast<uint64_t>(shape_elements(p.output_shape())) * 4);
    Im2colRoute r;
    r.forward_buffers = 3 * full;
    r.backward_buffers = 4 * full;
    r.forward_workspace = vkconv::forward_workspace_bytes(context, p, vkconv::Algorithm::Im2col);
    r.backward_workspace =
        std::max(vkconv::backward_data_workspace_bytes(context, p, vkconv::Algorithm::Im2col),
                 vkconv::backward_filter_workspace_bytes(context, p, vkconv::Algorithm::Im2col));
    r.lowered_unchunked = static_cast<uint64_t>(p.N * p.H * p.W) * p.R * p.S * p.C * 4;
    return r;
}

// Largest |gpu - ref| against a bound that grows with the reduction length behind each value.
bool compare(const char* name, const std::vector<float>& gpu, const std::vector<double>& ref, double length) {
    double max_ref = 0, max_err = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        max_ref = std::max(max_ref, std::abs(ref[i]));
        max_err = std::max(max_err, std::abs(gpu[i] - ref[i]));
    }
    const double bound = 4 * FLT_EPSILON * length * std::max(max_ref, 1.0);
    const bool ok = gpu.size() == ref.size() && max_err <= bound;
    std::printf("  %-9s %8zu values  max |err| %.3g  bound %.3g  %s\n", name, ref.size(), max_err, bound,
                ok ? "ok" : "MISMATCH");
    return ok;
}

bool check(const separable::Layer& layer, const separable::Shape& shape, Operands& o) {
    namespace ref = vkconv::reference;
    const vkconv::ConvProblem p = layer.problem(shape.clips());
    const size_t F = static_cast<size_t>(shape.frame_elements());
    const size_t clips = static_cast<size_t>(shape.clips());
    std::vector<float> d1(clips * F), d3(clips * F);
    for (size_t c = 0; c < clips; ++c)
        for (size_t i = 0; i < F; ++i) {
            const float f1 = o.host_frames[(3 * c) * F + i], f2 = o.host_frames[(3 * c + 1) * F + i],
                        f3 = o.host_frames[(3 * c + 2) * F + i];
            d1[c * F + i] = f2 - f1, d3[c * F + i] = f2 - f3;
        }
    std::vector<double> z = ref::forward(p, d1, o.host_k_minus, o.host_b1);
    const std::vector<double> z3 = ref::forward(p, d3, o.host_k_plus, o.host_b2);
    for (size_t c = 0; c < clips; ++c)
        for (size_t i = 0; i < F; ++i) z[c * F + i] += z3[c * F + i] + o.host_frames[(3 * c + 1) * F + i];
    const std::vector<double> e1 = ref::backward_data(p, o.host_g, o.host_k_minus);
    const std::vector<double> e3 = ref::backward_data(p, o.host_g, o.host_k_plus);
    std::vector<double> df(3 * clips * F);
    for (size_t c = 0; c < clips; ++c)
        for (size_t i = 0; i < F; ++i) {
            df[(3 * c) * F + i] = -e1[c * F + i];
            df[(3 * c + 1) * F + i] = o.host_g[c * F + i] + e1[c * F + i] + e3[c * F + i];
            df[(3 * c + 2) * F + i] = -e3[c * F + i];
        }
    const double reduction = static_cast<double>(p.N * p.H * p.W);
    bool ok = compare("z", o.z.download(), z, 2 * 9 + 3);
    ok &= compare("df", o.df.download(), df, 2 * 9 + 1);
    ok &= compare("dk_minus", o.dk_minus.download(), ref::backward_filter(p, d1, o.host_g), reduction);
    ok &= compare("dk_plus", o.dk_plus.download(), ref::backward_filter(p, d3, o.host_g), reduction);
    const std::vector<double> db = ref::backward_bias(p, o.host_g);
    ok &= compare("db1", o.db1.download(), db, reduction);
    ok &= compare("db2", o.db2.download(), db, reduction);
    return ok;
}

void print_pass(const char* name, const separable::PassReport& r, uint64_t route_bytes) {
    std::printf("%-8s gpu %9.1f ms  wall %9.1f ms  %4u submissions  %2u chunks  peak %8.1f MiB  reserved %8.1f MiB  "
                "operands %8.1f MiB  workspace %7.1f MiB  | im2col route %8.1f MiB\n",
                name, r.gpu_ms, r.wall_ms, r.submissions, r.chunks, mib(r.peak_bytes), mib(r.peak_reserved_bytes),
                mib(r.operand_bytes), mib(r.peak_bytes - r.baseline_bytes), mib(route_bytes));
}

void print_json(const separable::Shape& shape, const separable::Layer& layer, const separable::PassReport& f,
                const separable::PassReport& b, uint64_t operands, uint64_t peak, const Im2colRoute& route,
                double total_ms) {
    auto pass = [](const separable::PassReport& r) {
        char s[512];
        std::snprintf(s, sizeof s,
                      "{\"gpu_ms\": %.3f, \"wall_ms\": %.3f, \"submissions\": %u, \"chunks\": %u, \"peak_bytes\": %llu, "
                      "\"peak_reserved_bytes\": %llu, \"operand_bytes\": %llu, \"workspace_peak_bytes\": %llu}",
                      r.gpu_ms, r.wall_ms, r.submissions, r.chunks, (unsigned long long)r.peak_bytes,
                      (unsigned long long)r.peak_reserved_bytes, (unsigned long long)r.operand_bytes,
                      (unsigned long long)(r.peak_bytes - r.baseline_bytes));
        return std::string(s);
    };
    std::printf("{\"frames\": %lld, \"channels\": %lld, \"height\": %lld, \"width\": %lld, \"chunk_clips\": %lld,\n"
                " \"forward\": %s,\n \"backward\": %s,\n \"operand_bytes\": %llu, \"peak_bytes\": %llu, "
                "\"peak_over_operands\": %.4f, \"total_ms\": %.1f,\n"
                " \"im2col_route\": {\"forward_buffers\": %llu, \"forward_workspace\": %llu, \"backward_buffers\": %llu, "
                "\"backward_workspace\": %llu, \"lowered_unchunked\": %llu}}\n",
                (long long)shape.frames, (long long)shape.channels, (long long)shape.height, (long long)shape.width,
                (long long)layer.chunk_clips(), pass(f).c_str(), pass(b).c_str(), (unsigned long long)operands,
                (unsigned long long)peak, double(peak) / double(operands), total_ms,
                (unsigned long long)route.forward_buffers, (unsigned long long)route.forward_workspace,
                (unsigned long long)route.backward_buffers, (unsigned long long)route.backward_workspace,
                (unsigned long long)route.lowered_unchunked);
}

// The command line.
struct Args {
    separable::Shape shape;
    bool run_check = false, json = false;
    double budget_fraction = 0.2, max_peak_ratio = 0;
    uint64_t budget = 0;
    std::string device;
};

void add_options(CLI::App& app, Args& a) {
    separable::Shape& shape = a.shape;
    app.add_option("--frames", shape.frames, "frames (a multiple of 3: clips of three time steps)");
    app.add_option("--channels", shape.channels, "channels per frame");
    app.add_option("--height", shape.height, "frame height");
    app.add_option("--width", shape.width, "frame width");
    app.add_option(
        "--size", [&a](const CLI::results_t& r) { a.shape.height = a.shape.width = std::stoll(r[0]); return true; },
        "frame height and width");
    app.add_option("--budget", a.budget, "workspace bytes beyond the operands (default: --budget-fraction of them)");
    app.add_option("--budget-fraction", a.budget_fraction, "workspace as a fraction of the operand bytes")
        ->check(CLI::Range(0.0, 10.0));
    app.add_flag("--check", a.run_check, "compare every output with the CPU reference (default size 6x8x19x23)");
    app.add_option("--max-peak-ratio", a.max_peak_ratio, "exit 1 when the layer's pool peak exceeds this many times its operands")
        ->check(CLI::PositiveNumber);
    app.add_flag("--json", a.json, "print the figures as one JSON object");
    app.add_option("--device", a.device, "device index or part of its name");
}

// --check's default size, for the sizes not given.
void apply_check_defaults(const CLI::App& app, separable::Shape& shape) {
    if (!app.count("--frames")) shape.frames = 6;
    if (!app.count("--channels")) shape.channels = 8;
    if (!app.count("--height") && !app.count("--size")) shape.height = 19;
    if (!app.count("--width") && !app.count("--size")) shape.width = 23;
}

// What one run of the layer measured.
struct LayerRun {
    separable::PassReport f, b;
    uint64_t operands = 0, peak = 0;
    double total_ms = 0;
};

void print_text(const Args& a, const vkconv::Context& context, const separable::Layer& layer, const LayerRun& run,
                const Im2colRoute& route) {
    const separable::Shape& shape = a.shape;
    std::printf("separable layer: %lld frames (%lld clips) x %lld channels x %lldx%lld, %lld clips per chunk, "
                "workspace budget %.1f MiB, on %s\n",
                (long long)shape.frames, (long long)shape.clips(), (long long)shape.channels,
                (long long)shape.height, (long long)shape.width, (long long)layer.chunk_clips(), mib(a.budget),
                context.device().name.c_str());
    print_pass("forward", run.f, run.operands + route.forward_buffers + route.forward_workspace);
    print_pass("backward", run.b, run.operands + route.backward_buffers + route.backward_workspace);
    std::printf("layer    peak %.1f MiB = %.3f x operands (%.1f MiB); total wall %.1f s (data, upload, both passes)\n",
                mib(run.peak), double(run.peak) / double(run.operands), mib(run.operands), run.total_ms / 1000);
    std::printf("im2col   route: forward +%.1f MiB buffers +%.1f MiB lowering, backward +%.1f MiB buffers "
                "+%.1f MiB lowering (chunked to the binding limit; unchunked lowering %.1f MiB)\n",
                mib(route.forward_buffers), mib(route.forward_workspace), mib(route.backward_buffers),
                mib(route.backward_workspace), mib(route.lowered_unchunked));
}

// The workspace budget where none was given: --budget-fraction of the operands as the target counts them
// (frames, output, upstream gradient, frame gradients, kernels and biases with their gradients).
uint64_t default_budget(const Args& a) {
    const uint64_t frame_bytes = static_cast<uint64_t>(a.shape.frame_elements()) * 4;
    const uint64_t operand_estimate = frame_bytes * static_cast<uint64_t>(2 * a.shape.frames + 2 * a.shape.clips());
    return static_cast<uint64_t>(a.budget_fraction * static_cast<double>(operand_estimate));
}

// Builds the layer and its operands, runs forward and backward, prints the figures and applies the checks.
int run_layer(Args& a) {
    const separable::Shape& shape = a.shape;
    const auto start = std::chrono::steady_clock::now();
    vkconv::ContextOptions options;
    options.device = a.device;
    vkconv::Context context(options);
    if (!a.budget) a.budget = default_budget(a);
    separable::Layer layer(context, shape, a.budget);
    Operands o = make_operands(context, layer, shape);
    LayerRun run;
    run.operands = context.pool_stats().in_use;
    const Im2colRoute route = im2col_route(context, layer, shape);

    vkconv::PeakScope whole(context);
    run.f = layer.forward(o.frames, o.k_minus, o.b1, o.k_plus, o.b2, o.z);
    run.b = layer.backward(o.frames, o.k_minus, o.k_plus, o.g, o.df, o.dk_minus, o.dk_plus, o.db1, o.db2);
    run.peak = whole.peak();
    run.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    if (a.json)
        print_json(shape, layer, run.f, run.b, run.operands, run.peak, route, run.total_ms);
    else
        print_text(a, context, layer, run, route);
    if (a.max_peak_ratio > 0 && double(run.peak) > a.max_peak_ratio * double(run.operands)) {
        std::fprintf(stderr, "separable_layer: pool peak %.1f MiB is %.3f x the operands, above %.3f\n", mib(run.peak),
                     double(run.peak) / double(run.operands), a.max_peak_ratio);
        return 1;
    }
    if (a.run_check && !check(layer, shape, o)) {
        std::fprintf(stderr, "separable_layer: the GPU results differ from the reference\n");
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"The channel-wise separable layer of a video model (forward and backward) on vkconv"};
    Args args;
    add_options(app, args);
    CLI11_PARSE(app, argc, argv);
    if (args.run_check) apply_check_defaults(app, args.shape);
    try {
        args.shape.validate();
        return run_layer(args);
    } catch (const vkconv::Error& e) {
        std::fprintf(stderr, "separable_layer: %s\n", e.what());
        return e.category() == vkconv::ErrorCategory::Unsupported && std::string(e.what()).find("Vulkan") != std::string::npos ? 77 : 1;
    }
}
