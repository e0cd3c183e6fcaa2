// The depthwise algorithm (one input channel per group) against the CPU reference, in all three passes:
// a table of deliberately odd depthwise shapes in both layouts, a seeded random sweep, runs forced into
// chunks, bit-identical reruns, exact workspace and peak memory, auto's choice, and non-depthwise input.
#include <array>
#include <cmath>
#include <limits>
#include <random>

#include "vulkan/command_stream.hpp"
#include "conv_cases.hpp"
#include "conv/depthwise/depthwise.hpp"
#include "context/tensor_storage.hpp"
#include "test_util.hpp"

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Layout;

namespace {

ConvProblem depthwise(int64_t N, int64_t C, int64_t multiplier, int64_t H, int64_t W, int64_t R, int64_t S,
                      int64_t pad = 0, int64_t stride = 1, int64_t dilation = 1) {
    ConvProblem p;
    p.N = N, p.C = C, p.K = C * multiplier, p.groups = C, p.H = H, p.W = W, p.R = R, p.S = S;
    p.pad_h = p.pad_w = pad;
    p.stride_h = p.stride_w = stride;
    p.dilation_h = p.dilation_w = dilation;
    return p;
}

using vkt::absolute;
using vkt::poison;

// Forward (with the problem's bias), backward-data, and backward-filter with the bias gradient, all with
// the depthwise algorithm on NaN-poisoned outputs, each checked against the reference and its workspace
// query. Returns the three passes' stats.
std::array<vkconv::RunStats, 3> check_depthwise(vkconv::Context& context, const ConvProblem& p, uint32_t seed,
                                                const vkconv::ForwardOptions& options = {}) {
    INFO(p.str());
    std::array<vkconv::RunStats, 3> stats;
    stats[0] = vkt::check_forward(context, p, Algorithm::Depthwise, seed, options);
    CHECK(stats[0].algorithm == Algorithm::Depthwise);
    CHECK(stats[0].workspace_bytes == vkconv::forward_workspace_bytes(context, p, Algorithm::Depthwise, options));

    const auto x = vkt::random_values(p.input_elements(), seed + 3);
    const auto w = vkt::random_values(p.filter_elements(), seed + 4);
    const auto dy = vkt::random_values(p.output_elements(), seed + 5);
    auto tx = vkconv::Tensor::from_host(context, p.input_shape(), x);
    auto tw = vkconv::Tensor::from_host(context, p.filter_shape(), w);
    auto tdy = vkconv::Tensor::from_host(context, p.output_shape(), dy);
    auto tdx = vkconv::Tensor::from_host(context, p.input_shape(), poison(p.input_elements()));
    auto tdw = vkconv::Tensor::from_host(context, p.filter_shape(), poison(p.filter_elements()));
    auto tdb = vkconv::Tensor::from_host(context, p.bias_shape(), poison(p.K));

    stats[1] = vkconv::backward_data(context, p, tdy, tw, tdx, Algorithm::Depthwise, options);
    CHECK(stats[1].algorithm == Algorithm::Depthwise);
    CHECK(stats[1].workspace_bytes == vkconv::backward_data_workspace_bytes(context, p, Algorithm::Depthwise, options));
    vkt::check_close(tdx.download(), vkconv::reference::backward_data(p, dy, w),
                     vkconv::reference::backward_data(p, absolute(dy), absolute(w)), p.filters_per_group() * p.R * p.S,
                     "depthwise backward_data " + p.str());

    auto with_bias = p;
    with_bias.has_bias = true;
    stats[2] = vkconv::backward_filter(context, with_bias, tx, tdy, tdw, &tdb, Algorithm::Depthwise, options);
    CHECK(stats[2].algorithm == Algorithm::Depthwise);
    CHECK(stats[2].workspace_bytes ==
          vkconv::backward_filter_workspace_bytes(context, with_bias, Algorithm::Depthwise, options));
    const int64_t reduction = p.N * p.P() * p.Q();
    vkt::check_close(tdw.download(), vkconv::reference::backward_filter(p, x, dy),
                     vkconv::reference::backward_filter(p, absolute(x), absolute(dy)), reduction,
                     "depthwise backward_filter " + p.str());
    vkt::check_close(tdb.download(), vkconv::reference::backward_bias(p, dy),
                     vkconv::reference::backward_bias(p, absolute(dy)), reduction,
                     "depthwise backward_filter's bias " + p.str());
    return stats;
}

// One variation per case: channel multipliers, strides with every input size that gives the same
// output, dilation, padding, kernel shapes, odd widths, batches, and channel counts on and off the NHWC
// vec4 path (C % 4) and widths on and off the NCHW one (W % 4).
std::vector<vkt::NamedProblem> odd_depthwise_problems() {
    std::vector<vkt::NamedProblem> cases = {
        {"3x3 pad 1", depthwise(1, 4, 1, 8, 8, 3, 3, 1)},
        {"multiplier 2", depthwise(2, 3, 2, 7, 9, 3, 3, 1)},
        {"multiplier 3", depthwise(1, 5, 3, 6, 13, 3, 3, 1)},
        {"multiplier 3, C % 4 == 0", depthwise(1, 4, 3, 9, 8, 3, 3, 1)},
        {"padding 0", depthwise(2, 6, 1, 9, 10, 3, 3, 0)},
        {"padding 2 on 3x3", depthwise(1, 4, 1, 5, 6, 3, 3, 2)},
        {"dilation 2", depthwise(1, 3, 1, 11, 12, 3, 3, 2, 1, 2)},
        {"dilation 3, stride 2, multiplier 2", depthwise(2, 2, 2, 17, 16, 3, 3, 1, 2, 3)},
        {"7x7 pad 3", depthwise(1, 4, 1, 15, 16, 7, 7, 3)},
        {"7x7 stride 2 multiplier 2", depthwise(1, 3, 2, 19, 13, 7, 7, 3, 2)},
        {"1x1", depthwise(2, 5, 1, 4, 7, 1, 1)},
        {"1x1 multiplier 2, stride 2", depthwise(1, 8, 2, 9, 8, 1, 1, 0, 2)},
        {"width 1", depthwise(2, 4, 1, 6, 1, 3, 3, 1)},
        {"width 1, 1x1", depthwise(1, 3, 2, 5, 1, 1, 1)},
        {"width 5", depthwise(1, 8, 1, 7, 5, 3, 3, 1)},
        {"width 13, batch 3", depthwise(3, 5, 1, 6, 13, 3, 3, 1)},
        {"single pixel", depthwise(2, 4, 1, 1, 1, 1, 1)},
        {"kernel equals image", depthwise(1, 3, 1, 5, 5, 5, 5)},
        {"wide 24x40", depthwise(1, 8, 1, 24, 40, 3, 3, 1)},
    };
    auto nonsquare = depthwise(2, 4, 1, 9, 14, 3, 5);
    nonsquare.pad_h = 1, nonsquare.pad_w = 2;
    cases.push_back({"3x5 kernel, pad 1,2", nonsquare});
    auto row = depthwise(1, 6, 2, 5, 20, 1, 7);
    row.pad_w = 3;
    cases.push_back({"1x7 kernel", row});
    auto mixed = depthwise(1, 4, 1, 21, 17, 3, 2);
    mixed.stride_h = 2, mixed.stride_w = 3, mixed.dilation_h = 2, mixed.pad_h = 1;
    cases.push_back({"stride 2,3 dilation 2,1", mixed});
    // Every input size that gives a 4x5 output for strides 1..3 (H, W = base .. base + stride - 1).
    for (int64_t stride = 1; stride <= 3; ++stride) {
        const int64_t base_h = 3 * stride + 3 - 2, base_w = 4 * stride + 3 - 2;  // (P-1)*s + R - 2*pad
        for (int64_t extra = 0; extra < stride; ++extra) {
            auto p = depthwise(2, 4, 1 + extra % 2, base_h + extra, base_w + extra, 3, 3, 1, stride);
            cases.push_back({"stride " + std::to_string(stride) + ", input +" + std::to_string(extra), p});
        }
    }
    return cases;
}

}  // namespace

