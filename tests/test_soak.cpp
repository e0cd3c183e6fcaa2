// The soak: thousands of passes on one context (forward, backward-data, backward-filter with the bias
// gradient, the layer step; blocking and recorded), drawn at random from a fixed set of layers of random
// shapes, algorithms, layouts, workspace limits and input views, as a training or serving loop would.
// After every pass the pool's in-use bytes are exactly what the live tensors hold; after the warm-up (every
// layer once) the pool reserves no more device memory and no Vulkan object is left over (creations minus
// destructions stay where the warm-up left them); every 100th pass's result is bit-identical to that
// layer's first run. The short soak runs in CI; the full 10,000 passes are tagged [slow]
// (VKCONV_SLOW_TESTS=ON, or run `vkconv_tests "[soak]"`).
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>

#include <vkconv/testing.hpp>
#include "conv_cases.hpp"
#include "gpu.hpp"
#include "test_util.hpp"

using vkconv::Algorithm;
using vkconv::Tensor;

namespace {

enum class Pass { Forward, BackwardData, BackwardFilter, LayerBackward };

const char* pass_name(Pass pass) {
    switch (pass) {
        case Pass::Forward: return "forward";
        case Pass::BackwardData: return "backward-data";
        case Pass::BackwardFilter: return "backward-filter";
        case Pass::LayerBackward: return "layer-backward";
    }
    return "?";
}

// One layer of the soak: its problem, how it runs, and its operands, uploaded once and kept.
struct Layer {
    vkconv::ConvProblem problem;
    Algorithm algorithm = Algorithm::Direct;
    Pass pass = Pass::Forward;
    vkconv::PassOptions options;
    bool recorded = false;
    int64_t view_offset = 0;  // x and dy are views starting at this image of larger tensors (0: whole tensors)
    std::unique_ptr<Tensor> x_base, dy_base, w, b;
    Tensor x, dy;                // views (or the whole tensors)
    std::vector<float> first;    // the outputs of its first run
    std::string describe() const {
        const auto& p = problem;
        char text[256];
        std::snprintf(text, sizeof text,
                      "%s %s %s N%lld C%lld H%lld W%lld K%lld R%lld S%lld pad %lld,%lld stride %lld,%lld dil "
                      "%lld,%lld groups %lld limit %llu%s%s",
                      pass_name(pass), vkconv::to_string(algorithm), vkconv::to_string(p.layout), (long long)p.N,
                      (long long)p.C, (long long)p.H, (long long)p.W, (long long)p.K, (long long)p.R,
                      (long long)p.S, (long long)p.pad_h, (long long)p.pad_w, (long long)p.stride_h,
                      (long long)p.stride_w, (long long)p.dilation_h, (long long)p.dilation_w, (long long)p.groups,
                      (unsigned long long)options.workspace_limit, recorded ? " recorded" : "",
                      view_offset ? " views" : "");
        return text;
    }
};

// The workspace the layer's pass needs without a limit.
uint64_t workspace_bytes(const vkconv::Context& context, const Layer& l, const vkconv::PassOptions& options) {
    switch (l.pass) {
        case Pass::Forward: return vkconv::forward_workspace_bytes(context, l.problem, l.algorithm, options);
        case Pass::BackwardData: return vkconv::backward_data_workspace_bytes(context, l.problem, l.algorithm, options);
        case Pass::BackwardFilter:
            return vkconv::backward_filter_workspace_bytes(context, l.problem, l.algorithm, options);
        case Pass::LayerBackward:
            return vkconv::layer_backward_workspace_bytes(context, l.problem, l.algorithm, options);
    }
    return 0;
}

Layer random_layer(vkconv::Context& context, std::mt19937& rng, uint32_t seed) {
    auto pick = [&](int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(rng); };
    Layer l;
    vkconv::ConvProblem& p = l.problem;
    const bool depthwise = pick(0, 4) == 0;
    p.N = pick(1, 3), p.C = pick(1, 6), p.H = pick(3, 13), p.W = pick(3, 13);
    p.R = pick(1, 3), p.S = pick(1, 3);
    p.pad_h = pick(0, 1), p.pad_w = pick(0, 1);
    p.stride_h = pick(1, 2), p.stride_w = pick(1, 2);
    p.dilation_h = pick(1, 2), p.dilation_w = pick(1, 2);
    p.K = pick(1, 7);
    if (depthwise) {
        p.groups = p.C, p.K = p.C * pick(1, 2);
    } else if (pick(0, 3) == 0 && p.C % 2 == 0) {
        p.groups = 2, p.K = 2 * pick(1, 3);
    }
    p.layout = pick(0, 1) ? vkconv::Layout::NHWC : vkconv::Layout::NCHW;
    p.has_bias = pick(0, 1) == 1;
    // A kernel that does not fit the padded image shrinks to one that does.
    while ((p.R - 1) * p.dilation_h + 1 > p.H + 2 * p.pad_h) --p.R;
    while ((p.S - 1) * p.dilation_w + 1 > p.W + 2 * p.pad_w) --p.S;
    p.validate();
    const Algorithm dense[] = {Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec};
    l.algorithm = depthwise && pick(0, 1) ? Algorithm::Depthwise : dense[pick(0, 2)];
    l.pass = static_cast<Pass>(pick(0, 3));
    l.recorded = pick(0, 3) == 0;
    l.view_offset = pick(0, 2) == 0 ? pick(1, 2) : 0;
    // No limit, the exact workspace, or half of it (the pass then chunks or splits less); a limit below the
    // algorithm's smallest chunk is refused by the query, and the layer then runs without one.
    const uint64_t full = workspace_bytes(context, l, {});
    const int64_t limit_kind = pick(0, 2);
    if (limit_kind > 0 && full > 0) {
        vkconv::PassOptions limited;
        limited.workspace_limit = limit_kind == 1 ? full : full / 2;
        try {
            (void)workspace_bytes(context, l, limited);
            l.options = limited;
        } catch (const vkconv::Error& e) {
            if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
        }
    }
    // The operands, uploaded once: x and dy inside larger tensors when the layer uses views.
    auto shape_with = [](vkconv::Shape shape, int64_t extra) {
        shape[0] += extra;
        return shape;
    };
    const int64_t extra = l.view_offset ? l.view_offset + 1 : 0;
    const vkconv::Shape x_shape = shape_with(p.input_shape(), extra), dy_shape = shape_with(p.output_shape(), extra);
    l.x_base = std::make_unique<Tensor>(
        Tensor::from_host(context, x_shape, vkt::random_values(vkconv::shape_elements(x_shape), seed)));
    l.dy_base = std::make_unique<Tensor>(
        Tensor::from_host(context, dy_shape, vkt::random_values(vkconv::shape_elements(dy_shape), seed + 1)));
    l.w = std::make_unique<Tensor>(
        Tensor::from_host(context, p.filter_shape(), vkt::random_values(p.filter_elements(), seed + 2)));
    l.b = std::make_unique<Tensor>(Tensor::from_host(context, p.bias_shape(), vkt::random_values(p.K, seed + 3)));
    l.x = l.view_offset ? l.x_base->images(l.view_offset, p.N) : *l.x_base;
    l.dy = l.view_offset ? l.dy_base->images(l.view_offset, p.N) : *l.dy_base;
    return l;
}

// The pool bytes the layers' operands hold (views share their tensors' memory).
uint64_t operand_bytes(const vkconv::Context& context, const std::vector<Layer>& layers) {
    const vkconv::PoolStats s = context.pool_stats();
    uint64_t bytes = 0;
    for (const Layer& l : layers)
        for (const Tensor* t : {l.x_base.get(), l.dy_base.get(), l.w.get(), l.b.get()}) bytes += s.rounded(t->bytes());
    return bytes;
}

// Runs the layer's pass into fresh output tensors (poisoned first when `poison`), returning the outputs
// downloaded when `download`; the outputs die on return.
std::vector<float> run(vkconv::Context& context, Layer& l, bool poison, bool download) {
    const vkconv::ConvProblem& p = l.problem;
    const bool data = l.pass == Pass::BackwardData || l.pass == Pass::LayerBackward;
    const bool filter = l.pass == Pass::BackwardFilter || l.pass == Pass::LayerBackward;
    std::unique_ptr<Tensor> y, dx, dw, db;
    if (l.pass == Pass::Forward) y = std::make_unique<Tensor>(context, p.output_shape());
    if (data) dx = std::make_unique<Tensor>(context, p.input_shape());
    if (filter) dw = std::make_unique<Tensor>(context, p.filter_shape());
    if (filter && p.has_bias) db = std::make_unique<Tensor>(context, p.bias_shape());
    const std::vector<Tensor*> outputs = {y.get(), dx.get(), dw.get(), db.get()};
    if (poison)
        for (Tensor* t : outputs)
            if (t) t->upload(vkt::poison(static_cast<size_t>(t->elements())));
    const Tensor* bias = p.has_bias ? l.b.get() : nullptr;
    auto record = [&](auto& target) {
        switch (l.pass) {
            case Pass::Forward: vkconv::forward(target, p, l.x, *l.w, bias, *y, l.algorithm, l.options); break;
            case Pass::BackwardData: vkconv::backward_data(target, p, l.dy, *l.w, *dx, l.algorithm, l.options); break;
            case Pass::BackwardFilter:
                vkconv::backward_filter(target, p, l.x, l.dy, *dw, db.get(), l.algorithm, l.options);
                break;
            case Pass::LayerBackward:
                vkconv::layer_backward(target, p, l.x, *l.w, l.dy, *dx, *dw, db.get(), l.algorithm, l.options);
                break;
        }
    };
    if (l.recorded) {
        vkconv::Recording recording(context);
        record(recording);
        recording.submit().wait();
    } else {
        record(context);
    }
    std::vector<float> out;
    if (download)
        for (Tensor* t : outputs)
            if (t) {
                const auto values = t->download();
                out.insert(out.end(), values.begin(), values.end());
            }
    return out;
}

struct SoakFigures {
    uint64_t passes = 0, compared = 0, reserved = 0, objects = 0, operand_bytes = 0;
    double seconds = 0;
};

SoakFigures soak(vkconv::Context& context, int layer_count, int passes, uint32_t seed) {
    SoakFigures figures;
    std::mt19937 rng(seed);
    std::vector<Layer> layers;
    for (int i = 0; i < layer_count; ++i) layers.push_back(random_layer(context, rng, seed + 10 * uint32_t(i)));
    const uint64_t held = operand_bytes(context, layers);
    figures.operand_bytes = held;
    REQUIRE(context.pool_stats().in_use == held);
    // Warm-up: every layer once (its pipelines, workspace blocks, staging and views made), its outputs kept.
    for (Layer& l : layers) {
        INFO("warm-up: " << l.describe());
        l.first = run(context, l, true, true);
        REQUIRE(context.pool_stats().in_use == held);
    }
    const uint64_t reserved = context.pool_stats().reserved;
    const uint64_t alive = vkconv::testing::vulkan_objects_alive(context);
    const auto start = std::chrono::steady_clock::now();
    std::uniform_int_distribution<size_t> any_layer(0, layers.size() - 1);
    for (int i = 1; i <= passes; ++i) {
        Layer& l = layers[any_layer(rng)];
        const bool compare = i % 100 == 0;
        const auto out = run(context, l, compare, compare);
        const vkconv::PoolStats s = context.pool_stats();
        // Checked without Catch2's per-assertion cost on the passing path; the failing one says everything.
        if (s.in_use != held || s.reserved > reserved || vkconv::testing::vulkan_objects_alive(context) != alive ||
            (compare && out != l.first)) {
            INFO("pass " << i << ": " << l.describe());
            CHECK(s.in_use == held);
            CHECK(s.reserved <= reserved);
            CHECK(vkconv::testing::vulkan_objects_alive(context) == alive);
            if (compare) CHECK(out == l.first);
            FAIL("the soak stopped at the first broken pass");
        }
        figures.compared += compare ? 1 : 0;
    }
    figures.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    figures.passes = static_cast<uint64_t>(passes);
    figures.reserved = reserved;
    figures.objects = alive;
    return figures;
}

void report(const char* name, const SoakFigures& f) {
    std::printf("%s: %llu passes in %.1f s (%.2f ms each), %llu results compared bit for bit; pool in use %llu B "
                "(the operands) after every pass, reserved %llu B and %llu live Vulkan objects from the warm-up "
                "on\n",
                name, (unsigned long long)f.passes, f.seconds, 1e3 * f.seconds / double(f.passes),
                (unsigned long long)f.compared, (unsigned long long)f.operand_bytes, (unsigned long long)f.reserved,
                (unsigned long long)f.objects);
}

}  // namespace

TEST_CASE("soak: 1,000 random passes keep the pool, the Vulkan objects and the results steady", "[soak][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    report("short soak", soak(*context, 24, 1000, 20261125));
}

TEST_CASE("soak: 10,000 random passes keep the pool, the Vulkan objects and the results steady",
          "[soak][slow][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    report("full soak", soak(*context, 48, 10000, 20261126));
}
