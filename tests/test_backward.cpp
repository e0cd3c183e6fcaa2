// Backward passes against the CPU reference: dx (a gather per value), dw and db (fixed-order reductions),
// on the named odd table and a random sweep in both layouts, bit-identical reruns, and bad input.
#include <cmath>
#include <limits>
#include <random>

#include "conv_cases.hpp"
#include "test_util.hpp"

using vkconv::Layout;

using vkt::absolute;
using vkt::poison;

TEST_CASE("every algorithm's backward passes match the reference on the named odd cases", "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 900;
    for (const auto& named : vkt::odd_problems()) {
        for (auto algorithm : vkt::algorithms_for(named.problem)) {
            for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
                auto problem = named.problem;
                problem.layout = layout;
                INFO("case '" << named.name << "'");
                vkt::check_backward(*context, problem, algorithm, seed += 3);
            }
        }
    }
}

TEST_CASE("every algorithm's backward passes match the reference on a seeded random sweep", "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 12000;
    int i = 0;
    for (auto problem : vkt::random_problems(120, 4242)) {
        problem.has_bias = false;
        const auto algorithms = vkt::algorithms_for(problem);  // each problem one of them, in turn
        vkt::check_backward(*context, problem, algorithms[size_t(i++) % algorithms.size()], seed += 3);
    }
}

TEST_CASE("im2col and mec backward passes run in chunks of images and bands of rows", "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    vkconv::ConvProblem p;
    p.N = 5, p.C = 8, p.H = 19, p.W = 17, p.K = 12, p.R = 3, p.S = 3, p.pad_h = 1, p.pad_w = 2, p.stride_h = 2;
    uint32_t seed = 77;
    for (auto algorithm : {vkconv::Algorithm::Im2col, vkconv::Algorithm::Mec}) {
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            for (auto [stride, dilation] : {std::pair<int64_t, int64_t>{2, 1}, {2, 2}, {1, 1}, {1, 2}}) {
                p.layout = layout, p.stride_h = stride, p.dilation_h = dilation;
                vkconv::PassOptions options;
                options.max_binding_bytes = 2 * uint64_t(p.C * p.H * p.W) * 4 + 1024;  // two images a chunk
                INFO(vkconv::to_string(layout) << " image chunks, stride " << stride << ", dilation " << dilation);
                vkt::check_backward(*context, p, algorithm, seed++, options);
                // Just above one image of x and of dy, below one image's lowered matrix.
                options.max_binding_bytes = uint64_t(std::max(p.C * p.H * p.W, p.K * p.P() * p.Q())) * 4 + 2048;
                INFO(vkconv::to_string(layout) << " row bands");
                CHECK(vkt::check_backward(*context, p, algorithm, seed++, options).data.stats.chunks > uint32_t(p.N));
            }
        }
    }
}

TEST_CASE("the pool peak of a backward pass is its operands plus the reported workspace", "[backward][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    vkconv::ConvProblem p;
    p.N = 2, p.C = 6, p.H = 11, p.W = 9, p.K = 10, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1;
    for (auto algorithm : {vkconv::Algorithm::Direct, vkconv::Algorithm::Im2col, vkconv::Algorithm::Mec}) {
        vkconv::Tensor x(*context, p.input_shape()), dy(*context, p.output_shape()), w(*context, p.filter_shape());
        vkconv::Tensor dx(*context, p.input_shape()), dw(*context, p.filter_shape());
        const auto s = context->pool_stats();
        const uint64_t data_operands = s.rounded(dy.bytes()) + s.rounded(w.bytes()) + s.rounded(dx.bytes());
        const uint64_t filter_operands = s.rounded(x.bytes()) + s.rounded(dy.bytes()) + s.rounded(dw.bytes());
        INFO(vkconv::to_string(algorithm));
        const auto data = vkconv::backward_data(*context, p, dy, w, dx, algorithm);
        // Every tensor above is alive during the pass: the peak is all of them plus the workspace.
        CHECK(data.peak_bytes == context->pool_stats().in_use + data.workspace_bytes);
        CHECK(context->pool_stats().in_use >= data_operands);
        const auto filter = vkconv::backward_filter(*context, p, x, dy, dw, nullptr, algorithm);
        CHECK(filter.peak_bytes == context->pool_stats().in_use + filter.workspace_bytes);
        CHECK(context->pool_stats().in_use >= filter_operands);
        if (algorithm == vkconv::Algorithm::Im2col) {
            CHECK(data.workspace_bytes == s.rounded(uint64_t(p.N * p.P() * p.Q() * p.R * p.S * p.C) * 4));
            // Backward-filter adds split-K partial products to the same im2col matrix.
            CHECK(filter.workspace_bytes >= data.workspace_bytes);
        }
        if (algorithm == vkconv::Algorithm::Mec) {
            // dL is L-sized (all H_l = (P-1)*sh + (R-1)*dh + 1 padded rows its windows cover), plus the
            // filter copy with its taps reordered.
            const uint64_t lowered_rows = uint64_t((p.P() - 1) * p.stride_h + (p.R - 1) * p.dilation_h + 1);
            const uint64_t mec = uint64_t(p.N * p.Q() * p.S * p.C) * lowered_rows;
            CHECK(data.workspace_bytes == s.rounded(mec * 4) + s.rounded(uint64_t(p.filter_elements()) * 4));
            CHECK(filter.workspace_bytes >= data.workspace_bytes);
        }
    }
}