TEST_CASE("depthwise passes match the reference on odd depthwise shapes", "[depthwise][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 4000;
    for (const auto& named : odd_depthwise_problems()) {
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            auto p = named.problem;
            p.layout = layout;
            p.has_bias = seed % 2 == 1;
            INFO("case '" << named.name << "'");
            check_depthwise(*context, p, seed += 7);
        }
    }
}

namespace {

// `count` random depthwise problems from `seed` (any multiplier, stride, padding, dilation, layout, bias),
// each checked in all three passes.
void check_random_depthwise(vkconv::Context& context, int count, uint32_t seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    int checked = 0;
    while (checked < count) {
        auto p = depthwise(pick(1, 3), pick(1, 9), pick(1, 3), pick(1, 14), pick(1, 14), pick(1, 5), pick(1, 5));
        p.pad_h = pick(0, 3), p.pad_w = pick(0, 3);
        p.stride_h = pick(1, 3), p.stride_w = pick(1, 3);
        p.dilation_h = pick(1, 3), p.dilation_w = pick(1, 3);
        p.layout = pick(0, 1) ? Layout::NHWC : Layout::NCHW;
        p.has_bias = pick(0, 1) == 1;
        try {
            p.validate();
        } catch (const vkconv::Error&) {
            continue;  // kernel larger than the padded input: draw again
        }
        check_depthwise(context, p, seed + 7 * uint32_t(checked));
        ++checked;
    }
}

}  // namespace

