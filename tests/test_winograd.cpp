// Winograd F(m×m, 3×3) (engine/conv/winograd/) against the CPU double reference: forward (bias, epilogue) and
// backward-data on odd 3×3 stride-1 shapes in both layouts, every output value poisoned first and checked against
// the elementwise error bound of winograd.hpp; both tiles (F(2×2) past kMaxRelativeBound); chunks of images and
// bands of tile rows under small binding and workspace limits; exact workspace and pool peak; bit-identical
// reruns; and the refusals (backward-filter, other kernels, strides, dilations).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include "winograd_checks.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/find.hpp"
#include "vkconv/plan.hpp"
#include "vkconv/reference.hpp"

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Layout;
using vkconv::Pass;
namespace detail = vkconv::detail;
using namespace wgt;

TEST_CASE("winograd forward and backward-data match the reference within the bound on odd shapes",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    check_odd_table(*context, {Layout::NCHW, Layout::NHWC}, true);
}

// The odd table once, each problem at one (tile, type, layout, bias) in turn, so that the table covers every
// tile with both 16-bit types and both layouts (16-bit stores in packed words are slow on SwiftShader).
void check_odd_table_16bit(vkconv::Context& context) {
    uint32_t seed = 700;
    size_t turn = 0;
    for (const auto& named : winograd_problems()) {
        ++turn;
        ConvProblem p = named.problem;
        const int m = turn % 2 == 0 ? 4 : 2;
        p.data_type = (turn / 2) % 2 == 0 ? vkconv::DataType::F16 : vkconv::DataType::BF16;
        p.layout = (turn / 4) % 2 == 0 ? Layout::NCHW : Layout::NHWC;
        p.has_bias = (turn / 8) % 2 == 0;
        INFO("F(" << m << "x" << m << ") " << named.name << ": " << p.str());
        check_winograd_forward(context, p, seed += 7, {}, with_tile({}, m));
        check_winograd_backward_data(context, p, seed += 7, with_tile({}, m));
    }
}

TEST_CASE("winograd runs f16 and bf16 tensors within its bound plus the output's rounding", "[winograd][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    check_odd_table_16bit(*context);
    for (vkconv::DataType type : {vkconv::DataType::F16, vkconv::DataType::BF16}) {
        INFO(vkconv::to_string(type));
        // The epilogue, each value rounded once: a residual of its own and in place, with the bias.
        for (const EpilogueCase& e : {EpilogueCase{-2.0f, 1.5f, true, vkconv::Activation::LeakyReLU},
                                      EpilogueCase{0.75f, 1.0f, true, vkconv::Activation::ReLU, true}}) {
            ConvProblem p = vkt::problem().batch(2).channels(6).image(11, 9).filters(7).kernel(3, 3).pads(1, 2, 0, 1).bias();
            p.data_type = type;
            check_winograd_forward(*context, p, 900, e, with_tile({}, 4));
        }
    }
}

TEST_CASE("winograd runs f16 and bf16 tensors on every odd shape, tile, layout and bias", "[winograd][types][gpu][slow]") {
    VKT_REQUIRE_CONTEXT(context);
    for (vkconv::DataType type : {vkconv::DataType::F16, vkconv::DataType::BF16})
        check_odd_table(*context, {Layout::NCHW, Layout::NHWC}, false, type);
}

TEST_CASE("winograd forward and backward-data match the reference on every odd shape, layout and bias",
          "[winograd][gpu][slow]") {
    VKT_REQUIRE_CONTEXT(context);
    check_odd_table(*context, {Layout::NCHW, Layout::NHWC}, false);
}

TEST_CASE("winograd forward applies the epilogue", "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const std::vector<EpilogueCase> epilogues = {
        {0.5f, 0.0f, false, vkconv::Activation::ReLU},
        {1.0f, -0.75f, true, vkconv::Activation::None},
        {-2.0f, 1.5f, true, vkconv::Activation::LeakyReLU},
        {1.0f, 1.0f, true, vkconv::Activation::ReLU6},
        {0.75f, 1.0f, true, vkconv::Activation::ReLU, true},  // y += conv in place, then ReLU
    };
    uint32_t seed = 300;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        for (const auto& e : epilogues) {
          for (int m : {4, 2}) {
            ConvProblem p = vkt::problem().batch(2).channels(6).image(11, 9).filters(7).kernel(3, 3).pads(1, 2, 0, 1)
                                .groups(1).layout(layout).bias();
            INFO("alpha " << e.alpha << " beta " << e.beta << " " << vkconv::to_string(e.activation) << " F" << m);
            check_winograd_forward(*context, p, seed += 5, e, with_tile({}, m));
          }
        }
    }
}

