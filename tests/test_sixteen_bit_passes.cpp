// Convolution passes on 16-bit tensors (ConvProblem::data_type F16 and BF16): every pass of each algorithm
// that runs them (the bias gradient and the layer step too) against the double-precision reference computed
// on the same 16-bit inputs, within the stated bound, with workspaces as their queries say,
// through 16-bit storage (lavapipe) and packed 32-bit words (SwiftShader, and lavapipe under vulkan-minimum);
// outputs as views at odd entries whose neighbours stay untouched; reruns bit-identical; what does not run
// 16-bit tensors refused by name, and what an algorithm cannot sum in fp32 whole run in fp32 tiles.
//
// The bound (docs/algorithms.md, "Element types"): the fp32 accumulation's E = (n + 2)·u·Σ|x||w| (u = 2⁻²⁴,
// n the reduction length), then one rounding of the output to the type, u_t = 2⁻¹¹ (fp16) or 2⁻⁸ (bf16),
// and for fp16 half its smallest subnormal, η = 2⁻²⁵:   |ŷ - y| ≤ (1 + u_t)·E + u_t·|y| + η.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "context/tensor_storage.hpp"
#include "conv_cases.hpp"
#include "gpu.hpp"
#include "sixteen_bit_checks.hpp"
#include "test_util.hpp"
#include "vkconv/vkconv.hpp"

namespace {

using namespace sixteen;

// Depthwise shapes on and off its vec4 paths (NCHW rows W % 4, Q % 4; NHWC channels C % 4 with one filter a
// channel), with multipliers, strides, dilation and a 7x7 filter.
std::vector<vkt::NamedProblem> depthwise_problems() {
    return {
        {"depthwise vec4 rows", vkt::problem().batch(2).channels(4).depthwise(1).image(9, 12).kernel(3, 3).pad(1)},
        {"depthwise 4 channels a lane", vkt::problem().batch(2).channels(8).depthwise(1).image(6, 9).kernel(3, 3).pad(1)},
        {"depthwise multiplier 2 stride 2",
         vkt::problem().batch(1).channels(3).depthwise(2).image(7, 13).kernel(3, 3).pad(1).stride(2)},
        {"depthwise 5x3 dilation 2", vkt::problem().batch(1).channels(3).depthwise(3).image(8, 7).kernel(5, 3).pad(2).dilation(2)},
        {"depthwise 7x7", vkt::problem().batch(1).channels(4).depthwise(1).image(15, 16).kernel(7, 7).pad(3)},
        {"depthwise stride 2, dy rows of 16",  // 8-element dy fetches on CPU devices
         vkt::problem().batch(2).channels(3).depthwise(2).image(11, 32).kernel(3, 3).pad(1).stride(2)},
    };
}

// The odd table (and, for depthwise, its own shapes) through every algorithm that runs them, forward with and
// without a bias in turn: in both 16-bit types and both layouts (`every`), or in one (type, layout) per
// problem, taken in turn so that the table covers all four (CI's representative subset).
void check_odd_table(vkconv::Context& context, bool every) {
    uint32_t seed = 40;
    size_t turn = 0;
    std::vector<vkt::NamedProblem> problems = vkt::odd_problems();
    for (auto& named : depthwise_problems()) problems.push_back(named);
    for (const auto& named : problems) {
        ++turn;
        for (DataType type : {DataType::F16, DataType::BF16})
            for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
                const size_t combination = (type == DataType::BF16 ? 2 : 0) + (layout == Layout::NHWC ? 1 : 0);
                if (!every && combination != turn % 4) continue;
                ConvProblem p = named.problem;
                p.layout = layout, p.data_type = type, p.has_bias = (turn / 4 + combination) % 2 == 0;
                INFO(named.name << ": " << p.str());
                for (Algorithm algorithm : kSixteenBit)
                    if (vkt::runs_every_pass(algorithm, p)) check_passes(context, p, algorithm, seed += 5);
            }
    }
}

}  // namespace

// ([heavy]: a sanitizer build, whose instrumented CPU references make this minutes long, runs the 16-bit
// kernels through the cases below.)
TEST_CASE("every pass runs on f16 and bf16 tensors within the stated bound", "[types][gpu][heavy]") {
    VKT_REQUIRE_CONTEXT(context);
    INFO(context->device().name << (context->device().storage_16bit ? ": 16-bit storage" : ": packed words"));
    check_odd_table(*context, false);
}