TEST_CASE("backward passes are bit-identical from run to run", "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    vkconv::ConvProblem p;
    p.N = 3, p.C = 6, p.H = 13, p.W = 11, p.K = 8, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1, p.stride_h = 2;
    p.has_bias = true;
    vkt::BackwardCheck check(*context, p, 1);  // x, w, dy from seeds 1, 2, 3
    for (auto algorithm : vkt::algorithms_for(p)) {
        INFO(vkconv::to_string(algorithm));
        // Each pass poisons the outputs it writes and checks them against the reference.
        check.data(algorithm);
        check.filter(algorithm);
        const auto dx1 = check.dx(), dw1 = check.dw(), db1 = check.db();
        CHECK(vkt::all_written(dx1));
        CHECK(vkt::all_written(dw1));
        CHECK(vkt::all_written(db1));
        for (int run = 0; run < 3; ++run) {
            // Poisoned first: a rerun that writes nothing must not pass as identical.
            check.data(algorithm);
            check.filter(algorithm);
            CHECK(check.dx() == dx1);
            CHECK(check.dw() == dw1);
            CHECK(check.db() == db1);
        }
    }
}

TEST_CASE("backward passes reject mismatched tensors and unsupported algorithms", "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    vkconv::ConvProblem p;
    p.N = 1, p.C = 4, p.H = 6, p.W = 6, p.K = 2, p.R = 3, p.S = 3;
    vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), dy(*context, p.output_shape());
    vkconv::Tensor dx(*context, p.input_shape()), dw(*context, p.filter_shape()), db(*context, p.bias_shape());
    vkconv::Tensor wrong(*context, {1, 4, 6, 5});
    const uint64_t in_use = context->pool_stats().in_use;
    auto expect = [&](auto&& call, const std::string& needle) {
        INFO("expected an InvalidArgument naming '" << needle << "'");
        CHECK_THAT(vkt::invalid_argument_message(call), Catch::Contains(needle));
    };
    expect([&] { vkconv::backward_data(*context, p, wrong, w, dx); }, "grad_output");
    expect([&] { vkconv::backward_data(*context, p, dy, wrong, dx); }, "filter");
    expect([&] { vkconv::backward_data(*context, p, dy, w, wrong); }, "grad_input");
    expect([&] { vkconv::backward_data(*context, p, dy, w, dy); }, "grad_input");
    expect([&] { vkconv::backward_filter(*context, p, wrong, dy, dw); }, "input");
    expect([&] { vkconv::backward_filter(*context, p, x, dy, wrong); }, "grad_filter");
    expect([&] { vkconv::backward_filter(*context, p, x, dy, dw, &db); }, "has_bias");
    auto biased = p;
    biased.has_bias = true;
    expect([&] { vkconv::backward_filter(*context, biased, x, dy, dw, &dw); }, "grad_bias");
    expect([&] { vkconv::backward_bias(*context, biased, dy, wrong); }, "grad_bias");
    const auto e =
        vkt::thrown_error([&] { vkconv::backward_data(*context, p, dy, w, dx, vkconv::Algorithm::Depthwise); });
    CHECK_THAT(e.what(), Catch::Contains("depthwise"));
    CHECK(e.category() == vkconv::ErrorCategory::Unsupported);
    CHECK(context->pool_stats().in_use == in_use);
}

