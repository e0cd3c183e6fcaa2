// The depthwise algorithm (one input channel per group) against the CPU reference, in all three passes:
// a table of deliberately odd depthwise shapes in both layouts, a seeded random sweep, runs forced into
// chunks, bit-identical reruns, exact workspace and peak memory, auto's choice, and non-depthwise input.
#include <array>
#include <cmath>
#include <limits>
#include <random>

#include "context/tensor_storage.hpp"
#include "conv/depthwise/depthwise.hpp"
#include "conv_cases.hpp"
#include "test_util.hpp"
#include "vulkan/command_stream.hpp"

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Layout;

namespace {

using vkt::absolute;
using vkt::poison;

// Forward (with the problem's bias) through vkt::check_forward, then backward-data, backward-filter with the bias
// gradient and backward_bias through vkt::check_backward (x, w, dy from seed + 3, + 4, + 5), all with the
// depthwise algorithm on NaN-poisoned outputs, each checked against the reference and its workspace query.
// Returns the stats of forward, backward-data and backward-filter.
std::array<vkconv::RunStats, 3> check_depthwise(vkconv::Context& context, const ConvProblem& p, uint32_t seed,
                                                const vkconv::PassOptions& options = {}) {
    INFO(p.str());
    std::array<vkconv::RunStats, 3> stats;
    stats[0] = vkt::check_forward(context, p, Algorithm::Depthwise, seed, options);
    CHECK(stats[0].algorithm == Algorithm::Depthwise);
    CHECK(stats[0].workspace_bytes == vkconv::forward_workspace_bytes(context, p, Algorithm::Depthwise, options));
    const auto backward = vkt::check_backward(context, p, Algorithm::Depthwise, seed + 3, options);
    stats[1] = backward.data.stats;
    stats[2] = backward.filter.stats;
    return stats;
}

// One variation per case: channel multipliers, strides with every input size that gives the same
// output, dilation, padding, kernel shapes, odd widths, batches, and channel counts on and off the NHWC
// vec4 path (C % 4) and widths on and off the NCHW one (W % 4).
std::vector<vkt::NamedProblem> odd_depthwise_problems() {
    std::vector<vkt::NamedProblem> cases = {
        {"3x3 pad 1", vkt::problem().batch(1).channels(4).depthwise(1).image(8, 8).kernel(3, 3).pad(1)},
        {"multiplier 2", vkt::problem().batch(2).channels(3).depthwise(2).image(7, 9).kernel(3, 3).pad(1)},
        {"multiplier 3", vkt::problem().batch(1).channels(5).depthwise(3).image(6, 13).kernel(3, 3).pad(1)},
        {"multiplier 3, C % 4 == 0", vkt::problem().batch(1).channels(4).depthwise(3).image(9, 8).kernel(3, 3).pad(1)},
        {"padding 0", vkt::problem().batch(2).channels(6).depthwise(1).image(9, 10).kernel(3, 3).pad(0)},
        {"padding 2 on 3x3", vkt::problem().batch(1).channels(4).depthwise(1).image(5, 6).kernel(3, 3).pad(2)},
        {"dilation 2", vkt::problem().batch(1).channels(3).depthwise(1).image(11, 12).kernel(3, 3).pad(2).dilation(2)},
        {"dilation 3, stride 2, multiplier 2",
         vkt::problem().batch(2).channels(2).depthwise(2).image(17, 16).kernel(3, 3).pad(1).stride(2).dilation(3)},
        {"7x7 pad 3", vkt::problem().batch(1).channels(4).depthwise(1).image(15, 16).kernel(7, 7).pad(3)},
        {"7x7 stride 2 multiplier 2",
         vkt::problem().batch(1).channels(3).depthwise(2).image(19, 13).kernel(7, 7).pad(3).stride(2)},
        {"1x1", vkt::problem().batch(2).channels(5).depthwise(1).image(4, 7).kernel(1, 1)},
        {"1x1 multiplier 2, stride 2",
         vkt::problem().batch(1).channels(8).depthwise(2).image(9, 8).kernel(1, 1).stride(2)},
        {"width 1", vkt::problem().batch(2).channels(4).depthwise(1).image(6, 1).kernel(3, 3).pad(1)},
        {"width 1, 1x1", vkt::problem().batch(1).channels(3).depthwise(2).image(5, 1).kernel(1, 1)},
        {"width 5", vkt::problem().batch(1).channels(8).depthwise(1).image(7, 5).kernel(3, 3).pad(1)},
        {"width 13, batch 3", vkt::problem().batch(3).channels(5).depthwise(1).image(6, 13).kernel(3, 3).pad(1)},
        {"single pixel", vkt::problem().batch(2).channels(4).depthwise(1).image(1, 1).kernel(1, 1)},
        {"kernel equals image", vkt::problem().batch(1).channels(3).depthwise(1).image(5, 5).kernel(5, 5)},
        {"wide 24x40", vkt::problem().batch(1).channels(8).depthwise(1).image(24, 40).kernel(3, 3).pad(1)},
        {"3x5 kernel, pad 1,2", vkt::problem().batch(2).channels(4).depthwise(1).image(9, 14).kernel(3, 5).pad(1, 2)},
        {"1x7 kernel", vkt::problem().batch(1).channels(6).depthwise(2).image(5, 20).kernel(1, 7).pad(0, 3)},
        {"stride 2,3 dilation 2,1",
         vkt::problem().batch(1).channels(4).depthwise(1).image(21, 17).kernel(3, 2).pad(1, 0).stride(2, 3).dilation(
             2, 1)},
    };
    // Every input size that gives a 4x5 output for strides 1..3 (H, W = base .. base + stride - 1).
    for (int64_t stride = 1; stride <= 3; ++stride) {
        const int64_t base_h = 3 * stride + 3 - 2, base_w = 4 * stride + 3 - 2;  // (P-1)*s + R - 2*pad
        for (int64_t extra = 0; extra < stride; ++extra) {
            cases.push_back({"stride " + std::to_string(stride) + ", input +" + std::to_string(extra),
                             vkt::problem()
                                 .batch(2)
                                 .channels(4)
                                 .depthwise(1 + extra % 2)
                                 .image(base_h + extra, base_w + extra)
                                 .kernel(3, 3)
                                 .pad(1)
                                 .stride(stride)});
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

// `count` valid random depthwise problems from `seed`: any multiplier, stride, padding, dilation, layout, bias.
std::vector<ConvProblem> random_depthwise_problems(int count, uint32_t seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    std::vector<ConvProblem> out;
    while (static_cast<int>(out.size()) < count) {
        // One draw after another, in the order the sweep has always drawn them, so its problems stay the same.
        const int64_t S = pick(1, 5), R = pick(1, 5), W = pick(1, 14), H = pick(1, 14), multiplier = pick(1, 3),
                      C = pick(1, 9), N = pick(1, 3);
        const int64_t pad_h = pick(0, 3), pad_w = pick(0, 3), stride_h = pick(1, 3), stride_w = pick(1, 3),
                      dilation_h = pick(1, 3), dilation_w = pick(1, 3);
        const Layout layout = pick(0, 1) ? Layout::NHWC : Layout::NCHW;
        const bool bias = pick(0, 1) == 1;
        const ConvProblem p = vkt::problem()
                                  .batch(N)
                                  .channels(C)
                                  .depthwise(multiplier)
                                  .image(H, W)
                                  .kernel(R, S)
                                  .pad(pad_h, pad_w)
                                  .stride(stride_h, stride_w)
                                  .dilation(dilation_h, dilation_w)
                                  .layout(layout)
                                  .bias(bias);
        try {
            p.validate();
        } catch (const vkconv::Error&) {
            continue;  // kernel larger than the padded input: draw again
        }
        out.push_back(p);
    }
    return out;
}

// `count` random depthwise problems from `seed`, each checked in all three passes.
void check_random_depthwise(vkconv::Context& context, int count, uint32_t seed) {
    const auto problems = random_depthwise_problems(count, seed);
    for (size_t i = 0; i < problems.size(); ++i) check_depthwise(context, problems[i], seed + 7 * uint32_t(i));
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
    return {vkconv::detail::storage_of(t)->pages.front(), uint64_t(t.elements())};
}

}  // namespace

// The device picks one read path (texel views on CPU implementations, storage buffers on GPUs): the other
// is run here through the engine directly, so both stay checked on any device.
TEST_CASE("depthwise kernels match the reference through both read paths", "[depthwise][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    namespace d = vkconv::detail;
    d::ContextImpl& impl = d::impl_of(*context);
    const ConvProblem nchw_vec4 = vkt::problem().batch(2).channels(4).depthwise(1).image(9, 12).kernel(3, 3).pad(1);
    const ConvProblem nchw_scalar =
        vkt::problem().batch(1).channels(3).depthwise(2).image(7, 13).kernel(3, 3).pad(1).stride(2);
    const ConvProblem nhwc_vec4 =
        vkt::problem().batch(2).channels(8).depthwise(1).image(6, 9).kernel(3, 3).pad(1).layout(Layout::NHWC);
    const ConvProblem nhwc_scalar =
        vkt::problem().batch(1).channels(3).depthwise(3).image(8, 7).kernel(5, 3).pad(2).dilation(2).layout(
            Layout::NHWC);
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
            auto plan = [&](vkconv::Pass pass) {
                d::DepthwisePlan result = d::plan_depthwise(impl, p, pass, {}).value();
                result.texel = texel;
                return result;
            };
            d::ConvOperands ops;
            ops.input = operand(tx), ops.filter = operand(tw), ops.output = operand(ty);
            const auto filter_plan = plan(vkconv::Pass::BackwardFilter);
            vkconv::Tensor workspace(*context, {int64_t(filter_plan.workspace_floats)});
            {
                d::CommandStream stream(*impl.device);
                d::record_depthwise_forward(impl, stream, p, ops, plan(vkconv::Pass::Forward));
                d::record_depthwise_backward_data(impl, stream, p, operand(tdy), operand(tw), operand(tdx),
                                                  plan(vkconv::Pass::BackwardData));
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
            const ConvProblem p = vkt::problem()
                                      .batch(5)
                                      .channels(8)
                                      .depthwise(multiplier)
                                      .image(12, 16)
                                      .kernel(3, 3)
                                      .pad(1)
                                      .layout(layout)
                                      .bias();
            vkconv::PassOptions options;
            // Two images of the larger of x and y per binding (plus the window's alignment slack).
            options.max_binding_bytes = 2 * uint64_t(std::max(p.C * p.H * p.W, p.K * p.P() * p.Q())) * 4 + 1024;
            INFO(vkconv::to_string(layout) << ", multiplier " << multiplier);
            for (const auto& stats : check_depthwise(*context, p, seed += 7, options)) CHECK(stats.chunks == 3);
        }
    }
    // Less than one image a binding: tiles of bands of rows (and pieces of channels).
    const ConvProblem p = vkt::problem().batch(2).channels(8).depthwise(1).image(12, 16).kernel(3, 3).pad(1).bias();
    vkconv::PassOptions tiny;
    tiny.max_binding_bytes = 1024;
    for (const auto& stats : check_depthwise(*context, p, seed += 7, tiny)) {
        CHECK(stats.algorithm == Algorithm::Depthwise);
        CHECK(stats.chunks > uint32_t(p.N));
    }
}

TEST_CASE("depthwise backward-filter is bit-identical from run to run", "[depthwise][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    ConvProblem p = vkt::problem().batch(4).channels(6).depthwise(2).image(19, 23).kernel(3, 3).pad(1).stride(2).bias();
    vkconv::PassOptions chunked;
    chunked.max_binding_bytes = 2 * uint64_t(p.K * p.P() * p.Q()) * 4 + 1024;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        p.layout = layout;
        const auto xs = vkt::random_values(p.input_elements(), 1), dys = vkt::random_values(p.output_elements(), 2);
        auto x = vkconv::Tensor::from_host(*context, p.input_shape(), xs);
        auto dy = vkconv::Tensor::from_host(*context, p.output_shape(), dys);
        vkconv::Tensor dw(*context, p.filter_shape()), db(*context, p.bias_shape());
        const int64_t positions = p.N * p.P() * p.Q();
        for (const auto& options : {vkconv::PassOptions{}, chunked}) {
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
    ConvProblem p = vkt::problem().batch(3).channels(8).depthwise(2).image(13, 12).kernel(3, 3).pad(1).bias();
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
    ConvProblem p = vkt::problem().batch(1).channels(6).depthwise(2).image(9, 8).kernel(3, 3).pad(1);
    vkconv::PassOptions heuristic;
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
        CHECK_THAT(e.what(), Catch::Contains("one input channel per group") && Catch::Contains("groups=2"));
    };
    expect_unsupported([&] { vkconv::forward(*context, p, x, w, nullptr, y, Algorithm::Depthwise); });
    expect_unsupported([&] { vkconv::forward_workspace_bytes(*context, p, Algorithm::Depthwise); });
    expect_unsupported([&] { vkconv::backward_data(*context, p, y, w, dx, Algorithm::Depthwise); });
    expect_unsupported([&] { vkconv::backward_filter(*context, p, x, y, dw, nullptr, Algorithm::Depthwise); });
    expect_unsupported([&] { vkconv::backward_filter_workspace_bytes(*context, p, Algorithm::Depthwise); });
}