TEST_CASE("every pass runs on f16 and bf16 tensors within the stated bound, in every type and layout",
          "[types][gpu][slow]") {
    VKT_REQUIRE_CONTEXT(context);
    check_odd_table(*context, true);
}

TEST_CASE("16-bit tensors in packed 32-bit words where a device has no 16-bit storage", "[types][gpu][heavy]") {
    vkconv::ContextOptions options = vkt::test_options();
    options.device_limits = "vulkan-minimum";  // lists no 16-bit storage
    auto context = vkt::fresh_context(options);
    if (!context) return;
    REQUIRE_FALSE(context->device().storage_16bit);
    check_odd_table(*context, false);
}

TEST_CASE("16-bit passes write views at odd entries without touching the neighbouring halves, bit-identically "
          "on reruns",
          "[types][direct][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    for (DataType type : {DataType::F16, DataType::BF16}) {
        // 3 output values an image: image 1 starts at entry 3, in the high half of a word.
        ConvProblem p = vkt::problem().batch(1).channels(3).image(3, 5).filters(1).kernel(3, 3);
        p.data_type = type;
        const auto x = Tensor::from_host(*context, p.input_shape(), vkt::random_values(size_t(p.input_elements()), 7), type);
        const auto w = Tensor::from_host(*context, p.filter_shape(), vkt::random_values(size_t(p.filter_elements()), 8), type);
        const std::vector<float> fill = vkt::random_values(9, 9);
        Tensor whole = Tensor::from_host(*context, {3, 1, 1, 3}, fill, type);
        const std::vector<float> before = whole.download();
        Tensor middle = whole.images(1, 1);
        vkconv::forward(*context, p, x, w, nullptr, middle, Algorithm::Direct);
        const std::vector<float> after = whole.download();
        for (size_t i : {0, 1, 2, 6, 7, 8}) CHECK(std::memcmp(&after[i], &before[i], 4) == 0);
        vkconv::forward(*context, p, x, w, nullptr, middle, Algorithm::Direct);
        CHECK(std::memcmp(whole.download().data(), after.data(), after.size() * 4) == 0);
        ConvProblem q = p;
        q.data_type = DataType::F32;
        Tensor y32(*context, q.output_shape());
        const auto x32 = Tensor::from_host(*context, q.input_shape(), x.download());
        const auto w32 = Tensor::from_host(*context, q.filter_shape(), w.download());
        vkconv::forward(*context, q, x32, w32, nullptr, y32, Algorithm::Direct);
        const auto narrowed = Tensor::from_host(*context, {3}, y32.download(), type).download();
        for (size_t i = 0; i < 3; ++i) CHECK(std::fabs(after[3 + i] - narrowed[i]) <= std::fabs(narrowed[i]) * 0.01);
    }
    // Reruns of the whole table's passes: bit for bit.
    ConvProblem p = vkt::problem().batch(2).channels(5).image(7, 6).filters(3).kernel(3, 2).pad(1).bias();
    p.data_type = DataType::BF16;
    const auto first = check_passes(*context, p, Algorithm::Direct, 70),
               again = check_passes(*context, p, Algorithm::Direct, 70);
    for (size_t i = 0; i < first.size(); ++i)
        CHECK(std::memcmp(first[i].data(), again[i].data(), first[i].size() * 4) == 0);
}

TEST_CASE("depthwise runs 16-bit tensors in chunks of images: dw summed in fp32 and rounded once, "
          "bit-identically on reruns",
          "[types][depthwise][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 900;
    for (DataType type : {DataType::F16, DataType::BF16})
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            ConvProblem p = vkt::problem().batch(5).channels(8).depthwise(1).image(12, 16).kernel(3, 3).pad(1).bias();
            p.layout = layout, p.data_type = type;
            vkconv::PassOptions options;
            // Two images per binding (and the window's alignment slack): 3 chunks.
            options.max_binding_bytes = 2 * uint64_t(p.C * p.H * p.W) * 2 + 1024;
            Tensor x(*context, p.input_shape(), type), dy(*context, p.output_shape(), type);
            Tensor dw(*context, p.filter_shape(), type);
            CHECK(vkconv::backward_filter(*context, p, x, dy, dw, nullptr, Algorithm::Depthwise, options).chunks == 3);
            const auto first = check_passes(*context, p, Algorithm::Depthwise, seed, options);
            const auto again = check_passes(*context, p, Algorithm::Depthwise, seed, options);
            for (size_t i = 0; i < first.size(); ++i)
                CHECK(std::memcmp(first[i].data(), again[i].data(), first[i].size() * 4) == 0);
            seed += 10;
        }
}

