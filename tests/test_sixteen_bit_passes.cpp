// Convolution passes on 16-bit tensors (ConvProblem::data_type F16 and BF16): every pass of each algorithm
// that runs them (the bias gradient and the layer step too) against the double-precision reference computed
// on the same 16-bit inputs, within the stated bound, with workspaces as their queries say,
// through 16-bit storage (lavapipe) and packed 32-bit words (SwiftShader, and lavapipe under vulkan-minimum);
// outputs as views at odd entries whose neighbours stay untouched; reruns bit-identical; what does not run
// 16-bit tensors yet refused by name.
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
#include "test_util.hpp"
#include "vkconv/vkconv.hpp"

namespace {

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::DataType;
using vkconv::Layout;
using vkconv::Pass;
using vkconv::Tensor;

// The stated bound on every value of `gpu` (checked all, NaN failing).
void check_16bit(std::span<const float> gpu, std::span<const double> reference, std::span<const double> magnitude,
                 int64_t reduction, DataType type, const std::string& what) {
    INFO(what);
    REQUIRE(gpu.size() == reference.size());
    // (F32: an output stored as the fp32 sum it is, with no rounding of its own.)
    const double u = std::ldexp(1.0, -24);
    const double ut = type == DataType::F32 ? 0.0 : std::ldexp(1.0, type == DataType::F16 ? -11 : -8);
    const double eta = type == DataType::F16 ? std::ldexp(1.0, -25) : 0.0;
    size_t bad = gpu.size();
    double worst = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const double e = double(reduction + 2) * u * magnitude[i];
        const double bound = (1 + ut) * e + ut * std::fabs(reference[i]) + eta + 1e-30;
        const double error = std::fabs(double(gpu[i]) - reference[i]);
        if (!(error <= bound)) bad = std::min(bad, i);
        worst = std::max(worst, error / bound);
    }
    INFO("worst error/bound " << worst);
    if (bad != gpu.size())
        FAIL("value " << bad << ": gpu " << gpu[bad] << ", reference " << reference[bad] << " beyond the bound");
}

// A tensor of `type` holding `values` narrowed, and the values it holds, widened back (what the pass reads).
std::pair<Tensor, std::vector<float>> upload(vkconv::Context& context, const vkconv::Shape& shape,
                                             const std::vector<float>& values, DataType type) {
    Tensor t = Tensor::from_host(context, shape, values, type);
    return {t, t.download()};
}