TEST_CASE("finite differences of the GPU forward agree with both GPU backward passes", "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // L(x, w) = <forward(x, w), g>. Convolution is linear in x and in w, so a central difference is exact
    // but for the fp32 rounding of the two forward passes: |fd - grad| <= sum_j |g_j| * 2 * err_j / (2 eps)
    // with err_j the fp32 summation bound of output j.
    auto p = vkconv::ConvProblem{};
    p.N = 2, p.C = 4, p.H = 9, p.W = 8, p.K = 6, p.R = 3, p.S = 2, p.stride_h = 2, p.pad_h = 1, p.pad_w = 1;
    p.dilation_w = 2, p.groups = 2;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        p.layout = layout;
        INFO(p.str());
        auto x = vkt::random_values(p.input_elements(), 1);
        auto w = vkt::random_values(p.filter_elements(), 2);
        const auto g = vkt::random_values(p.output_elements(), 3);
        auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), g);
        vkconv::Tensor ty(*context, p.output_shape()), tdx(*context, p.input_shape()), tdw(*context, p.filter_shape());
        auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
        auto tw = vkconv::Tensor::from_host(*context, p.filter_shape(), w);
        for (auto algorithm : vkt::algorithms_for(p)) {
            INFO(vkconv::to_string(algorithm));
            tx.upload(x);
            tw.upload(w);
            tdx.upload(poison(p.input_elements()));
            tdw.upload(poison(p.filter_elements()));
            vkconv::backward_data(*context, p, tdy, tw, tdx, algorithm);
            vkconv::backward_filter(*context, p, tx, tdy, tdw, nullptr, algorithm);
            const auto dx = tdx.download(), dw = tdw.download();
            // The backward results' own fp32 summation bounds.
            const auto dx_magnitude = vkconv::reference::backward_data(p, absolute(g), absolute(w));
            const auto dw_magnitude = vkconv::reference::backward_filter(p, absolute(x), absolute(g));

            const double u = std::ldexp(1.0, -24), eps = 0.25;
            const double reduction = double(p.channels_per_group() * p.R * p.S + 2);
            auto loss = [&](const std::vector<float>& xs, const std::vector<float>& ws, double& bound) {
                tx.upload(xs);
                tw.upload(ws);
                vkconv::forward(*context, p, tx, tw, nullptr, ty, vkconv::Algorithm::Direct);
                const auto y = ty.download();
                const auto magnitude = vkconv::reference::forward(p, absolute(xs), absolute(ws));
                double sum = 0;
                bound = 0;
                for (size_t j = 0; j < y.size(); ++j) {
                    sum += double(y[j]) * g[j];
                    bound += std::fabs(g[j]) * reduction * u * magnitude[j];
                }
                return sum;
            };
            std::mt19937 rng(7);
            for (int trial = 0; trial < 12; ++trial) {
                for (bool wrt_x : {true, false}) {
                    auto& values = wrt_x ? x : w;
                    const size_t i = rng() % values.size();
                    const float original = values[i];
                    double bound_plus = 0, bound_minus = 0;
                    values[i] = original + float(eps);
                    const double plus = loss(x, w, bound_plus);
                    values[i] = original - float(eps);
                    const double minus = loss(x, w, bound_minus);
                    values[i] = original;
                    const double fd = (plus - minus) / (2 * eps);
                    const double gradient = wrt_x ? dx[i] : dw[i];
                    const double gradient_bound =
                        wrt_x ? double(p.filters_per_group() * p.R * p.S + 2) * u * dx_magnitude[i]
                              : double(p.N * p.P() * p.Q() + 2) * u * dw_magnitude[i];
                    INFO((wrt_x ? "dx[" : "dw[") << i << "]: finite difference " << fd << ", backward " << gradient);
                    CHECK(std::fabs(fd - gradient) <= (bound_plus + bound_minus) / (2 * eps) + gradient_bound);
                }
            }
        }
    }
}

TEST_CASE("im2col backward-filter split-K pieces add up to the reference", "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // Few filters and taps but many output positions: one GEMM tile, so the reduction is split (within
    // one image, across whole NCHW images, anywhere in NHWC), pieces of unequal length included.
    vkconv::ConvProblem p;
    p.C = 4, p.H = 21, p.W = 19, p.K = 4, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1;
    uint32_t seed = 500;
    for (int64_t n : {1, 3}) {
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            p.N = n, p.layout = layout;
            const uint64_t with_split = vkconv::backward_filter_workspace_bytes(*context, p, vkconv::Algorithm::Im2col);
            const uint64_t lowered = vkconv::backward_data_workspace_bytes(*context, p, vkconv::Algorithm::Im2col);
            CHECK(with_split > lowered);  // the partial products are there
            vkt::check_backward(*context, p, vkconv::Algorithm::Im2col, seed += 3);
        }
    }
}