TEST_CASE("the fused epilogue on 16-bit tensors, with a residual of its own and in place, and on a device with "
          "4 storage buffers a stage",
          "[types][epilogue][gpu]") {
    vkconv::ContextOptions minimum = vkt::test_options();
    minimum.device_limits = "vulkan-minimum";  // 4 storage buffers: the residual copied into y first
    uint32_t seed = 1200;
    for (const vkconv::ContextOptions& options : {vkt::test_options(), minimum}) {
        auto context = vkt::fresh_context(options);
        if (!context) return;
        INFO("imposed limits: " << context->device().imposed_limits);
        for (DataType type : {DataType::F16, DataType::BF16})
            for (Layout layout : {Layout::NCHW, Layout::NHWC})
                for (bool in_place : {false, true}) {
                    ConvProblem p =
                        vkt::problem().batch(2).channels(6).depthwise(1).image(7, 9).kernel(3, 3).pad(1).bias();
                    p.layout = layout, p.data_type = type;
                    for (Algorithm algorithm : kSixteenBit)
                        if (vkt::runs_every_pass(algorithm, p)) check_epilogue(*context, p, algorithm, in_place, seed += 4);
                    // MEC's Solution A parks its result in y and moves it into place: the GEMM applies the
                    // whole epilogue, the residual parked first (two images: a permute in both layouts).
                    for (const char* schedule : {"A", "B"}) {
                        INFO("mec " << schedule);
                        const auto stats = check_epilogue(*context, p, Algorithm::Mec, in_place, seed += 4,
                                                          vkconv::PassOptions{.variant = schedule});
                        CHECK(stats.variant == schedule);
                    }
                }
    }
}

// Backward-filter (and the bias gradient, and the layer step) of a 16-bit problem with fp32_weight_gradients:
// dw and db in fp32 within the fp32 accumulation's bound, with no rounding of their own; rounded to the
// problem's type they are the 16-bit pass's dw and db bit for bit (the same fp32 sums, rounded once), and
// they take no fp32 copy of dw in the workspace.
// (`sliced`: as check_passes.)
void check_fp32_gradients(vkconv::Context& context, const ConvProblem& p, Algorithm algorithm, uint32_t seed,
                          const vkconv::PassOptions& options = {}, bool sliced = false) {
    ConvProblem wide = p;
    wide.fp32_weight_gradients = true;
    INFO(vkconv::to_string(algorithm) << " " << wide.str());
    const DataType type = p.data_type;
    auto [x, xv] = upload(context, p.input_shape(), vkt::random_values(size_t(p.input_elements()), seed), type);
    auto [w, wv] = upload(context, p.filter_shape(), vkt::random_values(size_t(p.filter_elements()), seed + 1), type);
    auto [dy, dyv] = upload(context, p.output_shape(), vkt::random_values(size_t(p.output_elements()), seed + 2), type);
    Tensor dw = Tensor::from_host(context, p.filter_shape(), vkt::poison(p.filter_elements()));
    Tensor db = Tensor::from_host(context, p.bias_shape(), vkt::poison(p.K));
    Tensor* db_or_none = p.has_bias ? &db : nullptr;
    const auto stats = vkconv::backward_filter(context, wide, x, dy, dw, db_or_none, algorithm, options);
    CHECK(stats.workspace_bytes == vkconv::backward_filter_workspace_bytes(context, wide, algorithm, options));
    CHECK(stats.workspace_bytes <= vkconv::backward_filter_workspace_bytes(context, p, algorithm, options));
    ConvProblem plain = p;
    plain.has_bias = false;
    const int64_t positions = p.N * p.P() * p.Q();
    const std::vector<float> dw32 = dw.download();
    check_16bit(dw32, vkconv::reference::backward_filter(plain, xv, dyv),
                vkconv::reference::backward_filter(plain, vkt::absolute(xv), vkt::absolute(dyv)), positions,
                DataType::F32, "fp32 dw");
    // The 16-bit pass's dw is these sums rounded.
    Tensor dw16(context, p.filter_shape(), type), db16(context, p.bias_shape(), type);
    vkconv::backward_filter(context, p, x, dy, dw16, p.has_bias ? &db16 : nullptr, algorithm, options);
    const std::vector<float> rounded = Tensor::from_host(context, p.filter_shape(), dw32, type).download();
    CHECK(std::memcmp(dw16.download().data(), rounded.data(), rounded.size() * 4) == 0);
    if (!p.has_bias) return;
    const std::vector<float> db32 = db.download();
    check_16bit(db32, vkconv::reference::backward_bias(p, dyv), vkconv::reference::backward_bias(p, vkt::absolute(dyv)),
                positions, DataType::F32, "fp32 db");
    CHECK(db16.download() == Tensor::from_host(context, p.bias_shape(), db32, type).download());
    // backward_bias alone and the layer step: the same bits.
    Tensor db_alone = Tensor::from_host(context, p.bias_shape(), vkt::poison(p.K));
    vkconv::backward_bias(context, wide, dy, db_alone, options);
    if (sliced)
        check_16bit(db_alone.download(), vkconv::reference::backward_bias(p, dyv),
                    vkconv::reference::backward_bias(p, vkt::absolute(dyv)), positions, DataType::F32,
                    "fp32 db alone");
    else
        CHECK(std::memcmp(db_alone.download().data(), db32.data(), db32.size() * 4) == 0);
    Tensor dx(context, p.input_shape(), type);
    Tensor dw2 = Tensor::from_host(context, p.filter_shape(), vkt::poison(p.filter_elements()));
    Tensor db2 = Tensor::from_host(context, p.bias_shape(), vkt::poison(p.K));
    vkconv::layer_backward(context, wide, x, w, dy, dx, dw2, &db2, algorithm, options);
    CHECK(std::memcmp(dw2.download().data(), dw32.data(), dw32.size() * 4) == 0);
    CHECK(std::memcmp(db2.download().data(), db32.data(), db32.size() * 4) == 0);
}