// The three passes of `p` through `algorithm` on `context`, each output poisoned first and checked whole,
// each workspace as its query says; returns the outputs (forward, dx, dw, and db with a bias) for the rerun
// check; with a bias, backward_bias alone and the layer step give the same bits.
// (`sliced`: paged tensors, whose backward_bias alone runs slices cut where dy's pages are, backward-filter
// where x's and dy's are: its db is then checked against the bound rather than backward-filter's bits.)
std::vector<std::vector<float>> check_passes(vkconv::Context& context, const ConvProblem& p, Algorithm algorithm,
                                             uint32_t seed, const vkconv::PassOptions& options = {},
                                             bool sliced = false) {
    const DataType type = p.data_type;
    auto [x, xv] = upload(context, p.input_shape(), vkt::random_values(size_t(p.input_elements()), seed), type);
    auto [w, wv] = upload(context, p.filter_shape(), vkt::random_values(size_t(p.filter_elements()), seed + 1), type);
    auto [dy, dyv] = upload(context, p.output_shape(), vkt::random_values(size_t(p.output_elements()), seed + 2), type);
    auto [b, bv] = upload(context, p.bias_shape(), vkt::random_values(size_t(p.K), seed + 3), type);
    ConvProblem plain = p;
    plain.has_bias = false;
    std::vector<std::vector<float>> results;
    INFO(vkconv::to_string(algorithm));

    Tensor y = Tensor::from_host(context, p.output_shape(), vkt::poison(p.output_elements()), type);
    const auto fs = vkconv::forward(context, p, x, w, p.has_bias ? &b : nullptr, y, algorithm, options);
    CHECK(fs.algorithm == algorithm);
    CHECK(fs.workspace_bytes == vkconv::forward_workspace_bytes(context, p, algorithm, options));
    results.push_back(y.download());
    check_16bit(results.back(), vkconv::reference::forward(p, xv, wv, p.has_bias ? bv : std::vector<float>{}),
                vkconv::reference::forward(p, vkt::absolute(xv), vkt::absolute(wv),
                                           p.has_bias ? vkt::absolute(bv) : std::vector<float>{}),
                p.channels_per_group() * p.R * p.S + (p.has_bias ? 1 : 0), type, "forward " + p.str());

    Tensor dx = Tensor::from_host(context, p.input_shape(), vkt::poison(p.input_elements()), type);
    const auto ds = vkconv::backward_data(context, plain, dy, w, dx, algorithm, options);
    CHECK(ds.workspace_bytes == vkconv::backward_data_workspace_bytes(context, plain, algorithm, options));
    results.push_back(dx.download());
    check_16bit(results.back(), vkconv::reference::backward_data(plain, dyv, wv),
                vkconv::reference::backward_data(plain, vkt::absolute(dyv), vkt::absolute(wv)),
                p.filters_per_group() * p.R * p.S, type, "backward-data " + p.str());

    Tensor dw = Tensor::from_host(context, p.filter_shape(), vkt::poison(p.filter_elements()), type);
    Tensor db = Tensor::from_host(context, p.bias_shape(), vkt::poison(p.K), type);
    const auto ws = vkconv::backward_filter(context, p, x, dy, dw, p.has_bias ? &db : nullptr, algorithm, options);
    CHECK(ws.workspace_bytes == vkconv::backward_filter_workspace_bytes(context, p, algorithm, options));
    results.push_back(dw.download());
    check_16bit(results.back(), vkconv::reference::backward_filter(plain, xv, dyv),
                vkconv::reference::backward_filter(plain, vkt::absolute(xv), vkt::absolute(dyv)),
                p.N * p.P() * p.Q(), type, "backward-filter " + p.str());
    if (!p.has_bias) return results;
    // db: fp32 partial sums, rounded once; backward_bias alone and the layer step give the same bits.
    results.push_back(db.download());
    check_16bit(results.back(), vkconv::reference::backward_bias(p, dyv),
                vkconv::reference::backward_bias(p, vkt::absolute(dyv)), p.N * p.P() * p.Q(), type,
                "backward-bias " + p.str());
    Tensor db_alone = Tensor::from_host(context, p.bias_shape(), vkt::poison(p.K), type);
    vkconv::backward_bias(context, p, dy, db_alone, options);
    if (sliced)
        check_16bit(db_alone.download(), vkconv::reference::backward_bias(p, dyv),
                    vkconv::reference::backward_bias(p, vkt::absolute(dyv)), p.N * p.P() * p.Q(), type,
                    "backward-bias alone " + p.str());
    else
        CHECK(std::memcmp(db_alone.download().data(), results.back().data(), size_t(p.K) * 4) == 0);
    Tensor dx2 = Tensor::from_host(context, p.input_shape(), vkt::poison(p.input_elements()), type);
    Tensor dw2 = Tensor::from_host(context, p.filter_shape(), vkt::poison(p.filter_elements()), type);
    Tensor db2 = Tensor::from_host(context, p.bias_shape(), vkt::poison(p.K), type);
    vkconv::layer_backward(context, p, x, w, dy, dx2, dw2, &db2, algorithm, options);
    for (const auto& [got, expected] : {std::pair{dx2.download(), results[1]}, std::pair{dw2.download(), results[2]},
                                        std::pair{db2.download(), results[3]}})
        CHECK(std::memcmp(got.data(), expected.data(), got.size() * 4) == 0);
    return results;
}

// `problem` with a bias, in the (type, layout) of `turn`: f16 and bf16 in turn, NCHW for two turns, then NHWC
// (the cases below take one combination each, all four over four cases).
ConvProblem in_turn(ConvProblem problem, size_t turn) {
    problem.data_type = turn % 2 ? DataType::BF16 : DataType::F16;
    problem.layout = turn / 2 % 2 ? Layout::NHWC : Layout::NCHW;
    problem.has_bias = true;
    return problem;
}

// The algorithms that run 16-bit tensors in every pass.
const Algorithm kSixteenBit[] = {Algorithm::Direct, Algorithm::Depthwise, Algorithm::Im2col, Algorithm::Mec,
                                 Algorithm::ImplicitGemm};

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

