// Passes on 16-bit tensors whose sums run in pieces or chunks (sixteen_bit_checks.hpp): every output value is
// rounded once, from fp32 sums in the pass's workspace (an fp32 copy of dw, of a chunk of images' output, of
// the whole output), whatever the pieces, within the stated bound.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gpu.hpp"
#include "sixteen_bit_checks.hpp"
#include "vkconv/reference.hpp"

using namespace sixteen;

TEST_CASE("a 16-bit dw summed over chunks or reduction pieces adds up in fp32 and is rounded once",
          "[types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const auto pool = context->pool_stats();
    uint32_t seed = 1500;
    for (DataType type : {DataType::F16, DataType::BF16}) {
        // im2col backward-filter in chunks (not even two images' col fits a binding): dw adds up chunk by chunk.
        ConvProblem chunked = vkt::problem().batch(3).channels(4).image(11, 9).filters(5).kernel(3, 3).pad(1);
        chunked.data_type = type;
        vkconv::PassOptions one_image;
        one_image.max_binding_bytes = uint64_t(chunked.P() * chunked.Q() * chunked.R * chunked.S * chunked.C) * 2 * 3 / 2;
        auto [x, xv] = upload(*context, chunked.input_shape(), vkt::random_values(size_t(chunked.input_elements()), ++seed), type);
        auto [dy, dyv] = upload(*context, chunked.output_shape(), vkt::random_values(size_t(chunked.output_elements()), ++seed), type);
        Tensor dw = Tensor::from_host(*context, chunked.filter_shape(), vkt::poison(chunked.filter_elements()), type);
        const auto stats = vkconv::backward_filter(*context, chunked, x, dy, dw, nullptr, Algorithm::Im2col, one_image);
        CHECK(stats.chunks > 1);  // (the chunks its fp32 twin would run: bands of rows here)
        CHECK(stats.workspace_bytes ==
              vkconv::backward_filter_workspace_bytes(*context, chunked, Algorithm::Im2col, one_image));
        check_16bit(dw.download(), vkconv::reference::backward_filter(chunked, xv, dyv),
                    vkconv::reference::backward_filter(chunked, vkt::absolute(xv), vkt::absolute(dyv)),
                    chunked.N * chunked.P() * chunked.Q(), type, "im2col backward-filter in chunks");
        // implicit-gemm over 90,000 positions, past one dispatch's loop cap, with no room for partial products:
        // pieces in order, adding into dw's fp32 copy.
        ConvProblem long_sum = vkt::problem().batch(1).channels(2).image(300, 300).filters(2).kernel(3, 3).pad(1);
        long_sum.data_type = type;
        vkconv::PassOptions no_partials;
        no_partials.workspace_limit = pool.rounded(uint64_t(long_sum.filter_elements()) * 4);
        Tensor lx(*context, long_sum.input_shape(), type), ldy(*context, long_sum.output_shape(), type);
        Tensor ldw(*context, long_sum.filter_shape(), type);
        const auto long_stats =
            vkconv::backward_filter(*context, long_sum, lx, ldy, ldw, nullptr, Algorithm::ImplicitGemm, no_partials);
        CHECK(long_stats.partial_products == 0);
        CHECK(long_stats.workspace_bytes == no_partials.workspace_limit);
        // The layer step shares one workspace between its passes: backward-data must not take the fp32 dw
        // copy for its own output, nor round it into the filter it reads.
        {
            auto [w, wv] = upload(*context, long_sum.filter_shape(), vkt::random_values(size_t(long_sum.filter_elements()), ++seed), type);
            auto [g, gv] = upload(*context, long_sum.output_shape(), vkt::random_values(size_t(long_sum.output_elements()), ++seed), type);
            auto [x, xv] = upload(*context, long_sum.input_shape(), vkt::random_values(size_t(long_sum.input_elements()), ++seed), type);
            Tensor dx = Tensor::from_host(*context, long_sum.input_shape(), vkt::poison(long_sum.input_elements()), type);
            Tensor dw = Tensor::from_host(*context, long_sum.filter_shape(), vkt::poison(long_sum.filter_elements()), type);
            vkconv::layer_backward(*context, long_sum, x, w, g, dx, dw, nullptr, Algorithm::ImplicitGemm, no_partials);
            CHECK(w.download() == wv);
            check_16bit(dx.download(), vkconv::reference::backward_data(long_sum, gv, wv),
                        vkconv::reference::backward_data(long_sum, vkt::absolute(gv), vkt::absolute(wv)),
                        long_sum.filters_per_group() * long_sum.R * long_sum.S, type, "layer step dx");
            check_16bit(dw.download(), vkconv::reference::backward_filter(long_sum, xv, gv),
                        vkconv::reference::backward_filter(long_sum, vkt::absolute(xv), vkt::absolute(gv)),
                        long_sum.N * long_sum.P() * long_sum.Q(), type, "layer step dw");
        }
        check_passes(*context, long_sum, Algorithm::ImplicitGemm, seed += 10, no_partials);
        // ... with room for 4 filters' fp32 copy: chunks of 4 filters (the last of 2), each rounded into its
        // filters of dw after its last piece; the register kernel (on CPU devices) and, with 6 storage buffers
        // a stage, the shared-memory one, both layouts.
        vkt::TempDir dir("vkconv-16bit-filter-rows");
        vkconv::ContextOptions six = vkt::test_options();
        six.device_limits = vkt::profile_with_limits(dir, {.storage_buffers = 6});
        for (const vkconv::ContextOptions& options : {vkt::test_options(), six}) {
            auto limited = vkt::fresh_context(options);
            if (!limited) return;
            ConvProblem rows = vkt::problem().batch(1).channels(3).image(150, 120).filters(10).kernel(3, 3).pad(1);
            rows.data_type = type;
            rows.layout = options.device_limits.empty() ? Layout::NCHW : Layout::NHWC;
            INFO("imposed limits: " << limited->device().imposed_limits << "; " << rows.str());
            const vkconv::PassOptions four_filters{.workspace_limit = limited->pool_stats().rounded(4 * 27 * 4)};
            Tensor rx(*limited, rows.input_shape(), type), rdy(*limited, rows.output_shape(), type);
            Tensor rdw(*limited, rows.filter_shape(), type);
            const auto row_stats =
                vkconv::backward_filter(*limited, rows, rx, rdy, rdw, nullptr, Algorithm::ImplicitGemm, four_filters);
            CHECK(row_stats.partial_products == 0);
            CHECK(row_stats.chunks == 3);
            CHECK(row_stats.workspace_bytes == four_filters.workspace_limit);
            check_passes(*limited, rows, Algorithm::ImplicitGemm, seed += 10, four_filters);
        }
        // direct's pieces of 16,384 positions, each adding into dw's fp32 copy (the pass's one filter of
        // workspace): every pass, the layer step's shared workspace included.
        CHECK(vkconv::backward_filter_workspace_bytes(*context, long_sum, Algorithm::Direct) ==
              pool.rounded(uint64_t(long_sum.filter_elements()) * 4));
        check_passes(*context, long_sum, Algorithm::Direct, seed += 10);
    }
}

