// separable_layer — the channel-wise separable layer of a video model, forward and backward, on vkconv.
//
//   separable_layer [--frames 30] [--channels 64] [--height 256] [--width 256] [--budget BYTES] [--json]
//   separable_layer --check        (a reduced size, 6 frames x 8 channels x 19x23, against the CPU reference)
//   separable_layer --max-peak-ratio 1.25   (exit 1 when the pool peak exceeds 1.25 x the operands)
//   separable_layer --dtype bf16 [--compare-dtype]   (the layer in bf16; with the flag, f32 first, then side by side)
//
// Prints, per pass, GPU and wall time, the pool's peak and peak reserved, the pass's operand bytes, and
// what the im2col route (full-size difference tensors, the im2col lowering as vkconv would run it, and
// unchunked) would have needed. Exit status 1 on a check mismatch or an error.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "check.hpp"
#include "separable_layer.hpp"

namespace {

using vkconv::shape_elements;

double mib(uint64_t bytes) {
    return static_cast<double>(bytes) / (1 << 20);
}

// The im2col route: d1 and d3 at full size (kept for the backward pass), a full-size convolution output
// (forward) or e1 and e3 (backward), plus the im2col lowering; in the layer's type, where im2col runs it.
struct Im2colRoute {
    uint64_t forward_buffers = 0, backward_buffers = 0;
    uint64_t forward_workspace = 0, backward_workspace = 0;  // as vkconv runs im2col here (chunked to the binding limit)
    uint64_t lowered_unchunked = 0;                          // the whole N*P*Q x R*S*C/G lowered matrix per group
    std::string refused;                                     // why im2col does not run the layer here ("": it does)
};

Im2colRoute im2col_route(vkconv::Context& context, const separable::Layer& layer, const separable::Shape& shape) {
    const vkconv::ConvProblem p = layer.problem(shape.clips());
    const uint64_t bytes = vkconv::element_bytes(p.data_type);
    const uint64_t full = context.pool_stats().rounded(static_cast<uint64_t>(shape_elements(p.output_shape())) * bytes);
    Im2colRoute r;
    r.forward_buffers = 3 * full;
    r.backward_buffers = 4 * full;
    r.lowered_unchunked = static_cast<uint64_t>(p.N * p.H * p.W) * p.R * p.S * p.C * bytes;
    try {
        r.forward_workspace = vkconv::forward_workspace_bytes(context, p, vkconv::Algorithm::Im2col);
        r.backward_workspace = std::max(vkconv::backward_data_workspace_bytes(context, p, vkconv::Algorithm::Im2col),
                                        vkconv::backward_filter_workspace_bytes(context, p, vkconv::Algorithm::Im2col));
    } catch (const vkconv::Error& e) {
        if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
        r.refused = e.what();
    }
    return r;
}

void print_pass(const char* name, const separable::PassReport& r, const Im2colRoute& route, uint64_t route_bytes) {
    std::printf(
        "%-8s gpu %9.1f ms  wall %9.1f ms  %4u submissions  %2u chunks  peak %8.1f MiB  reserved %8.1f MiB  "
        "operands %8.1f MiB  workspace %7.1f MiB  | im2col route ",
        name, r.gpu_ms, r.wall_ms, r.submissions, r.chunks, mib(r.peak_bytes), mib(r.peak_reserved_bytes),
        mib(r.operand_bytes), mib(r.peak_bytes - r.baseline_bytes));
    if (route.refused.empty())
        std::printf("%8.1f MiB\n", mib(route_bytes));
    else
        std::printf("not run here\n");
}

// The command line.
struct Args {
    separable::Shape shape;
    bool run_check = false, json = false, compare_dtype = false;
    double budget_fraction = 0.2, max_peak_ratio = 0;
    uint64_t budget = 0;  // 0: --budget-fraction of the operands, in each run's type
    std::string device;
    std::string dtype = "f32";
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
    app.add_option("--dtype", a.dtype, "element type of every tensor of the layer: f32, f16 or bf16")
        ->check([](const std::string& text) {
            try {
                vkconv::parse_data_type(text);
                return std::string();
            } catch (const vkconv::Error& e) {
                return std::string(e.what());
            }
        })
        ->capture_default_str();
    app.add_flag("--compare-dtype", a.compare_dtype,
                 "run the layer in f32, then in --dtype, in this one process, and print the second over the first");
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

// What one run of the layer measured, how it ran, and its JSON object.
struct LayerRun {
    vkconv::DataType type = vkconv::DataType::F32;
    separable::PassReport f, b;
    uint64_t operands = 0, peak = 0, budget = 0;
    double total_ms = 0;
    int status = 0;  // 1: the check or --max-peak-ratio failed
    std::string json;
};

std::string pass_json(const separable::PassReport& r) {
    char s[512];
    std::snprintf(s, sizeof s,
                  "{\"gpu_ms\": %.3f, \"wall_ms\": %.3f, \"submissions\": %u, \"chunks\": %u, \"peak_bytes\": %llu, "
                  "\"peak_reserved_bytes\": %llu, \"operand_bytes\": %llu, \"workspace_peak_bytes\": %llu}",
                  r.gpu_ms, r.wall_ms, r.submissions, r.chunks, (unsigned long long)r.peak_bytes,
                  (unsigned long long)r.peak_reserved_bytes, (unsigned long long)r.operand_bytes,
                  (unsigned long long)(r.peak_bytes - r.baseline_bytes));
    return s;
}

std::string run_json(const separable::Shape& shape, const separable::Layer& layer, const LayerRun& run,
                     const Im2colRoute& route) {
    char head[512], tail[512];
    std::snprintf(head, sizeof head,
                  "{\"frames\": %lld, \"channels\": %lld, \"height\": %lld, \"width\": %lld, \"dtype\": \"%s\", "
                  "\"algorithm\": \"%s\", \"elementwise\": \"%s\", \"chunk_clips\": %lld,\n",
                  (long long)shape.frames, (long long)shape.channels, (long long)shape.height, (long long)shape.width,
                  vkconv::to_string(layer.type()), vkconv::to_string(layer.algorithm()), layer.elementwise(),
                  (long long)layer.chunk_clips());
    std::snprintf(tail, sizeof tail,
                  " \"operand_bytes\": %llu, \"peak_bytes\": %llu, \"peak_over_operands\": %.4f, \"total_ms\": %.1f,\n"
                  " \"im2col_route\": {\"forward_buffers\": %llu, \"forward_workspace\": %llu, \"backward_buffers\": "
                  "%llu, \"backward_workspace\": %llu, \"lowered_unchunked\": %llu, \"runs\": %s}}",
                  (unsigned long long)run.operands, (unsigned long long)run.peak,
                  double(run.peak) / double(run.operands), run.total_ms, (unsigned long long)route.forward_buffers,
                  (unsigned long long)route.forward_workspace, (unsigned long long)route.backward_buffers,
                  (unsigned long long)route.backward_workspace, (unsigned long long)route.lowered_unchunked,
                  route.refused.empty() ? "true" : "false");
    return std::string(head) + " \"forward\": " + pass_json(run.f) + ",\n \"backward\": " + pass_json(run.b) + ",\n" +
           tail;
}

void print_text(const separable::Shape& shape, const vkconv::Context& context, const separable::Layer& layer,
                const LayerRun& run, const Im2colRoute& route) {
    std::printf(
        "separable layer: %lld frames (%lld clips) x %lld channels x %lldx%lld, %s, %lld clips per chunk, "
        "workspace budget %.1f MiB, convolutions %s, elementwise steps as %s, on %s\n",
        (long long)shape.frames, (long long)shape.clips(), (long long)shape.channels, (long long)shape.height,
        (long long)shape.width, vkconv::to_string(layer.type()), (long long)layer.chunk_clips(), mib(run.budget),
        vkconv::to_string(layer.algorithm()), layer.elementwise(), context.device().name.c_str());
    print_pass("forward", run.f, route, run.operands + route.forward_buffers + route.forward_workspace);
    print_pass("backward", run.b, route, run.operands + route.backward_buffers + route.backward_workspace);
    std::printf("layer    peak %.1f MiB = %.3f x operands (%.1f MiB); total wall %.1f s (data, upload, both passes)\n",
                mib(run.peak), double(run.peak) / double(run.operands), mib(run.operands), run.total_ms / 1000);
    if (!route.refused.empty()) {
        std::printf("im2col   route: not run here (%s)\n", route.refused.c_str());
        return;
    }
    std::printf("im2col   route: forward +%.1f MiB buffers +%.1f MiB lowering, backward +%.1f MiB buffers "
                "+%.1f MiB lowering (chunked to the binding limit; unchunked lowering %.1f MiB)\n",
                mib(route.forward_buffers), mib(route.forward_workspace), mib(route.backward_buffers),
                mib(route.backward_workspace), mib(route.lowered_unchunked));
}

// The workspace budget where none was given: --budget-fraction of the operands as the target counts them
// (frames, output, upstream gradient, frame gradients, kernels and biases with their gradients), in `type`.
uint64_t default_budget(const Args& a, vkconv::DataType type) {
    const uint64_t frame_bytes = static_cast<uint64_t>(a.shape.frame_elements()) * vkconv::element_bytes(type);
    const uint64_t operand_estimate = frame_bytes * static_cast<uint64_t>(2 * a.shape.frames + 2 * a.shape.clips());
    return static_cast<uint64_t>(a.budget_fraction * static_cast<double>(operand_estimate));
}

// Builds the layer and its operands in `type` (a context of its own), runs forward and backward, prints the
// figures (text, or keeps the JSON in the result) and applies the checks.
LayerRun run_layer(const Args& a, vkconv::DataType type) {
    const separable::Shape& shape = a.shape;
    const auto start = std::chrono::steady_clock::now();
    vkconv::ContextOptions options;
    options.device = a.device;
    vkconv::Context context(options);
    LayerRun run;
    run.type = type;
    run.budget = a.budget ? a.budget : default_budget(a, type);
    separable::Layer layer(context, shape, run.budget, type);
    separable::Operands o = separable::make_operands(context, layer, shape);
    run.operands = context.pool_stats().in_use;
    const Im2colRoute route = im2col_route(context, layer, shape);

    vkconv::PeakScope whole(context);
    run.f = layer.forward(o.frames, o.k_minus, o.b1, o.k_plus, o.b2, o.z);
    run.b = layer.backward(o.frames, o.k_minus, o.k_plus, o.g, o.df, o.dk_minus, o.dk_plus, o.db1, o.db2);
    run.peak = whole.peak();
    run.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    if (a.json)
        run.json = run_json(shape, layer, run, route);
    else
        print_text(shape, context, layer, run, route);
    if (a.max_peak_ratio > 0 && double(run.peak) > a.max_peak_ratio * double(run.operands)) {
        std::fprintf(stderr, "separable_layer: %s: pool peak %.1f MiB is %.3f x the operands, above %.3f\n",
                     vkconv::to_string(type), mib(run.peak), double(run.peak) / double(run.operands), a.max_peak_ratio);
        run.status = 1;
    }
    if (a.run_check && !separable::check(context, layer, shape, o)) {
        std::fprintf(stderr, "separable_layer: the GPU results in %s differ from the reference\n",
                     vkconv::to_string(type));
        run.status = 1;
    }
    return run;
}

// --compare-dtype: the second run's times and peaks over the first's (f32), as text or as the JSON's "ratios".
std::string compare_runs(const LayerRun& f32, const LayerRun& other, bool json) {
    const double forward = other.f.gpu_ms / f32.f.gpu_ms, backward = other.b.gpu_ms / f32.b.gpu_ms;
    const double peak = double(other.peak) / double(f32.peak), operands = double(other.operands) / double(f32.operands);
    const double forward_peak = double(other.f.peak_bytes) / double(f32.f.peak_bytes);
    const double backward_peak = double(other.b.peak_bytes) / double(f32.b.peak_bytes);
    char s[512];
    if (json)
        std::snprintf(s, sizeof s,
                      "{\"forward_gpu_ms\": %.4f, \"backward_gpu_ms\": %.4f, \"forward_peak_bytes\": %.4f, "
                      "\"backward_peak_bytes\": %.4f, \"peak_bytes\": %.4f, \"operand_bytes\": %.4f}",
                      forward, backward, forward_peak, backward_peak, peak, operands);
    else
        std::snprintf(s, sizeof s,
                      "%s / f32: forward gpu %.3fx, backward gpu %.3fx; pool peak forward %.3fx, backward %.3fx, "
                      "layer %.3fx (%.1f / %.1f MiB); operands %.3fx\n",
                      vkconv::to_string(other.type), forward, backward, forward_peak, backward_peak, peak,
                      mib(other.peak), mib(f32.peak), operands);
    return s;
}

int run(const Args& a) {
    const vkconv::DataType type = vkconv::parse_data_type(a.dtype);
    if (!a.compare_dtype) {
        const LayerRun only = run_layer(a, type);
        if (a.json) std::printf("%s\n", only.json.c_str());
        return only.status;
    }
    if (type == vkconv::DataType::F32)
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                            "--compare-dtype compares a 16-bit --dtype (f16 or bf16) with f32; --dtype is f32");
    const LayerRun f32 = run_layer(a, vkconv::DataType::F32);
    const LayerRun other = run_layer(a, type);
    if (a.json)
        std::printf("{\"f32\": %s,\n\"%s\": %s,\n\"ratios\": %s}\n", f32.json.c_str(), vkconv::to_string(type),
                    other.json.c_str(), compare_runs(f32, other, true).c_str());
    else
        std::printf("compare  %s", compare_runs(f32, other, false).c_str());
    return std::max(f32.status, other.status);
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
        return run(args);
    } catch (const vkconv::Error& e) {
        std::fprintf(stderr, "separable_layer: %s\n", e.what());
        return e.category() == vkconv::ErrorCategory::Unsupported && std::string(e.what()).find("Vulkan") != std::string::npos ? 77 : 1;
    }
}