TEST_CASE("backward-filter of a 16-bit problem writes dw and db in fp32 where asked, unrounded",
          "[types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 1700;
    size_t turn = 0;
    std::vector<vkt::NamedProblem> problems = vkt::odd_problems();
    problems.resize(std::min<size_t>(problems.size(), 4));
    problems.push_back(depthwise_problems()[2]);
    for (const auto& named : problems) {
        const ConvProblem p = in_turn(named.problem, turn++);
        for (Algorithm algorithm : kSixteenBit)
            if (vkt::runs_every_pass(algorithm, p)) check_fp32_gradients(*context, p, algorithm, seed += 5);
    }
    // Summed over chunks (im2col, depthwise) and over pieces past one dispatch's loop cap (implicit-gemm,
    // direct): into the fp32 dw itself.
    ConvProblem chunked = vkt::problem().batch(3).channels(4).image(11, 9).filters(5).kernel(3, 3).pad(1).bias();
    chunked.data_type = DataType::F16;
    vkconv::PassOptions one_image;
    one_image.max_binding_bytes = uint64_t(chunked.P() * chunked.Q() * chunked.R * chunked.S * chunked.C) * 2 * 3 / 2;
    check_fp32_gradients(*context, chunked, Algorithm::Im2col, seed += 5, one_image);
    ConvProblem dw_chunks = vkt::problem().batch(5).channels(8).depthwise(1).image(12, 16).kernel(3, 3).pad(1).bias();
    dw_chunks.data_type = DataType::BF16;
    check_fp32_gradients(*context, dw_chunks, Algorithm::Depthwise, seed += 5,
                         vkconv::PassOptions{.max_binding_bytes = 2 * uint64_t(8 * 12 * 16) * 2 + 1024});
    ConvProblem long_sum = vkt::problem().batch(1).channels(2).image(150, 120).filters(2).kernel(3, 3).pad(1);
    long_sum.data_type = DataType::BF16;
    const uint64_t filter_bytes = context->pool_stats().rounded(uint64_t(long_sum.filter_elements()) * 4);
    check_fp32_gradients(*context, long_sum, Algorithm::ImplicitGemm, seed += 5,
                         vkconv::PassOptions{.workspace_limit = filter_bytes});
    check_fp32_gradients(*context, long_sum, Algorithm::Direct, seed += 5);
    // A dw of the problem's 16-bit type where fp32 is asked for: InvalidArgument naming it.
    ConvProblem wide = long_sum;
    wide.fp32_weight_gradients = true;
    Tensor x(*context, wide.input_shape(), wide.data_type), dy(*context, wide.output_shape(), wide.data_type);
    Tensor dw16(*context, wide.filter_shape(), wide.data_type);
    CHECK_THAT(vkt::invalid_argument_message([&] { vkconv::backward_filter(*context, wide, x, dy, dw16, nullptr); }),
               Catch::Contains("grad_filter tensor is bf16") && Catch::Contains("grad_filter is f32"));
}