TEST_CASE("winograd takes F(2x2) where F(4x4)'s bound passes its limit or its tiles are few, and both hold their bounds",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // The rule: F(4×4) up to 476 channels per group (round_up(c, 4) + 33 ≤ 512 roundings) and from 32 F(4×4)
    // tiles in the pass on, F(2×2) otherwise.
    CHECK(detail::winograd_tile(476, 32) == 4);
    CHECK(detail::winograd_tile(477, 32) == 2);
    CHECK(detail::winograd_tile(64, 31) == 2);
    CHECK(detail::winograd_alpha(4) == 48.0);
    CHECK(detail::winograd_alpha(2) == 8.0);
    uint32_t seed = 500;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        for (int64_t channels : {476, 480}) {
            // 2 images of 4×4 F(4×4) tiles: 32.
            ConvProblem p = vkt::problem().batch(2).channels(channels).image(16, 13).filters(5).kernel(3, 3).pad(1)
                                .layout(layout).bias();
            INFO(p.str());
            CHECK(detail::winograd_shape(p, Pass::Forward).m == (channels == 476 ? 4 : 2));
            check_winograd_forward(*context, p, seed += 3);
            // Backward-data reduces over the filters: 5 per group, so F(4×4).
            CHECK(detail::winograd_shape(p, Pass::BackwardData).m == 4);
            check_winograd_backward_data(*context, p, seed += 3);
        }
        // Backward-data over 480 filters: F(2×2).
        ConvProblem q = vkt::problem().batch(2).channels(3).image(16, 14).filters(480).kernel(3, 3).pad(1).layout(layout);
        CHECK(detail::winograd_shape(q, Pass::BackwardData).m == 2);
        check_winograd_backward_data(*context, q, seed += 3);
    }
}