// implicit-gemm's forward and backward-data whose reduction runs in pieces past one dispatch's loop cap: a
// 16-bit output adds up in an fp32 copy of a chunk of images, rounded once after the chunk's last piece; the
// chunks fit the workspace limit (the last one shorter), and the fused epilogue, its residual included, is
// applied before that one rounding.
TEST_CASE("16-bit forward and backward-data in reduction pieces add up in fp32 chunks of images, rounded once",
          "[types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const auto pool = context->pool_stats();
    uint32_t seed = 1600;
    size_t turn = 0;
    // Forward over 2,700 taps (300 channels, 3x3); backward-data over 11,700 (1,300 filters).
    const ConvProblem deep = vkt::problem().batch(5).channels(300).image(6, 5).filters(3).kernel(3, 3).pad(1);
    const ConvProblem wide = vkt::problem().batch(5).channels(3).image(5, 6).filters(1300).kernel(3, 3).pad(1);
    for (const auto& [base, pass] : {std::pair{deep, Pass::Forward}, {wide, Pass::BackwardData}})
        for (DataType type : {DataType::F16, DataType::BF16}) {
            ConvProblem p = in_turn(base, turn++);
            p.data_type = type;
            p.has_bias = pass == Pass::Forward;  // (1,300 filters' bias gradient would need more than the limit)
            // Two images of output a chunk: chunks of 2, 2 and 1.
            const uint64_t image = pass == Pass::Forward ? uint64_t(p.K * p.P() * p.Q()) : uint64_t(p.C * p.H * p.W);
            const vkconv::PassOptions two_images{.workspace_limit = pool.rounded(2 * image * 4)};
            INFO(vkconv::to_string(pass) << " " << p.str());
            const uint64_t bytes = pass == Pass::Forward
                                       ? vkconv::forward_workspace_bytes(*context, p, Algorithm::ImplicitGemm, two_images)
                                       : vkconv::backward_data_workspace_bytes(*context, p, Algorithm::ImplicitGemm,
                                                                               two_images);
            CHECK(bytes == two_images.workspace_limit);
            Tensor dy(*context, p.output_shape(), type), w(*context, p.filter_shape(), type);
            Tensor dx(*context, p.input_shape(), type), x(*context, p.input_shape(), type);
            Tensor y(*context, p.output_shape(), type), b(*context, p.bias_shape(), type);
            const auto stats = pass == Pass::Forward
                                   ? vkconv::forward(*context, p, x, w, &b, y, Algorithm::ImplicitGemm, two_images)
                                   : vkconv::backward_data(*context, p, dy, w, dx, Algorithm::ImplicitGemm, two_images);
            CHECK(stats.chunks == 3);
            check_passes(*context, p, Algorithm::ImplicitGemm, seed += 10, two_images);
        }
    // The epilogue, with a residual of its own and in place: applied to each chunk's fp32 sums before they are
    // rounded. The device's own kernel (on a CPU device the register kernel); with 6 storage buffers a stage the
    // shared-memory one; with 4 its build that reads the residual from its output, the fp32 copy here.
    vkt::TempDir dir("vkconv-16bit-pieces");
    vkconv::ContextOptions six = vkt::test_options(), minimum = vkt::test_options();
    six.device_limits = vkt::profile_with_limits(dir, {.storage_buffers = 6});
    minimum.device_limits = "vulkan-minimum";
    for (const vkconv::ContextOptions& options : {vkt::test_options(), six, minimum}) {
        auto limited = vkt::fresh_context(options);
        if (!limited) return;
        INFO("imposed limits: " << limited->device().imposed_limits);
        for (DataType type : {DataType::F16, DataType::BF16})
            for (bool in_place : {false, true}) {
                // (11,700 taps: in pieces for the shared-memory kernel, which 4 storage buffers a stage run, too.)
                ConvProblem p = vkt::problem().batch(5).channels(1300).image(6, 5).filters(3).kernel(3, 3).pad(1);
                p.data_type = type, p.has_bias = true, p.layout = in_place ? Layout::NHWC : Layout::NCHW;
                const vkconv::PassOptions one_image{
                    .workspace_limit = limited->pool_stats().rounded(uint64_t(p.K * p.P() * p.Q()) * 4)};
                CHECK(check_epilogue(*limited, p, Algorithm::ImplicitGemm, in_place, seed += 4, one_image).chunks ==
                      uint32_t(p.N));
            }
        // Backward-data's kernel there reads dy from the chunk's first image on.
        ConvProblem p = wide;
        p.data_type = DataType::BF16;
        const uint64_t image = uint64_t(p.C * p.H * p.W) * 4;
        check_passes(*limited, p, Algorithm::ImplicitGemm, seed += 10,
                     {.workspace_limit = limited->pool_stats().rounded(2 * image)});
    }
}