// Tensors larger than one buffer (pages of 64 KiB) run in slices of whole images: forward and backward-data
// slice by slice, dw and db summed over the slices in fp32 and rounded once (or left fp32 where asked), one
// algorithm a (type, layout) in turn; an image across pages (tiles) is refused by name.
TEST_CASE("16-bit tensors larger than one buffer run in slices of images, each value rounded once",
          "[types][paging][gpu]") {
    vkt::TempDir dir{"vkconv-paged-16bit"};
    vkconv::ContextOptions options = vkt::test_options();
    options.device_limits = vkt::small_buffer_profile(dir, 64u << 10);
    auto context = vkt::fresh_context(options);
    if (!context) return;
    // x: 12 images of 3 x 37 x 37 (98,568 bytes), 7 a page; y: 12 of 5 x 35 x 35 (147,000 bytes), 5 a page.
    const ConvProblem base = vkt::problem().batch(12).channels(3).image(37, 37).filters(5).kernel(3, 3);
    // (Under 64 KiB bindings im2col and MEC lower one image in bands of rows: a 16-bit dx adds up in fp32.)
    const Algorithm order[] = {Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec, Algorithm::ImplicitGemm};
    uint32_t seed = 2100;
    for (size_t turn = 0; turn < 4; ++turn) {
        const ConvProblem p = in_turn(base, turn);
        Tensor x(*context, p.input_shape(), p.data_type), y(*context, p.output_shape(), p.data_type);
        REQUIRE(vkconv::detail::storage_of(x)->pages.size() == 2);
        REQUIRE(vkconv::detail::storage_of(y)->pages.size() == 3);
        check_passes(*context, p, order[turn], seed += 10, {}, true);
        check_fp32_gradients(*context, p, order[3 - turn], seed += 10, {}, true);
        auto [x16, xv] = upload(*context, p.input_shape(), vkt::random_values(size_t(p.input_elements()), ++seed), p.data_type);
        auto [w16, wv] = upload(*context, p.filter_shape(), vkt::random_values(size_t(p.filter_elements()), ++seed), p.data_type);
        auto [dy16, dyv] = upload(*context, p.output_shape(), vkt::random_values(size_t(p.output_elements()), ++seed), p.data_type);
        const Algorithm lowering = turn % 2 ? Algorithm::Mec : Algorithm::Im2col;
        INFO(vkconv::to_string(lowering) << " " << p.str());
        ConvProblem plain = p;
        plain.has_bias = false;
        Tensor y16 = Tensor::from_host(*context, p.output_shape(), vkt::poison(p.output_elements()), p.data_type);
        vkconv::forward(*context, plain, x16, w16, nullptr, y16, lowering);
        check_16bit(y16.download(), vkconv::reference::forward(plain, xv, wv, {}),
                    vkconv::reference::forward(plain, vkt::absolute(xv), vkt::absolute(wv), {}),
                    p.C * p.R * p.S, p.data_type, "paged forward");
        Tensor dw16 = Tensor::from_host(*context, p.filter_shape(), vkt::poison(p.filter_elements()), p.data_type);
        vkconv::backward_filter(*context, plain, x16, dy16, dw16, nullptr, lowering);
        check_16bit(dw16.download(), vkconv::reference::backward_filter(plain, xv, dyv),
                    vkconv::reference::backward_filter(plain, vkt::absolute(xv), vkt::absolute(dyv)),
                    p.N * p.P() * p.Q(), p.data_type, "paged backward-filter");
    }
    ConvProblem depthwise = vkt::problem().batch(9).channels(6).depthwise(1).image(41, 41).kernel(3, 3).pad(2).bias();
    depthwise.data_type = DataType::BF16;
    check_passes(*context, depthwise, Algorithm::Depthwise, seed += 10, {}, true);
    // One image of x (8 x 70 x 70: 78,400 bytes) across two pages: its slices run in tiles.
    ConvProblem split = vkt::problem().batch(2).channels(8).image(70, 70).filters(3).kernel(3, 3).pad(1).bias();
    split.data_type = DataType::F16;
    check_passes(*context, split, Algorithm::Direct, seed += 10, {}, true);
    // Images of 39,200 bytes: the second crosses a page (a tiled slice), the first and third do not (slices
    // of the algorithm alone, on a workspace sized for the tiled one's slots too).
    ConvProblem mixed = vkt::problem().batch(3).channels(4).image(70, 70).filters(3).kernel(3, 3).pad(1).bias();
    mixed.data_type = DataType::BF16;
    check_passes(*context, mixed, Algorithm::ImplicitGemm, seed += 10, {}, true);
}