TEST_CASE("PassOptions::variant picks Winograd's tile, and F(4x4) past its bound and unknown forms are refused",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    CHECK(vkconv::algorithm_variants(Algorithm::Winograd, Pass::Forward) ==
          std::vector<std::string>{"F(4x4,3x3)", "F(2x2,3x3)"});
    CHECK(vkconv::algorithm_variants(Algorithm::Winograd, Pass::BackwardData).size() == 2);
    CHECK(vkconv::algorithm_variants(Algorithm::Winograd, Pass::BackwardFilter).empty());
    CHECK(vkconv::algorithm_variants(Algorithm::Mec, Pass::Forward) == std::vector<std::string>{"A", "B"});
    CHECK(vkconv::algorithm_variants(Algorithm::Mec, Pass::BackwardData).empty());
    CHECK(vkconv::algorithm_variants(Algorithm::Im2col, Pass::Forward).empty());
    CHECK(vkconv::algorithm_variants(Algorithm::Auto, Pass::Forward).empty());
    // The rule would take F(4x4) here (2 images of 4x4 tiles, 8 channels); F(2x2) asked for runs F(2x2).
    const ConvProblem p = vkt::problem().batch(2).channels(8).image(16, 13).filters(5).kernel(3, 3).pad(1).bias();
    REQUIRE(detail::winograd_shape(p, Pass::Forward).m == 4);
    CHECK(check_winograd_forward(*context, p, 551, {}, with_tile({}, 2)).first.variant == "F(2x2,3x3)");
    CHECK(check_winograd_backward_data(*context, p, 553, with_tile({}, 2)).first.variant == "F(2x2,3x3)");
    // Auto with Winograd's form: the algorithm that has it takes it, the others ignore it.
    {
        vkconv::Tensor x = vkconv::Tensor::from_host(*context, p.input_shape(), vkt::random_values(p.input_elements(), 1));
        vkconv::Tensor w = vkconv::Tensor::from_host(*context, p.filter_shape(), vkt::random_values(p.filter_elements(), 2));
        vkconv::Tensor b = vkconv::Tensor::from_host(*context, p.bias_shape(), vkt::random_values(p.K, 3));
        vkconv::Tensor y(*context, p.output_shape());
        vkconv::PassOptions options = with_tile({}, 2);
        options.auto_choice = vkconv::AutoChoice::Heuristic;  // 8 channels: not Winograd's rule
        const auto stats = vkconv::forward(*context, p, x, w, &b, y, Algorithm::Auto, options);
        CHECK(stats.algorithm != Algorithm::Winograd);
        CHECK(stats.variant != "F(2x2,3x3)");
    }
    // F(4x4) past kMaxRelativeBound (480 channels): refused, naming the bound; F(2x2) runs it.
    const ConvProblem wide = vkt::problem().batch(1).channels(480).image(8, 8).filters(4).kernel(3, 3).pad(1);
    require_error(vkconv::ErrorCategory::Unsupported, {"F(4x4,3x3)", "480 channels per group", "error bound"}, [&] {
        vkconv::forward_workspace_bytes(*context, wide, Algorithm::Winograd, with_tile({}, 4));
    });
    CHECK(vkconv::forward_workspace_bytes(*context, wide, Algorithm::Winograd, with_tile({}, 2)) > 0);
    // Forms the algorithm (with Auto, every algorithm) lacks in all its passes: InvalidArgument, naming them.
    const auto workspace = [&](Algorithm algorithm, Pass pass, const std::string& variant) {
        const vkconv::PassOptions options{.variant = variant};
        if (pass == Pass::Forward) return vkconv::forward_workspace_bytes(*context, p, algorithm, options);
        if (pass == Pass::BackwardData) return vkconv::backward_data_workspace_bytes(*context, p, algorithm, options);
        return vkconv::backward_filter_workspace_bytes(*context, p, algorithm, options);
    };
    const auto bad = [&](Algorithm algorithm, Pass pass, const std::string& variant,
                         const std::vector<std::string>& words) {
        INFO(vkconv::to_string(algorithm) << " " << vkconv::to_string(pass) << " '" << variant << "'");
        require_error(vkconv::ErrorCategory::InvalidArgument, words, [&] { workspace(algorithm, pass, variant); });
    };
    bad(Algorithm::Winograd, Pass::Forward, "F(6x6,3x3)", {"'F(6x6,3x3)'", "form of winograd", "F(4x4,3x3) (winograd)"});
    bad(Algorithm::Winograd, Pass::Forward, "A", {"'A'", "F(2x2,3x3) (winograd)"});
    bad(Algorithm::Im2col, Pass::Forward, "B", {"'B'", "form of im2col", "it has none"});
    bad(Algorithm::Auto, Pass::Forward, "f(2x2,3x3)", {"any algorithm", "A (mec), B (mec)", "F(2x2,3x3) (winograd)"});
    bad(Algorithm::Auto, Pass::BackwardFilter, "C", {"any algorithm", "A (mec)"});
    // A form of the algorithm in another pass runs without it here (one options value serves a training step).
    CHECK(workspace(Algorithm::Mec, Pass::BackwardData, "A") ==
          vkconv::backward_data_workspace_bytes(*context, p, Algorithm::Mec));
    CHECK(workspace(Algorithm::Auto, Pass::BackwardFilter, "F(2x2,3x3)") ==
          vkconv::backward_filter_workspace_bytes(*context, p, Algorithm::Auto));
    // Applicability comes first: Winograd's form on a 5x5 kernel is Winograd's refusal, Unsupported.
    ConvProblem five = p;
    five.R = five.S = 5, five.pad_h = five.pad_w = 2;
    require_error(vkconv::ErrorCategory::Unsupported, {"3x3 kernel"}, [&] {
        vkconv::forward_workspace_bytes(*context, five, Algorithm::Winograd, with_tile({}, 2));
    });
}