// Every problem compiles its own specialised pipelines (most of the time these tests take on lavapipe):
// the default run draws 16 problems, the [slow] one 50 more.
TEST_CASE("depthwise passes match the reference on a seeded random sweep", "[depthwise][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    check_random_depthwise(*context, 16, 2024);
}

TEST_CASE("depthwise passes match the reference on a longer seeded random sweep", "[depthwise][gpu][slow]") {
    VKT_REQUIRE_CONTEXT(context);
    check_random_depthwise(*context, 50, 2025);
}

namespace {

vkconv::detail::Operand operand(const vkconv::Tensor& t) {
    return {t.storage()->allocation, uint64_t(t.elements())};
}

}  // namespace

// The device picks one read path (texel views on CPU implementations, storage buffers on GPUs): the other
// is run here through the engine directly, so both stay checked on any device.
TEST_CASE("depthwise kernels match the reference through both read paths", "[depthwise][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    namespace d = vkconv::detail;
    d::ContextImpl& impl = d::impl_of(*context);
    auto nchw_vec4 = depthwise(2, 4, 1, 9, 12, 3, 3, 1);
    auto nchw_scalar = depthwise(1, 3, 2, 7, 13, 3, 3, 1, 2);
    auto nhwc_vec4 = depthwise(2, 8, 1, 6, 9, 3, 3, 1);
    auto nhwc_scalar = depthwise(1, 3, 3, 8, 7, 5, 3, 2, 1, 2);
    nhwc_vec4.layout = nhwc_scalar.layout = Layout::NHWC;
    uint32_t seed = 8000;
    for (auto p : {nchw_vec4, nchw_scalar, nhwc_vec4, nhwc_scalar}) {
        INFO(p.str());
        const auto x = vkt::random_values(p.input_elements(), seed++),
                   w = vkt::random_values(p.filter_elements(), seed++);
        const auto dy = vkt::random_values(p.output_elements(), seed++);
        auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
        auto tw = vkconv::Tensor::from_host(*context, p.filter_shape(), w);
        auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
        auto ty = vkconv::Tensor::from_host(*context, p.output_shape(), poison(p.output_elements()));
        auto tdx = vkconv::Tensor::from_host(*context, p.input_shape(), poison(p.input_elements()));
        auto tdw = vkconv::Tensor::from_host(*context, p.filter_shape(), poison(p.filter_elements()));
        for (bool texel : {true, false}) {
            INFO((texel ? "texel views" : "storage buffers"));
            auto plan = [&](d::DepthwisePass pass) {
                auto result = d::plan_depthwise(impl, p, pass, {});
                result.texel = texel;
                return result;
            };
            d::ForwardOperands ops;
            ops.input = operand(tx), ops.filter = operand(tw), ops.output = operand(ty);
            const auto filter_plan = plan(d::DepthwisePass::BackwardFilter);
            vkconv::Tensor workspace(*context, {int64_t(filter_plan.workspace_floats)});
            {
                d::CommandStream stream(*impl.device);
                d::record_depthwise_forward(impl, stream, p, ops, plan(d::DepthwisePass::Forward));
                d::record_depthwise_backward_data(impl, stream, p, operand(tdy), operand(tw), operand(tdx),
                                                  plan(d::DepthwisePass::BackwardData));
                d::record_depthwise_backward_filter(impl, stream, p, operand(tx), operand(tdy), operand(tdw),
                                                    filter_plan, operand(workspace));
                stream.submit_and_wait();
            }
            vkt::check_close(ty.download(), vkconv::reference::forward(p, x, w, {}),
                             vkconv::reference::forward(p, absolute(x), absolute(w), {}), p.R * p.S, "forward");
            vkt::check_close(tdx.download(), vkconv::reference::backward_data(p, dy, w),
                             vkconv::reference::backward_data(p, absolute(dy), absolute(w)),
                             p.filters_per_group() * p.R * p.S, "backward_data");
            vkt::check_close(tdw.download(), vkconv::reference::backward_filter(p, x, dy),
                             vkconv::reference::backward_filter(p, absolute(x), absolute(dy)), p.N * p.P() * p.Q(),
                             "backward_filter");
        }
    }
}