// Tensors too large to bind (bindings of 8 KiB) run in tiles: the tile buffers and each tile's problem are
// fp32, 16-bit values widened as they are copied in and results rounded once as they are copied out; dw
// and db add up over a piece's tiles in fp32, and a dx over pieces of one group's filters over the pieces
// of each band.
TEST_CASE("16-bit tensors too large to bind run in fp32 tiles, each value rounded once", "[types][tiled][gpu]") {
    auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 8192});
    if (!context) return;
    // (The tile buffers are fp32: a tile row of im2col's col must fit 8 KiB in fp32.)
    const vkt::NamedProblem cases[] = {
        // 9,384 bytes an f16 image: bands of rows
        {"image beyond the limit", vkt::problem().batch(2).channels(12).image(23, 17).filters(6).kernel(3, 3).pad(1)},
        {"stride 2, dilation 2", vkt::problem().batch(1).channels(8).image(40, 13).filters(4).kernel(5, 3).pad(3, 1).stride(2).dilation(2, 1)},
        // 4 groups of 64 filters x 2 channels (9,216 bytes): pieces of whole groups
        {"grouped filter beyond the limit", vkt::problem().batch(1).channels(8).image(9, 7).filters(256).kernel(3, 3).pad(0, 2).groups(4)},
        {"depthwise image beyond the limit", vkt::problem().batch(2).channels(14).depthwise(2).image(19, 18).kernel(3, 3).pad(1)},
    };
    uint32_t seed = 2500;
    size_t turn = 0;
    for (const auto& named : cases) {
        const ConvProblem p = in_turn(named.problem, turn++);
        for (Algorithm algorithm : vkt::algorithms_for(p)) {
            INFO(named.name << ": " << p.str() << " " << vkconv::to_string(algorithm));
            Tensor x(*context, p.input_shape(), p.data_type), dy(*context, p.output_shape(), p.data_type);
            Tensor dw(*context, p.filter_shape(), p.data_type);
            CHECK(vkconv::backward_filter(*context, p, x, dy, dw, nullptr, algorithm).chunks > uint32_t(p.N));  // tiles
            check_passes(*context, p, algorithm, seed += 5, {}, true);
        }
    }
    // 40 filters of 16 channels (11,520 bytes in f16) in one group: pieces within it, dx of each band adding up
    // over them in fp32 and rounded once (with a bias already in dx for conv_transpose: check_passes' layer step
    // and transposed runs are elsewhere; here every pass, each output whole).
    for (size_t turn = 0; turn < 4; ++turn) {
        const ConvProblem one_group =
            in_turn(vkt::problem().batch(2).channels(16).image(6, 5).filters(40).kernel(3, 3).pad(1, 0), turn);
        for (Algorithm algorithm : {Algorithm::Direct, Algorithm::Im2col}) {
            INFO("one group's pieces: " << one_group.str() << " " << vkconv::to_string(algorithm));
            Tensor dy(*context, one_group.output_shape(), one_group.data_type);
            Tensor w(*context, one_group.filter_shape(), one_group.data_type);
            Tensor dx(*context, one_group.input_shape(), one_group.data_type);
            CHECK(vkconv::backward_data(*context, one_group, dy, w, dx, algorithm).chunks > uint32_t(one_group.N));
            check_passes(*context, one_group, algorithm, seed += 5, {}, true);
        }
    }
}