// y = relu(alpha·conv + b + beta·z) on 16-bit tensors against the reference on the same inputs: E counts
// the fp32 accumulation (n + 2 roundings) and the epilogue's two (alpha is a power of two, beta's product
// and its sum each round once) over the sum of the terms' magnitudes. ReLU only shrinks an error.
vkconv::RunStats check_epilogue(vkconv::Context& context, const ConvProblem& p, Algorithm algorithm, bool in_place,
                                uint32_t seed, const vkconv::PassOptions& options = {}) {
    const DataType type = p.data_type;
    auto [x, xv] = upload(context, p.input_shape(), vkt::random_values(size_t(p.input_elements()), seed), type);
    auto [w, wv] = upload(context, p.filter_shape(), vkt::random_values(size_t(p.filter_elements()), seed + 1), type);
    auto [b, bv] = upload(context, p.bias_shape(), vkt::random_values(size_t(p.K), seed + 2), type);
    auto [z, zv] = upload(context, p.output_shape(), vkt::random_values(size_t(p.output_elements()), seed + 3), type);
    Tensor y = in_place ? z : Tensor::from_host(context, p.output_shape(), vkt::poison(p.output_elements()), type);
    vkconv::Epilogue epilogue{.alpha = 0.5f, .beta = -1.5f, .residual = &z, .activation = vkconv::Activation::ReLU};
    const vkconv::RunStats stats = vkconv::forward(context, p, x, w, &b, y, algorithm, options, epilogue);
    ConvProblem plain = p;
    plain.has_bias = false;
    const std::vector<double> conv = vkconv::reference::forward(plain, xv, wv, {});
    std::vector<double> magnitude = vkconv::reference::forward(plain, vkt::absolute(xv), vkt::absolute(wv), {});
    std::vector<double> expected(conv.size());
    const size_t per_filter = size_t(p.P() * p.Q());
    for (size_t i = 0; i < conv.size(); ++i) {
        const size_t k = p.layout == Layout::NCHW ? i / per_filter % size_t(p.K) : i % size_t(p.K);
        expected[i] = std::max(0.0, 0.5 * conv[i] + bv[k] - 1.5 * zv[i]);
        magnitude[i] = 0.5 * magnitude[i] + std::fabs(bv[k]) + 1.5 * std::fabs(zv[i]);
    }
    check_16bit(y.download(), expected, magnitude, p.channels_per_group() * p.R * p.S + 2, type,
                std::string("epilogue ") + (in_place ? "in place " : "") + vkconv::to_string(algorithm) + " " + p.str());
    return stats;
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
// and db add up over a piece's tiles in fp32. A 16-bit dx summed over pieces of one group's filters is
// refused by name.
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
    // 40 filters of 16 channels (11,520 bytes in f16) in one group: pieces within it, each adding into dx.
    ConvProblem one_group = vkt::problem().batch(2).channels(16).image(6, 5).filters(40).kernel(3, 3).pad(1, 0);
    one_group.data_type = DataType::F16;
    Tensor dy(*context, one_group.output_shape(), DataType::F16), w(*context, one_group.filter_shape(), DataType::F16);
    Tensor dx(*context, one_group.input_shape(), DataType::F16);
    const auto refused = vkt::thrown_error([&] { vkconv::backward_data(*context, one_group, dy, w, dx, Algorithm::Direct); });
    CHECK(refused.category() == vkconv::ErrorCategory::Unsupported);
    CHECK_THAT(std::string(refused.what()), Catch::Contains("pieces of one group") && Catch::Contains("f16"));
    // Its forward and backward-filter write each value once, or sum in fp32: they run.
    one_group.has_bias = true;
    Tensor x(*context, one_group.input_shape(), DataType::F16), y(*context, one_group.output_shape(), DataType::F16);
    Tensor b(*context, one_group.bias_shape(), DataType::F16), dw(*context, one_group.filter_shape(), DataType::F16);
    Tensor db(*context, one_group.bias_shape(), DataType::F16);
    CHECK_NOTHROW(vkconv::forward(*context, one_group, x, w, &b, y, Algorithm::Direct));
    CHECK_NOTHROW(vkconv::backward_filter(*context, one_group, x, dy, dw, &db, Algorithm::Direct));
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
    // Where the fp32 copy of one image (3,432 bytes) is beyond a binding but its 16-bit dx is not: refused.
    p.data_type = DataType::F16, p.layout = Layout::NCHW;
    Tensor dy(*context, p.output_shape(), p.data_type), w(*context, p.filter_shape(), p.data_type);
    Tensor dx(*context, p.input_shape(), p.data_type);
    const auto refused = vkt::thrown_error(
        [&] { vkconv::backward_data(*context, p, dy, w, dx, Algorithm::Im2col, {.max_binding_bytes = 3000}); });
    CHECK(refused.category() == vkconv::ErrorCategory::Unsupported);
    CHECK_THAT(std::string(refused.what()), Catch::Contains("fp32 copy of one image"));
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
    Tensor dx_(*context, deep.input_shape(), DataType::F16), dw_(*context, deep.filter_shape(), DataType::F16);
    Tensor dy_(*context, deep.output_shape(), DataType::F16);
    // direct refuses it (im2col's and MEC's pieces add up in an fp32 copy: tested below).
    const auto pieces = vkt::thrown_error([&] { vkconv::forward(*context, deep, dx_, dw_, nullptr, dy_, Algorithm::Direct); });
    CHECK(pieces.category() == vkconv::ErrorCategory::Unsupported);
    CHECK_THAT(std::string(pieces.what()), Catch::Contains("runs in pieces"));
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
}