TEST_CASE("depthwise passes run in chunks of images when bindings are capped", "[depthwise][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 6000;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        for (int64_t multiplier : {1, 2}) {
            auto p = depthwise(5, 8, multiplier, 12, 16, 3, 3, 1);
            p.layout = layout;
            p.has_bias = true;
            vkconv::ForwardOptions options;
            // Two images of the larger of x and y per binding (plus the window's alignment slack).
            options.max_binding_bytes = 2 * uint64_t(std::max(p.C * p.H * p.W, p.K * p.P() * p.Q())) * 4 + 1024;
            INFO(vkconv::to_string(layout) << ", multiplier " << multiplier);
            for (const auto& stats : check_depthwise(*context, p, seed += 7, options)) CHECK(stats.chunks == 3);
        }
    }
    // Less than one image a binding: tiles of bands of rows (and pieces of channels).
    auto p = depthwise(2, 8, 1, 12, 16, 3, 3, 1);
    p.has_bias = true;
    vkconv::ForwardOptions tiny;
    tiny.max_binding_bytes = 1024;
    for (const auto& stats : check_depthwise(*context, p, seed += 7, tiny)) {
        CHECK(stats.algorithm == Algorithm::Depthwise);
        CHECK(stats.chunks > uint32_t(p.N));
    }
}

TEST_CASE("depthwise backward-filter is bit-identical from run to run", "[depthwise][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    auto p = depthwise(4, 6, 2, 19, 23, 3, 3, 1, 2);
    p.has_bias = true;
    vkconv::ForwardOptions chunked;
    chunked.max_binding_bytes = 2 * uint64_t(p.K * p.P() * p.Q()) * 4 + 1024;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        p.layout = layout;
        const auto xs = vkt::random_values(p.input_elements(), 1), dys = vkt::random_values(p.output_elements(), 2);
        auto x = vkconv::Tensor::from_host(*context, p.input_shape(), xs);
        auto dy = vkconv::Tensor::from_host(*context, p.output_shape(), dys);
        vkconv::Tensor dw(*context, p.filter_shape()), db(*context, p.bias_shape());
        const int64_t positions = p.N * p.P() * p.Q();
        for (const auto& options : {vkconv::ForwardOptions{}, chunked}) {
            dw.upload(poison(p.filter_elements()));
            db.upload(poison(p.K));
            const auto first = vkconv::backward_filter(*context, p, x, dy, dw, &db, Algorithm::Depthwise, options);
            CHECK(first.workspace_bytes > 0);  // the split reduction's partial sums
            const auto dw1 = dw.download(), db1 = db.download();
            vkt::check_close(dw1, vkconv::reference::backward_filter(p, xs, dys),
                             vkconv::reference::backward_filter(p, absolute(xs), absolute(dys)), positions, "dw");
            vkt::check_close(db1, vkconv::reference::backward_bias(p, dys),
                             vkconv::reference::backward_bias(p, absolute(dys)), positions, "db");
            for (int run = 0; run < 3; ++run) {
                // Poisoned first: a rerun that writes nothing must not pass as identical.
                dw.upload(poison(p.filter_elements()));
                db.upload(poison(p.K));
                vkconv::backward_filter(*context, p, x, dy, dw, &db, Algorithm::Depthwise, options);
                CHECK(dw.download() == dw1);
                CHECK(db.download() == db1);
            }
        }
    }
}