// im2col's and MEC's backward-data in bands of output rows (one image's lowered matrix beyond a binding):
// a 16-bit dx adds up in its image's fp32 copy, rounded once after the last band.
TEST_CASE("16-bit backward-data in bands of rows adds up in fp32", "[types][lowered][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    ConvProblem p = vkt::problem().batch(2).channels(6).image(13, 11).filters(5).kernel(3, 3).pad(1).bias();
    // An image's dcol: 13 x 11 positions x 54 taps x 4 bytes = 30,888, its dL 11 x 15 x 18 x 4 = 11,880;
    // bindings of 8 KiB: bands of rows.
    const vkconv::PassOptions options{.max_binding_bytes = 8u << 10};
    uint32_t seed = 2700;
    for (DataType type : {DataType::F16, DataType::BF16})
        for (Layout layout : {Layout::NCHW, Layout::NHWC})
            for (Algorithm algorithm : {Algorithm::Im2col, Algorithm::Mec}) {
                p.data_type = type, p.layout = layout;
                INFO(vkconv::to_string(algorithm) << " " << p.str());
                Tensor dy(*context, p.output_shape(), type), w(*context, p.filter_shape(), type);
                Tensor dx(*context, p.input_shape(), type);
                CHECK(vkconv::backward_data(*context, p, dy, w, dx, algorithm, options).chunks > uint32_t(p.N));
                check_passes(*context, p, algorithm, seed += 10, options);
            }
    // Where the fp32 copy of one image (3,432 bytes) is beyond a binding but its 16-bit dx is not: fp32 tiles.
    const vkconv::PassOptions narrow{.max_binding_bytes = 3000};
    for (DataType type : {DataType::F16, DataType::BF16}) {
        p.data_type = type, p.layout = Layout::NCHW;
        INFO("bindings of 3,000 bytes, " << p.str());
        Tensor dy(*context, p.output_shape(), type), w(*context, p.filter_shape(), type), dx(*context, p.input_shape(), type);
        CHECK(vkconv::backward_data(*context, p, dy, w, dx, Algorithm::Im2col, narrow).chunks > uint32_t(p.N));
        check_passes(*context, p, Algorithm::Im2col, seed += 10, narrow, true);
    }
}

// The pool's peak halves with the tensors: a 16-bit pass's scratch takes at most half the bytes of its fp32
// twin's, where chunks as large as the bindings allow would hold twice the images (lowered x, and the fp32
// sums of backward-data's dcol and dL and of Winograd's V and M), and Winograd's U and MEC's OHWI dw, fp32 in
// both, are made for half the input channels, half the filters, at a time.
TEST_CASE("16-bit passes take at most half their fp32 twin's scratch", "[types][workspace][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    ConvProblem p = vkt::problem().batch(8).channels(16).image(14, 14).filters(16).kernel(3, 3).pad(1);
    vkconv::PassOptions options;
    options.max_binding_bytes = 4 * uint64_t(14 * 14 * 16 * 9) * 4 + 4096;  // 4 images of fp32 col a chunk
    const uint64_t slack = 2 * context->pool_stats().rounded(1);
    for (DataType type : {DataType::F16, DataType::BF16})
        for (const auto& entry : {std::pair{Algorithm::Im2col, Pass::Forward}, {Algorithm::Im2col, Pass::BackwardData},
                                  {Algorithm::Mec, Pass::Forward}, {Algorithm::Mec, Pass::BackwardData},
                                  {Algorithm::Mec, Pass::BackwardFilter}, {Algorithm::Winograd, Pass::Forward},
                                  {Algorithm::Winograd, Pass::BackwardData}}) {
            const Algorithm algorithm = entry.first;  // (not a structured binding: the lambda below captures it)
            const Pass pass = entry.second;
            ConvProblem half = p;
            half.data_type = type;
            INFO(vkconv::to_string(algorithm) << " " << vkconv::to_string(pass) << " " << half.str());
            auto query = [&](const ConvProblem& q) {
                return pass == Pass::Forward       ? vkconv::forward_workspace_bytes(*context, q, algorithm, options)
                       : pass == Pass::BackwardData ? vkconv::backward_data_workspace_bytes(*context, q, algorithm, options)
                                                    : vkconv::backward_filter_workspace_bytes(*context, q, algorithm, options);
            };
            const uint64_t fp32 = query(p), sixteen = query(half);
            CHECK(fp32 > 0);
            // (Winograd's transformed filter U and MEC's OHWI dw are fp32 in both: the 16-bit pass makes them
            // for half the input channels, half the filters, at a time.)
            CHECK(sixteen <= fp32 / 2 + slack);
        }
    // And the runs take what the queries say, within the bound (backward-data in chunks of 2 images).
    ConvProblem bf16 = p;
    bf16.data_type = DataType::BF16;
    check_passes(*context, bf16, Algorithm::Im2col, 2300, options);
    check_passes(*context, bf16, Algorithm::Mec, 2310, options);
}

