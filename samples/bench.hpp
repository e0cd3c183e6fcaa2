// What the parts of `vkconv bench` share: its options and small helpers.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cli_common.hpp"

namespace vkconv_cli {

struct BenchArgs {
    std::vector<std::string> only;
    int64_t batch = 0;
    int repeat = 5;
    std::vector<std::string> algorithms = all_algorithm_names();
    bool gemm_only = false, layers_only = false, backward = false;
    bool all_configs = false;
    bool overhead = false;                 // only the host overhead of blocking calls
    bool first_call = false;               // only the first calls of this process (context included)
    std::vector<std::string> gemm_shapes;  // only these GEMM shapes, by name ("1024^3"); empty: all
    std::string json_file;
    std::string device;
    std::string layout = "nchw";
    // Layers also run in a second context whose buffers hold at most this many bytes (tensors above it in
    // pages), timed in turn with the first; 0: not.
    uint64_t paged_bytes = 0;
    // --dtype: the element types the layers run in, each in turn (f32 first where asked for, so the 16-bit
    // runs are compared with it).
    std::vector<std::string> dtypes{"f32"};
};

// What a layer's f32 run of one algorithm (and pass) measured, for the 16-bit runs after it: time and peak.
struct Measured {
    double ms = 0;
    uint64_t peak_bytes = 0;
};
using F32Figures = std::map<std::string, Measured>;  // by algorithm, or pass and algorithm

// The ratio columns and fields of a 16-bit run: its time and peak over f32's (nullptr: no f32 run to compare).
inline std::string time_ratio_cell(double ms, const Measured* f32) {
    return f32 ? ratio_text(ms, f32->ms) : std::string("—");
}
inline void add_f32_ratios(JsonObject& row, double ms, uint64_t peak_bytes, const Measured* f32) {
    if (!f32) return;
    row.add("gpu_ms_over_f32", ms / f32->ms).add("peak_bytes_over_f32", double(peak_bytes) / double(f32->peak_bytes));
}

// An algorithm runs only the problems its table row applies to (depthwise: one input channel per group): on
// other layers it is skipped without a row, where an "unsupported" line per layer would only be noise.
inline bool applies(vkconv::Algorithm algorithm, const vkconv::ConvProblem& p) {
    return vkconv::algorithm_applies(algorithm, p, vkconv::Pass::Forward);
}

// Untimed runs of `run` right before the timed ones, until together they have taken at least `min_ms` of
// wall time (at least one, at most 1,000). A GPU left idle while the host checks the previous result (seconds,
// for a large layer on few cores) likely falls to its idle clocks, and the first passes after that run slow:
// on an H200, backward-filter timed right after a check of seconds took 5x its warm time.
inline void warm_up(const std::function<void()>& run, double min_ms = 100) {
    const auto start = std::chrono::steady_clock::now();
    for (int runs = 0; runs < 1000; ++runs) {
        run();
        if (std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() >= min_ms)
            break;
    }
}

inline double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

inline std::string mib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / 1048576.0);
    return buf;
}

// Times backward-data and backward-filter (with the bias gradient) of the chosen layers, each result
// checked on sampled entries against exact double-precision values first.
void bench_backward(vkconv::Context& context, const BenchArgs& args, std::vector<std::string>& json_rows);

// Times the context's creation from `options` and the first and second forward, backward-data and
// backward-filter with Algorithm::Auto on one layer (the first of --layer, else resnet_3x3_56). Returns the
// device's summary.
std::string bench_first_call(const vkconv::ContextOptions& options, const BenchArgs& args,
                             std::vector<std::string>& rows);

}  // namespace vkconv_cli