TEST_CASE("winograd runs in chunks of images and bands of tile rows, with exact workspace and peak",
          "[winograd][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    const ConvProblem base =
        vkt::problem().batch(3).channels(5).image(23, 18).filters(6).kernel(3, 3).pads(1, 0, 2, 1).bias();
    uint32_t seed = 700;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        ConvProblem p = base;
        p.layout = layout;
        const uint64_t align = context->pool_stats().alignment;
        // One image's input is 23·18·5·4 = 8,280 bytes: 12 KiB bindings hold one image but not its V (6×5 tiles of
        // 36·8 floats = 34,560 bytes), so every image runs in bands of tile rows.
        const std::vector<vkconv::PassOptions> limits = {
            {},
            {.max_binding_bytes = 40000},  // one image a chunk
            {.max_binding_bytes = 12 * 1024},  // bands of tile rows
            {.workspace_limit = 40 * 1024},    // bands under the workspace limit alone
        };
        for (const auto& options : limits) {
            INFO(vkconv::to_string(layout) << " max_binding_bytes " << options.max_binding_bytes << " workspace_limit "
                                           << options.workspace_limit);
            const uint64_t live = context->pool_stats().in_use;
            const auto forward = check_winograd_forward(*context, p, seed += 3, {}, options);
            const auto data = check_winograd_backward_data(*context, p, seed += 3, options);
            if (options.max_binding_bytes || options.workspace_limit) {
                CHECK(forward.first.chunks > 1);
                CHECK(data.first.chunks > 1);
            } else {
                CHECK(forward.first.chunks == 1);
            }
            if (options.max_binding_bytes == 12 * 1024) CHECK(forward.first.chunks > uint32_t(p.N));
            if (options.workspace_limit) CHECK(forward.first.workspace_bytes <= options.workspace_limit);
            // The workspace written from the sizes: V then M (M on the pool alignment) and U, each rounded.
            for (Pass pass : {Pass::Forward, Pass::BackwardData}) {
                const auto s = detail::winograd_shape(p, pass);
                const auto& stats = pass == Pass::Forward ? forward.first : data.first;
                // Tiles per chunk: all of an image's rows times the images, or one band.
                bool matched = false;
                for (int64_t images = 1; images <= p.N; ++images)
                    for (int64_t rows = 1; rows <= s.tiles_h; ++rows) {
                        if (images > 1 && rows != s.tiles_h) continue;
                        const int64_t tiles = images * rows * s.tiles_w;
                        const uint64_t v = (s.v_floats(tiles) * 4 + align - 1) / align * align;
                        const uint64_t bytes = context->pool_stats().rounded(v + s.m_floats(tiles) * 4) +
                                               context->pool_stats().rounded(s.u_floats() * 4);
                        const uint32_t chunks = uint32_t(images == 1 && rows < s.tiles_h
                                                             ? p.N * ((s.tiles_h + rows - 1) / rows)
                                                             : (p.N + images - 1) / images);
                        matched = matched || (bytes == stats.workspace_bytes && chunks == stats.chunks);
                    }
                CHECK(matched);
                CHECK(stats.workspace_bytes > 0);
            }
            CHECK(context->pool_stats().in_use == live);  // the workspace went back
        }
    }
}

TEST_CASE("a winograd pass's peak is its operands plus the queried workspace", "[winograd][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    ConvProblem p = vkt::problem().batch(2).channels(7).image(13, 11).filters(5).kernel(3, 3).pad(1).bias();
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        p.layout = layout;
        vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), b(*context, p.bias_shape());
        vkconv::Tensor y(*context, p.output_shape()), dx(*context, p.input_shape());
        INFO(vkconv::to_string(layout));
        const uint64_t in_use = context->pool_stats().in_use;
        const uint64_t fw = vkconv::forward_workspace_bytes(*context, p, Algorithm::Winograd);
        const auto forward = vkconv::forward(*context, p, x, w, &b, y, Algorithm::Winograd);
        CHECK(forward.workspace_bytes == fw);
        CHECK(forward.peak_bytes == in_use + fw);
        const uint64_t dw = vkconv::backward_data_workspace_bytes(*context, p, Algorithm::Winograd);
        const auto data = vkconv::backward_data(*context, p, y, w, dx, Algorithm::Winograd);
        CHECK(data.workspace_bytes == dw);
        CHECK(data.peak_bytes == in_use + dw);
        CHECK(context->pool_stats().in_use == in_use);
    }
}

TEST_CASE("winograd reruns are bit-identical", "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        ConvProblem p = vkt::problem().batch(2).channels(10).image(9, 14).filters(6).kernel(3, 3).pad(1).groups(2)
                            .layout(layout).bias();
        INFO(p.str());
        const vkconv::PassOptions chunked{.max_binding_bytes = 16 * 1024};
        for (const auto& options : {vkconv::PassOptions{}, chunked}) {
          for (int m : {4, 2}) {
            const vkconv::PassOptions tiled = with_tile(options, m);
            const auto first = check_winograd_forward(*context, p, 900, {}, tiled);
            const auto again = check_winograd_forward(*context, p, 900, {}, tiled);
            CHECK(std::memcmp(first.second.data(), again.second.data(), first.second.size() * 4) == 0);
            const auto data = check_winograd_backward_data(*context, p, 901, tiled);
            const auto data_again = check_winograd_backward_data(*context, p, 901, tiled);
            CHECK(std::memcmp(data.second.data(), data_again.second.data(), data.second.size() * 4) == 0);
          }
        }
    }
}