TEST_CASE("find measures and verifies the algorithms that run a 16-bit problem, on tensors of its type",
          "[types][find][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    ConvProblem p = vkt::problem().batch(2).channels(8).depthwise(1).image(9, 10).kernel(3, 3).pad(1).bias();
    for (DataType type : {DataType::F16, DataType::BF16}) {
        p.data_type = type;
        for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
            INFO(vkconv::to_string(pass) << " " << p.str());
            std::vector<Algorithm> ran;
            for (const vkconv::AlgorithmPerf& perf : vkconv::find_algorithms(*context, pass, p)) {
                CHECK(perf.verified);
                CHECK(perf.deterministic);
                ran.push_back(perf.algorithm);
            }
            for (Algorithm algorithm : kSixteenBit)
                CHECK(std::find(ran.begin(), ran.end(), algorithm) != ran.end());
        }
    }
}

TEST_CASE("what does not run 16-bit tensors refuses them by name", "[types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    ConvProblem p = vkt::problem().batch(1).channels(4).image(6, 6).filters(4).kernel(3, 3).pad(1);
    p.data_type = DataType::F16;
    Tensor x(*context, p.input_shape(), DataType::F16), w(*context, p.filter_shape(), DataType::F16);
    Tensor y(*context, p.output_shape(), DataType::F16), y32(*context, p.output_shape());
    // A reduction whose GEMM runs in pieces, each adding into its output (7x7 taps of 512 channels).
    ConvProblem deep = vkt::problem().batch(1).channels(512).image(8, 8).filters(2).kernel(7, 7).pad(3);
    deep.data_type = DataType::F16;
    // Its pieces add up in an fp32 copy of y (test_sixteen_bit_pieces.cpp), which MEC's Solution A, parking its
    // result in y, cannot take: asked for, it runs in fp32 tiles (each y value rounded once as copied out).
    const auto [xd, xdv] = upload(*context, deep.input_shape(), vkt::random_values(size_t(deep.input_elements()), 41), DataType::F16);
    const auto [wd, wdv] = upload(*context, deep.filter_shape(), vkt::random_values(size_t(deep.filter_elements()), 42), DataType::F16);
    Tensor yd = Tensor::from_host(*context, deep.output_shape(), vkt::poison(deep.output_elements()), DataType::F16);
    const auto solution_a = vkconv::forward(*context, deep, xd, wd, nullptr, yd, Algorithm::Mec, {.variant = "A"});
    CHECK(solution_a.algorithm == Algorithm::Mec);
    CHECK(solution_a.variant == "A");
    check_16bit(yd.download(), vkconv::reference::forward(deep, xdv, wdv, {}),
                vkconv::reference::forward(deep, vkt::absolute(xdv), vkt::absolute(wdv), {}), deep.C * deep.R * deep.S,
                DataType::F16, "MEC Solution A in fp32 tiles");
    // Auto takes an algorithm that runs them.
    const Algorithm chosen = vkconv::forward(*context, p, x, w, nullptr, y).algorithm;
    CHECK(std::find(std::begin(kSixteenBit), std::end(kSixteenBit), chosen) != std::end(kSixteenBit));
    // A tensor of another type than the problem's: InvalidArgument naming it.
    CHECK_THAT(vkt::invalid_argument_message([&] { vkconv::forward(*context, p, x, w, nullptr, y32); }),
               Catch::Contains("output tensor is f32") && Catch::Contains("problem's output is f16"));
    // A 16-bit db is rounded once, from fp32 partial sums: a workspace limit without room for them refuses it.
    ConvProblem with_bias = p;
    with_bias.has_bias = true;
    Tensor db(*context, {4}, DataType::F16);
    const auto bias = vkt::thrown_error(
        [&] { vkconv::backward_bias(*context, with_bias, y, db, vkconv::PassOptions{.workspace_limit = 1}); });
    CHECK(bias.category() == vkconv::ErrorCategory::Unsupported);
    CHECK_THAT(std::string(bias.what()), Catch::Contains("fp32 partial sums"));
}