TEST_CASE("the pool peak of a depthwise pass is its operands plus the reported workspace", "[depthwise][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    auto p = depthwise(3, 8, 2, 13, 12, 3, 3, 1);
    p.has_bias = true;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        p.layout = layout;
        vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), b(*context, p.bias_shape());
        vkconv::Tensor y(*context, p.output_shape()), dx(*context, p.input_shape()), dw(*context, p.filter_shape());
        INFO(vkconv::to_string(layout));
        // Every tensor above is alive during each pass: the peak is all of them plus the workspace.
        const uint64_t in_use = context->pool_stats().in_use;
        const auto forward = vkconv::forward(*context, p, x, w, &b, y, Algorithm::Depthwise);
        CHECK(forward.workspace_bytes == 0);
        CHECK(forward.peak_bytes == in_use);
        const auto data = vkconv::backward_data(*context, p, y, w, dx, Algorithm::Depthwise);
        CHECK(data.workspace_bytes == 0);
        CHECK(data.peak_bytes == in_use);
        const uint64_t workspace = vkconv::backward_filter_workspace_bytes(*context, p, Algorithm::Depthwise);
        const auto filter = vkconv::backward_filter(*context, p, x, y, dw, &b, Algorithm::Depthwise);
        CHECK(filter.workspace_bytes == workspace);
        CHECK(workspace > 0);
        // Whole pieces' partial sums: a multiple of the filter's size, as the pool rounds it.
        const auto s = context->pool_stats();
        bool whole_pieces = false;
        for (uint64_t pieces = 1; pieces <= uint64_t(p.N * p.P()); ++pieces)
            whole_pieces = whole_pieces || s.rounded(pieces * uint64_t(p.filter_elements()) * 4) == workspace;
        CHECK(whole_pieces);
        CHECK(filter.peak_bytes == in_use + workspace);
        CHECK(context->pool_stats().in_use == in_use);  // the workspace went back
    }
}

TEST_CASE("the heuristic picks depthwise for depthwise problems", "[depthwise][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    auto p = depthwise(1, 6, 2, 9, 8, 3, 3, 1);
    vkconv::ForwardOptions heuristic;
    heuristic.auto_choice = vkconv::AutoChoice::Heuristic;
    const auto Auto = Algorithm::Auto;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        p.layout = layout;
        CHECK(vkconv::choose_forward_algorithm(*context, p) == Algorithm::Depthwise);
        vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), y(*context, p.output_shape());
        vkconv::Tensor dx(*context, p.input_shape()), dw(*context, p.filter_shape());
        CHECK(vkconv::forward(*context, p, x, w, nullptr, y, Auto, heuristic).algorithm == Algorithm::Depthwise);
        CHECK(vkconv::backward_data(*context, p, y, w, dx, Auto, heuristic).algorithm == Algorithm::Depthwise);
        CHECK(vkconv::backward_filter(*context, p, x, y, dw, nullptr, Auto, heuristic).algorithm ==
              Algorithm::Depthwise);
    }
}

TEST_CASE("depthwise rejects problems that are not depthwise", "[depthwise][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    ConvProblem p;
    p.N = 1, p.C = 4, p.H = 6, p.W = 6, p.K = 4, p.R = 3, p.S = 3, p.groups = 2;  // two channels per group
    vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), y(*context, p.output_shape());
    vkconv::Tensor dx(*context, p.input_shape()), dw(*context, p.filter_shape());
    auto expect_unsupported = [&](auto&& call) {
        const auto e = vkt::thrown_error(call);
        CHECK(e.category() == vkconv::ErrorCategory::Unsupported);
        CHECK_THAT(e.what(), Catch::Contains("not depthwise") && Catch::Contains("groups=2"));
    };
    expect_unsupported([&] { vkconv::forward(*context, p, x, w, nullptr, y, Algorithm::Depthwise); });
    expect_unsupported([&] { vkconv::forward_workspace_bytes(*context, p, Algorithm::Depthwise); });
    expect_unsupported([&] { vkconv::backward_data(*context, p, y, w, dx, Algorithm::Depthwise); });
    expect_unsupported([&] { vkconv::backward_filter(*context, p, x, y, dw, nullptr, Algorithm::Depthwise); });
    expect_unsupported([&] { vkconv::backward_filter_workspace_bytes(*context, p, Algorithm::Depthwise); });
}