TEST_CASE("winograd refuses backward-filter and problems that are not 3x3, stride 1, dilation 1",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const ConvProblem ok = vkt::problem().batch(1).channels(4).image(8, 8).filters(4).kernel(3, 3).pad(1);
    auto refused = [&](const ConvProblem& p, Pass pass, const std::string& why) {
        INFO(vkconv::to_string(pass) << " " << p.str());
        vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), y(*context, p.output_shape());
        try {
            if (pass == Pass::Forward) vkconv::forward(*context, p, x, w, nullptr, y, Algorithm::Winograd);
            else if (pass == Pass::BackwardData) vkconv::backward_data(*context, p, y, w, x, Algorithm::Winograd);
            else vkconv::backward_filter(*context, p, x, y, w, nullptr, Algorithm::Winograd);
            FAIL("not refused");
        } catch (const vkconv::Error& e) {
            CHECK(e.category() == vkconv::ErrorCategory::Unsupported);
            CHECK_THAT(e.what(), Catch::Contains(why));
        }
    };
    refused(ok, Pass::BackwardFilter, "winograd does not run backward-filter");
    CHECK_THROWS_AS(vkconv::backward_filter_workspace_bytes(*context, ok, Algorithm::Winograd), vkconv::Error);
    ConvProblem k5 = ok, stride = ok, dilated = ok, k3x1 = ok;
    k5.R = k5.S = 5, k5.pad_h = k5.pad_w = 2;
    stride.stride_h = 2;
    dilated.dilation_w = 2;
    k3x1.S = 1, k3x1.pad_w = 0;
    for (Pass pass : {Pass::Forward, Pass::BackwardData}) {
        // The table's refusal says what Winograd needs.
        for (const ConvProblem& p : {k5, k3x1, stride, dilated}) {
            refused(p, pass, "a 3x3 kernel, stride 1 and dilation 1");
            CHECK_FALSE(vkconv::algorithm_applies(Algorithm::Winograd, p, pass));
        }
    }
    CHECK(vkconv::algorithm_applies(Algorithm::Winograd, ok, Pass::Forward));
    CHECK(vkconv::algorithm_applies(Algorithm::Winograd, ok, Pass::BackwardData));
    CHECK_FALSE(vkconv::algorithm_applies(Algorithm::Winograd, ok, Pass::BackwardFilter));
    CHECK(vkconv::parse_algorithm("Winograd") == Algorithm::Winograd);
    CHECK(std::string(vkconv::to_string(Algorithm::Winograd)) == "winograd");
}

TEST_CASE("winograd's observed errors against its bound (summary)", "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // Runs after the cases above in one process: prints the worst ratios they saw.
    for (const Observed& o : observed)
        if (o.m)
            std::printf("winograd F(%dx%d, 3x3): worst |error| / bound %.3g, worst |error| / max|reference| %.3g\n",
                        o.m, o.m, o.ratio, o.relative);
    for (int m : {2, 4})
        std::printf("winograd F(%dx%d, 3x3): alpha %.0f, relative normwise bound at 64 / 256 / 512 channels: %.3g "
                    "/ %.3g / %.3g\n",
                    m, m, detail::winograd_alpha(m), detail::winograd_relative_bound(m, 64),
                    detail::winograd_relative_bound(m, 256), detail::winograd_relative_bound(m, 512));
}