TEST_CASE("mec backward-filter reduces over images and row pieces, split or not, to the reference", "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // A small filter (one GEMM tile: the reduction is split into partial products over images and row
    // pieces) and a larger one (enough tiles: no split, the GEMMs add into dw image by image).
    vkconv::ConvProblem small;
    small.C = 4, small.H = 21, small.W = 19, small.K = 4, small.R = 3, small.S = 3, small.pad_h = small.pad_w = 1;
    vkconv::ConvProblem large = small;
    large.C = 32, large.K = 64, large.H = 9, large.W = 10;
    uint32_t seed = 700;
    for (auto base : {small, large}) {
        for (int64_t n : {1, 3}) {
            for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
                auto p = base;
                p.N = n, p.layout = layout;
                INFO(p.str());
                vkt::check_backward(*context, p, vkconv::Algorithm::Mec, seed += 3);
            }
        }
    }
    // The split's partial products are workspace beyond the lowered matrix and the filter copy.
    small.N = 3;
    CHECK(vkconv::backward_filter_workspace_bytes(*context, small, vkconv::Algorithm::Mec) >
          vkconv::backward_data_workspace_bytes(*context, small, vkconv::Algorithm::Mec));
}

TEST_CASE("layer_backward runs both passes on one shared workspace and matches the separate passes",
          "[backward][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    vkconv::ConvProblem p;
    p.N = 2, p.C = 6, p.H = 12, p.W = 10, p.K = 8, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1, p.stride_w = 2;
    p.has_bias = true;
    for (auto algorithm :
         {vkconv::Algorithm::Direct, vkconv::Algorithm::Im2col, vkconv::Algorithm::Mec, vkconv::Algorithm::Auto}) {
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            p.layout = layout;
            INFO(vkconv::to_string(algorithm) << " " << p.str());
            vkt::BackwardCheck check(*context, p, 1);  // x, w, dy from seeds 1, 2, 3
            // Each pass poisons the outputs it writes and checks them against the reference; the step poisons all
            // three.
            const auto data = check.data(algorithm).stats;
            const auto filter = check.filter(algorithm).stats;
            const auto dx1 = check.dx(), dw1 = check.dw(), db1 = check.db();
            CHECK(vkt::all_written(dx1));
            CHECK(vkt::all_written(dw1));
            CHECK(vkt::all_written(db1));
            const auto layer = check.step(algorithm);
            const auto& step = layer.stats;
            const uint64_t in_use = layer.live;
            // Same plans, same order of every sum: bit-identical to the separate calls.
            CHECK(check.dx() == dx1);
            CHECK(check.dw() == dw1);
            CHECK(check.db() == db1);
            CHECK(step.data_algorithm == data.algorithm);
            CHECK(step.filter_algorithm == filter.algorithm);
            CHECK(step.data_workspace_bytes == data.workspace_bytes);
            CHECK(step.filter_workspace_bytes == filter.workspace_bytes);
            // Shared slots: never more than the two passes one after the other, at most the larger pass
            // plus a slot only one of them has.
            CHECK(step.step.workspace_bytes == vkconv::layer_backward_workspace_bytes(*context, p, algorithm));
            CHECK(step.step.workspace_bytes >= std::max(data.workspace_bytes, filter.workspace_bytes));
            CHECK(step.step.workspace_bytes <= data.workspace_bytes + filter.workspace_bytes);
            if (algorithm == vkconv::Algorithm::Mec || algorithm == vkconv::Algorithm::Im2col)
                CHECK(step.step.workspace_bytes < data.workspace_bytes + filter.workspace_bytes);
            CHECK(step.step.peak_bytes == in_use + step.step.workspace_bytes);
            CHECK(context->pool_stats().in_use == in_use);
        }
    }
    vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), dy(*context, p.output_shape());
    vkconv::Tensor dx(*context, p.input_shape()), dw(*context, p.filter_shape());
    CHECK_THAT(vkt::invalid_argument_message([&] { vkconv::layer_backward(*context, p, x, w, dy, dx, dx); }),
               Catch::Contains("grad_filter"));
    CHECK_THAT(vkt::invalid_argument_message([&] { vkconv::layer_backward(*context, p, x, w, dy, x, dw); }),
               Catch::Contains("grad_input"));
}