// im2col's and MEC's forward GEMM over 16,650 taps runs in pieces: a 16-bit y adds up in an fp32 copy of a chunk's
// images (a band's image), the epilogue applied there, rounded once. 512 KiB bindings: bands (im2col 1 row, MEC 3).
TEST_CASE("16-bit im2col and MEC forward in reduction pieces add up in an fp32 copy, rounded once", "[types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 1900;
    for (DataType type : {DataType::F16, DataType::BF16})
        for (const vkconv::PassOptions& options : {vkconv::PassOptions{}, {.max_binding_bytes = 1 << 19}})
            for (Algorithm a : {Algorithm::Im2col, Algorithm::Mec}) {
                ConvProblem p = vkt::problem().batch(3).channels(1850).image(5, 4).filters(3).kernel(3, 3).pad(1).bias();
                p.data_type = type, p.layout = type == DataType::F16 ? Layout::NCHW : Layout::NHWC;
                INFO(vkconv::to_string(a) << " " << p.str() << ", max_binding_bytes " << options.max_binding_bytes);
                check_passes(*context, p, a, seed += 10, options);
                const auto stats = check_epilogue(*context, p, a, type == DataType::BF16, seed += 4, options);
                CHECK(stats.chunks == (!options.max_binding_bytes ? 1u : a == Algorithm::Im2col ? 15u : 6u));
            }
    // Under a workspace limit below the whole pass's (3 images a chunk), smaller chunks whose lowering and copy
    // fit it together.
    for (Algorithm a : {Algorithm::Im2col, Algorithm::Mec}) {
        ConvProblem p = vkt::problem().batch(3).channels(1850).image(5, 4).filters(3).kernel(3, 3).pad(1).bias();
        p.data_type = DataType::F16;
        const vkconv::PassOptions tight{.workspace_limit = vkconv::forward_workspace_bytes(*context, p, a) - 1};
        INFO(vkconv::to_string(a) << " " << p.str() << ", workspace limit " << tight.workspace_limit);
        CHECK(vkconv::forward_workspace_bytes(*context, p, a, tight) <= tight.workspace_limit);
        CHECK(check_epilogue(*context, p, a, false, seed += 4, tight).chunks > 1);
    }
}