TEST_CASE("find measures winograd where it applies and the heuristic takes it on CPU devices where it pays",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // 16 channels and filters, 90 F(2×2) tiles: the heuristic's rule holds.
    const ConvProblem p = vkt::problem().batch(1).channels(16).image(20, 18).filters(16).kernel(3, 3).pad(1);
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
        INFO(vkconv::to_string(pass));
        const auto results = vkconv::find_algorithms(*context, pass, p);
        const auto it = std::find_if(results.begin(), results.end(),
                                     [](const vkconv::AlgorithmPerf& r) { return r.algorithm == Algorithm::Winograd; });
        if (pass == Pass::BackwardFilter) {
            CHECK(it == results.end());
        } else {
            REQUIRE(it != results.end());
            CHECK(it->verified);
            CHECK(it->deterministic);
        }
    }
    vkt::TempDir dir("vkconv winograd profile");
    const auto profile = [&](const std::string& type) {
        const auto path = dir.path / (type + ".json");
        vkt::write_bytes(path, R"({"capabilities": {"device": {"properties": {"VkPhysicalDeviceProperties": {)"
                               R"("deviceName": "Test", "deviceType": "VK_PHYSICAL_DEVICE_TYPE_)" + type +
                                   R"(", "limits": {"maxComputeSharedMemorySize": 32768}}}}}})");
        return vkconv::DeviceProfile::load(path.string());
    };
    const auto cpu = profile("CPU"), gpu = profile("DISCRETE_GPU");
    for (Pass pass : {Pass::Forward, Pass::BackwardData}) {
        INFO(vkconv::to_string(pass));
        CHECK(vkconv::plan_pass(cpu, p, pass, Algorithm::Auto).algorithm == Algorithm::Winograd);
        CHECK(vkconv::plan_pass(gpu, p, pass, Algorithm::Auto).algorithm != Algorithm::Winograd);
        ConvProblem few = p;  // 3 channels: the transforms, not the GEMM, would dominate
        few.C = 3;
        CHECK(vkconv::plan_pass(cpu, few, pass, Algorithm::Auto).algorithm != Algorithm::Winograd);
        ConvProblem small = p;  // 3×3 outputs: 4 F(2×2) tiles, below the rule's 16
        small.H = small.W = 3;
        CHECK(vkconv::plan_pass(cpu, small, pass, Algorithm::Auto).algorithm != Algorithm::Winograd);
    }
    CHECK(vkconv::plan_pass(cpu, p, Pass::BackwardFilter, Algorithm::Auto).algorithm != Algorithm::Winograd);
}

TEST_CASE("winograd runs the tiles of tensors too large to bind", "[winograd][gpu]") {
    // 6144 bytes: one image of the problems below is larger, a tile row fits
    auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 6144});
    if (!context) return;
    uint32_t seed = 1100;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        for (const ConvProblem& base :
             {vkt::problem().batch(2).channels(5).image(23, 17).filters(6).kernel(3, 3).pad(1).bias().build(),
              vkt::problem().batch(1).channels(8).image(13, 19).filters(4).kernel(3, 3).pads(2, 0, 1, 1).groups(2)
                  .build()}) {
            ConvProblem p = base;
            p.layout = layout;
            INFO(p.str());
            // One image exceeds the binding limit, so Winograd (which binds whole images or tile rows) runs only
            // in tiles: without them the pass is refused. A tile is a problem of its own with its own tile grid:
            // the normwise bound, valid for any grid.
            check_winograd_forward(*context, p, seed += 3, {}, {}, true);
            check_winograd_backward_data(*context, p, seed += 3, {}, true);
        }
    }
}

TEST_CASE("a layer step under auto runs winograd's backward-data beside another algorithm's backward-filter",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    if (context->device().type != "CPU") {
        vkt::skip_case("the heuristic takes winograd on CPU devices only");
        return;
    }
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        const ConvProblem p =
            vkt::problem().batch(1).channels(16).image(20, 18).filters(16).kernel(3, 3).pad(1).layout(layout).bias();
        INFO(p.str());
        const auto x = vkt::random_values(size_t(p.input_elements()), 1201);
        const auto w = vkt::random_values(size_t(p.filter_elements()), 1202);
        const auto dy = vkt::random_values(size_t(p.output_elements()), 1203);
        auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
        auto tw = vkconv::Tensor::from_host(*context, p.filter_shape(), w);
        auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
        auto tdx = vkconv::Tensor::from_host(*context, p.input_shape(), vkt::poison(p.input_elements()));
        auto tdw = vkconv::Tensor::from_host(*context, p.filter_shape(), vkt::poison(p.filter_elements()));
        auto tdb = vkconv::Tensor::from_host(*context, p.bias_shape(), vkt::poison(p.K));
        const auto stats = vkconv::layer_backward(*context, p, tx, tw, tdy, tdx, tdw, &tdb, Algorithm::Auto);
        CHECK(stats.data_algorithm == Algorithm::Winograd);
        CHECK(stats.filter_algorithm != Algorithm::Winograd);
        CHECK(stats.step.workspace_bytes == vkconv::layer_backward_workspace_bytes(*context, p, Algorithm::Auto));
        const std::vector<double> none(size_t(p.input_elements()), 0.0);
        check_bound(tdx.download(), vkconv::reference::backward_data(p, dy, w),
                    winograd_bound(p, Pass::BackwardData, dy, w), none, detail::winograd_shape(p, Pass::BackwardData).m,
                    "layer step dx");
        vkt::check_close(tdw.download(), vkconv::reference::backward_filter(p, x, dy),
                         vkconv::reference::backward_filter(p, vkt::absolute(x), vkt::absolute(dy)),
                         p.N * p.P() * p.Q(), "layer step dw");
    }
}