TEST_CASE("backward passes handle every input size that gives the same output size under stride > 1",
          "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // With stride s, s input sizes give one output size (PyTorch's conv2d_input takes the input shape
    // for this reason); the last rows or columns of the larger ones reach no output and get dx = 0.
    uint32_t seed = 3100;
    for (int64_t stride : {2, 3}) {
        vkconv::ConvProblem p;
        p.N = 2, p.C = 3, p.K = 4, p.R = 3, p.S = 2, p.pad_h = 1, p.stride_h = stride, p.stride_w = stride;
        p.dilation_w = 2;
        std::vector<std::pair<int64_t, int64_t>> sizes;
        for (int64_t h = 1; h < 20; ++h)
            for (int64_t w = 1; w < 20; ++w) {
                p.H = h, p.W = w;
                if (p.P() == 3 && p.Q() == 4) sizes.emplace_back(h, w);
            }
        REQUIRE(sizes.size() == size_t(stride * stride));
        for (auto [h, w] : sizes) {
            p.H = h, p.W = w;
            for (auto algorithm : vkt::algorithms_for(p)) {
                for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
                    p.layout = layout;
                    INFO(p.str());
                    vkt::check_backward(*context, p, algorithm, seed += 3);
                }
            }
        }
    }
}

TEST_CASE("mec backward-data gathers every row of dL for any mix of vertical stride and dilation", "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // The taps that reach a lowered row step by sh / gcd(sh, dh): with sh = 2, dh = 3 every other tap,
    // so the filter copy's tap order and the GEMM's segment stride both matter; rows no tap reaches are 0.
    uint32_t seed = 4100;
    for (auto [stride, dilation] : {std::pair<int64_t, int64_t>{2, 3}, {3, 2}, {2, 2}, {3, 1}, {4, 3}, {1, 3}}) {
        for (int64_t R : {3, 4, 5}) {
            for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
                vkconv::ConvProblem p;
                p.N = 2, p.C = 3, p.H = 29, p.W = 6, p.K = 5, p.R = R, p.S = 2, p.pad_h = 2;
                p.stride_h = stride, p.dilation_h = dilation, p.layout = layout;
                INFO(p.str());
                vkt::check_backward(*context, p, vkconv::Algorithm::Mec, seed += 3);
            }
        }
    }
}

TEST_CASE("the bias gradient splits long reductions into pieces and chunks, exactly and bit-identically",
          "[backward][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    // Few channels and many positions: pieces of positions per channel, summed in order by splitk_reduce;
    // a binding cap of two images of dy adds chunks that add up in order.
    vkconv::ConvProblem p;
    p.N = 5, p.C = 2, p.H = 40, p.W = 37, p.K = 3, p.R = 1, p.S = 1, p.has_bias = true;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        p.layout = layout;
        INFO(p.str());
        const auto x = vkt::random_values(p.input_elements(), 90);
        const auto dy = vkt::random_values(p.output_elements(), 91);
        auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
        auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
        vkconv::Tensor db(*context, p.bias_shape()), dw(*context, p.filter_shape());
        const auto db_ref = vkconv::reference::backward_bias(p, dy);
        const auto db_magnitude = vkconv::reference::backward_bias(p, absolute(dy));
        const int64_t positions = p.N * p.P() * p.Q();
        db.upload(poison(p.K));
        const uint64_t in_use = context->pool_stats().in_use;
        const auto stats = vkconv::backward_bias(*context, p, tdy, db);
        CHECK(stats.workspace_bytes > 0);  // the pieces' partial sums
        CHECK(stats.peak_bytes == in_use + stats.workspace_bytes);
        const auto first = db.download();
        vkt::check_close(first, db_ref, db_magnitude, positions, "bias " + p.str());
        db.upload(poison(p.K));  // a rerun that writes nothing must not pass
        vkconv::backward_bias(*context, p, tdy, db);
        CHECK(db.download() == first);

        // The bias gradient of a backward-filter whose bias reduction runs in chunks of two images, and its
        // weight gradient, both from poison.
        vkconv::PassOptions two_images;
        two_images.max_binding_bytes = 2 * uint64_t(p.K * p.P() * p.Q()) * 4 + 1024;
        db.upload(poison(p.K));
        dw.upload(poison(p.filter_elements()));
        const auto filter =
            vkconv::backward_filter(*context, p, tx, tdy, dw, &db, vkconv::Algorithm::Direct, two_images);
        CHECK(filter.workspace_bytes ==
              vkconv::backward_filter_workspace_bytes(*context, p, vkconv::Algorithm::Direct, two_images));
        vkt::check_close(db.download(), db_ref, db_magnitude, positions, "chunked bias " + p.str());
        vkt::check_close(dw.download(), vkconv::reference::backward_filter(p, x, dy),
                         vkconv::reference::backward_filter(p, absolute(x), absolute(dy)), positions,
                         "chunked weight gradient " + p.str());
    }
}