// direct's forward over 16,650 taps and backward-data over 16,650 (filter, tap) pairs run in pieces: a 16-bit
// output adds up in an fp32 copy of the whole output (direct binds whole tensors), the epilogue applied there,
// rounded into it once; under vulkan-minimum (4 storage buffers a stage) the residual is widened into the copy.
TEST_CASE("16-bit direct forward and backward-data in reduction pieces add up in an fp32 copy, rounded once",
          "[types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 2000;
    const ConvProblem deep = vkt::problem().batch(2).channels(1850).image(5, 4).filters(3).kernel(3, 3).pad(1).bias();
    const ConvProblem wide = vkt::problem().batch(2).channels(3).image(5, 4).filters(1850).kernel(3, 3).pad(1).bias();
    for (DataType type : {DataType::F16, DataType::BF16})
        for (const ConvProblem& base : {deep, wide}) {
            ConvProblem p = base;
            p.data_type = type, p.layout = type == DataType::F16 ? Layout::NCHW : Layout::NHWC;
            INFO(p.str());
            CHECK(vkconv::forward_workspace_bytes(*context, p, Algorithm::Direct) ==
                  (base.C == deep.C ? context->pool_stats().rounded(uint64_t(p.output_elements()) * 4) : 0));
            check_passes(*context, p, Algorithm::Direct, seed += 10);
            if (base.C == deep.C) check_epilogue(*context, p, Algorithm::Direct, type == DataType::BF16, seed += 4);
        }
    vkconv::ContextOptions minimum = vkt::test_options();
    minimum.device_limits = "vulkan-minimum";
    auto limited = vkt::fresh_context(minimum);
    if (!limited) return;
    for (bool in_place : {false, true}) {
        ConvProblem p = deep;
        p.data_type = in_place ? DataType::BF16 : DataType::F16;
        INFO("vulkan-minimum " << p.str() << (in_place ? " in place" : ""));
        check_epilogue(*limited, p, Algorithm::Direct, in_place, seed += 4);
    }
}