TEST_CASE("a workspace limit is honoured to the byte by every pass, in smaller chunks, or the algorithm is refused",
          "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    vkconv::ConvProblem p;
    p.N = 3, p.C = 6, p.H = 14, p.W = 13, p.K = 8, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1;
    uint32_t seed = 5200;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        p.layout = layout;
        for (auto algorithm : {vkconv::Algorithm::Im2col, vkconv::Algorithm::Mec}) {
            INFO(vkconv::to_string(algorithm) << " " << p.str());
            const uint64_t full = vkconv::forward_workspace_bytes(*context, p, algorithm);
            int refused = 0, chunked = 0;
            for (uint64_t limit : {full, full / 2, full / 3, full / 5, full / 9, full / 17, uint64_t(2048)}) {
                INFO("workspace limit " << limit);
                vkconv::PassOptions options;
                options.workspace_limit = limit;
                try {
                    const auto forward = vkt::check_forward(*context, p, algorithm, seed += 3, options);
                    CHECK(forward.workspace_bytes <= limit);
                    chunked += forward.chunks > 1;
                    for (auto query : {vkconv::backward_data_workspace_bytes, vkconv::backward_filter_workspace_bytes})
                        CHECK(query(*context, p, algorithm, options) <= limit);
                    vkt::check_backward(*context, p, algorithm, seed += 3, options);
                } catch (const vkconv::Error& e) {
                    // Refused: named, with the limit in the message, and only below the smallest chunk.
                    CHECK(e.category() == vkconv::ErrorCategory::Unsupported);
                    CHECK_THAT(e.what(), Catch::Contains("workspace limit of " + std::to_string(limit)));
                    ++refused;
                }
            }
            CHECK(chunked > 0);
            CHECK(refused > 0);  // 2048 bytes is below one output row's lowered matrix
            // Auto under the smallest limit still runs: it falls back to direct, which needs no workspace.
            vkconv::PassOptions tiny;
            tiny.workspace_limit = 2048;
            CHECK(vkt::check_forward(*context, p, vkconv::Algorithm::Auto, seed += 3, tiny).workspace_bytes <= 2048);
        }
    }
}

TEST_CASE(
    "with the device's binding limit lowered, passes run in chunks, and a workspace limit nothing fits is an "
    "error naming the smallest workspace",
    "[backward][gpu]") {
    // 16 KiB bindings: x and dy (21 and 26 KiB) cannot be bound whole, so direct runs in tiles, and the
    // lowered algorithms run in chunks of images or bands of rows.
    auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 16 * 1024});
    if (!context) return;
    CHECK(context->device().max_storage_buffer_range == 16 * 1024);
    vkconv::ConvProblem p;
    p.N = 3, p.C = 8, p.H = 15, p.W = 14, p.K = 10, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1;
    uint32_t seed = 6100;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        p.layout = layout;
        INFO(p.str());
        for (auto algorithm : {vkconv::Algorithm::Im2col, vkconv::Algorithm::Mec}) {
            CHECK(vkt::check_forward(*context, p, algorithm, seed += 3).chunks > 1);
            CHECK(vkt::check_backward(*context, p, algorithm, seed += 3).data.stats.chunks > 1);
        }
        // Direct binds whole tensors: here it runs in tiles, one image each.
        CHECK(vkt::check_forward(*context, p, vkconv::Algorithm::Direct, seed += 3).chunks == uint32_t(p.N));
        CHECK(vkt::check_backward(*context, p, vkconv::Algorithm::Direct, seed += 3).data.stats.chunks ==
              uint32_t(p.N));
        vkconv::PassOptions tiny;
        tiny.workspace_limit = 1024;
        for (int pass = 0; pass < 3; ++pass) {
            INFO("pass " << pass);
            const auto e = vkt::thrown_error([&] {
                if (pass == 0) vkconv::forward_workspace_bytes(*context, p, vkconv::Algorithm::Auto, tiny);
                if (pass == 1) vkconv::backward_data_workspace_bytes(*context, p, vkconv::Algorithm::Auto, tiny);
                if (pass == 2) vkconv::backward_filter_workspace_bytes(*context, p, vkconv::Algorithm::Auto, tiny);
            });
            CHECK(e.category() == vkconv::ErrorCategory::InvalidArgument);
            CHECK_THAT(e.what(), Catch::Contains("smallest workspace") && Catch::Contains("1024 bytes"));
        }
    }
}

TEST_CASE("a long bias gradient with no room for partial sums adds its pieces straight into db", "[backward][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // 1,210,000 positions a channel: more than one invocation may loop over (engine/vulkan/shader_limits.hpp; past
    // lavapipe's cap even with the shader's loop unrolled 16 times), and a workspace limit of one byte leaves
    // no room for the pieces' partial sums. Integer data keep every sum exact, so the result must equal the
    // reference exactly.
    vkconv::ConvProblem p;
    p.N = 1, p.C = 1, p.H = 1100, p.W = 1100, p.K = 1, p.R = 1, p.S = 1, p.has_bias = true;
    std::vector<float> x(size_t(p.input_elements())), dy(size_t(p.output_elements()));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 5) - 2);
    for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(1 + int(i % 3));  // positive: nothing cancels
    vkconv::PassOptions no_room;
    no_room.workspace_limit = 1;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        p.layout = layout;
        INFO(p.str());
        auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
        auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
        auto tdw = vkconv::Tensor::from_host(*context, p.filter_shape(), poison(p.filter_elements()));
        auto tdb = vkconv::Tensor::from_host(*context, p.bias_shape(), poison(p.K));
        const auto stats = vkconv::backward_filter(*context, p, tx, tdy, tdw, &tdb, vkconv::Algorithm::Direct, no_room);
        CHECK(stats.workspace_bytes == 0);
        CHECK(stats.bias_pieces == 1);  // no partial sums
        const auto db = tdb.download(), dw = tdw.download();
        const auto db_ref = vkconv::reference::backward_bias(p, dy),
                   dw_ref = vkconv::reference::backward_filter(p, x, dy);
        for (int64_t k = 0; k < p.K; ++k) {
            INFO("channel " << k);
            CHECK(double(db[size_t(k)]) == db_ref[size_t(k)]);
            CHECK(double(dw[size_t(k)]) == dw_ref[size_t(k)]);
        }
    }
}

TEST_CASE("implicit GEMM splits grids past the workgroup-count limit in every dimension", "[backward][gpu]") {
    // A cap of 2 workgroups per dimension: columns, filter rows and (slice, group) pairs all take several
    // dispatches, which must still cover every output once.
    auto context = vkt::fresh_context(vkt::test_options(), {.max_workgroups_per_dispatch = 2});
    if (!context) return;
    for (vkconv::Layout layout : {vkconv::Layout::NCHW, vkconv::Layout::NHWC}) {
        const vkconv::ConvProblem p =
            vkt::problem().batch(2).channels(8).image(9, 10).filters(12).kernel(3, 3).pad(1).groups(4).layout(layout);
        INFO(p.str());
        vkt::check_forward(*context, p, vkconv::Algorithm::ImplicitGemm, 31);
        vkt::BackwardCheck check(*context, p, 32);
        check.data(vkconv::Algorithm::ImplicitGemm);
        const auto filter = check.filter(vkconv::Algorithm::ImplicitGemm);
        CHECK(filter.stats.dispatches > 2);
    }
}

TEST_CASE("implicit GEMM forward matches the reference on the named odd cases, both layouts", "[backward][gpu]") {
    // The forward beside the backward passes above: the odd table in both layouts, where NHWC cases with
    // channels in whole vec4s take the kernels' vector loads of x and dy.
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 7300;
    for (const auto& named : vkt::odd_problems()) {
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            auto problem = named.problem;
            problem.layout = layout;
            INFO("case '" << named.name << "' " << problem.str());
            const auto stats = vkt::check_forward(*context, problem, vkconv::Algorithm::ImplicitGemm, seed += 3);
            CHECK(stats.algorithm == vkconv::Algorithm::ImplicitGemm);
        }
    }
}