// With 0/1 inputs and a filter of ones every partial sum is an integer fp32 holds exactly, so a value rounded
// once is the exact sum rounded to the type, bit for bit. A piece rounded to 16 bits on the way (a sum past
// 2,048 in fp16, 256 in bf16, rounded to its spacing, then added to) would differ; the bound cannot tell.
TEST_CASE("16-bit outputs whose reductions run in pieces are the exact sums rounded once, bit for bit",
          "[types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    auto zeros_and_ones = [](int64_t count, uint32_t seed) {
        std::vector<float> values = vkt::random_values(size_t(count), seed);
        for (float& v : values) v = v > 0 ? 1.0f : 0.0f;
        return values;
    };
    auto rounded_once = [&](const std::vector<double>& exact, const vkconv::Shape& shape, DataType type) {
        return Tensor::from_host(*context, shape, std::vector<float>(exact.begin(), exact.end()), type).download();
    };
    // 16,650 taps a forward value (1,850 channels, 3x3); 16,650 (filter, tap) pairs a backward-data one.
    const ConvProblem deep = vkt::problem().batch(2).channels(1850).image(5, 4).filters(3).kernel(3, 3).pad(1);
    const ConvProblem wide = vkt::problem().batch(2).channels(3).image(5, 4).filters(1850).kernel(3, 3).pad(1);
    uint32_t seed = 2100;
    for (DataType type : {DataType::F16, DataType::BF16})
        for (const vkconv::PassOptions& options : {vkconv::PassOptions{}, {.max_binding_bytes = 1 << 19}})
            for (Algorithm a : {Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec, Algorithm::ImplicitGemm}) {
                ConvProblem p = deep, q = wide;
                p.data_type = q.data_type = type;
                p.layout = q.layout = (seed / 10) % 2 ? Layout::NHWC : Layout::NCHW;
                INFO(vkconv::to_string(a) << " " << p.str() << ", max_binding_bytes " << options.max_binding_bytes);
                const auto x = zeros_and_ones(p.input_elements(), seed += 10);
                const std::vector<float> w(size_t(p.filter_elements()), 1.0f);
                Tensor tx = Tensor::from_host(*context, p.input_shape(), x, type);
                Tensor tw = Tensor::from_host(*context, p.filter_shape(), w, type);
                Tensor ty = Tensor::from_host(*context, p.output_shape(), vkt::poison(p.output_elements()), type);
                vkconv::forward(*context, p, tx, tw, nullptr, ty, a, options);
                CHECK(ty.download() == rounded_once(vkconv::reference::forward(p, x, w, {}), p.output_shape(), type));
                if (a == Algorithm::Im2col || a == Algorithm::Mec) continue;  // (their dcol sums are short)
                const auto dy = zeros_and_ones(q.output_elements(), seed + 1);
                const std::vector<float> wq(size_t(q.filter_elements()), 1.0f);
                Tensor tdy = Tensor::from_host(*context, q.output_shape(), dy, type);
                Tensor twq = Tensor::from_host(*context, q.filter_shape(), wq, type);
                Tensor tdx = Tensor::from_host(*context, q.input_shape(), vkt::poison(q.input_elements()), type);
                vkconv::backward_data(*context, q, tdy, twq, tdx, a, options);
                CHECK(tdx.download() == rounded_once(vkconv::reference::backward_data(q, dy, wq), q.input_shape(), type));
            }
}

// Backward-data in tiles whose pieces split one group's filters (filters beyond an 8 KiB binding): each dx
// value adds up over the pieces in fp32 and is rounded once. With 0/1 dy and a filter of ones the sums are
// integers past 2,048 (fp16's spacing of 2) and 256 (bf16's): a piece rounded on the way would differ.
TEST_CASE("16-bit backward-data over pieces of one group's filters is the exact sum rounded once, bit for bit",
          "[types][tiled][gpu]") {
    auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 8192});
    if (!context) return;  // (no device: as VKT_REQUIRE_CONTEXT)
    uint32_t seed = 2300;
    for (DataType type : {DataType::F16, DataType::BF16})
        for (Algorithm a : {Algorithm::Direct, Algorithm::Im2col}) {
            ConvProblem p = vkt::problem().batch(2).channels(4).image(6, 5).filters(600).kernel(3, 3).pad(1);
            p.data_type = type;
            p.layout = seed % 20 ? Layout::NHWC : Layout::NCHW;
            INFO(vkconv::to_string(a) << " " << p.str());
            std::vector<float> dy = vkt::random_values(size_t(p.output_elements()), seed += 10);
            for (float& v : dy) v = v > 0 ? 1.0f : 0.0f;
            const std::vector<float> w(size_t(p.filter_elements()), 1.0f);
            Tensor tdy = Tensor::from_host(*context, p.output_shape(), dy, type);
            Tensor tw = Tensor::from_host(*context, p.filter_shape(), w, type);
            Tensor tdx = Tensor::from_host(*context, p.input_shape(), vkt::poison(p.input_elements()), type);
            CHECK(vkconv::backward_data(*context, p, tdy, tw, tdx, a).chunks > uint32_t(p.N));  // tiles
            const std::vector<double> exact = vkconv::reference::backward_data(p, dy, w);
            CHECK(*std::max_element(exact.begin(), exact.end()) > 2048);
            const std::vector<float> rounded =
                Tensor::from_host(*context, p.input_shape(), std::vector<float>(exact.begin(), exact.end()), type).download();
            CHECK(tdx.download() == rounded);
        }
}
