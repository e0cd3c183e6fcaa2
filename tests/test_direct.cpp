// The direct algorithm against the CPU reference.
#include "conv_cases.hpp"
#include "test_util.hpp"

using vkconv::Algorithm;
using vkconv::Layout;

TEST_CASE("direct forward matches the reference on the named odd cases", "[direct][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 100;
    for (const auto& named : vkt::odd_problems()) {
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            for (bool bias : {false, true}) {
                auto problem = named.problem;
                problem.layout = layout;
                problem.has_bias = bias;
                INFO("case '" << named.name << "': " << problem.str());
                const auto stats = vkt::check_forward(*context, problem, Algorithm::Direct, seed++);
                CHECK(stats.algorithm == Algorithm::Direct);
                CHECK(stats.workspace_bytes == 0);
            }
        }
    }
}

TEST_CASE("direct forward matches the reference on a seeded random sweep", "[direct][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 5000;
    for (const auto& problem : vkt::random_problems(120, 2024)) {
        INFO(problem.str());
        vkt::check_forward(*context, problem, Algorithm::Direct, seed++);
    }
}

TEST_CASE("direct forward splits dispatches larger than the workgroup-count limit", "[direct][gpu]") {
    // 3 workgroups a dispatch: 3 x 64 outputs
    auto context = vkt::fresh_context(vkt::test_options(), {.max_workgroups_per_dispatch = 3});
    if (!context) return;
    vkconv::ConvProblem problem;
    problem.N = 2, problem.C = 3, problem.H = 13, problem.W = 11, problem.K = 5, problem.R = 3, problem.S = 3;
    problem.pad_h = problem.pad_w = 1;
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        problem.layout = layout;
        const auto stats = vkt::check_forward(*context, problem, Algorithm::Direct, 7);
        const uint64_t outputs = problem.output_elements();  // 1430
        CHECK(stats.dispatches == (outputs + 3 * 64 - 1) / (3 * 64));
    }
}

TEST_CASE("auto forward runs a valid algorithm and reports it", "[direct][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    vkconv::ConvProblem problem;
    problem.N = 1, problem.C = 4, problem.H = 8, problem.W = 8, problem.K = 4, problem.R = 3, problem.S = 3;
    const auto stats = vkt::check_forward(*context, problem, Algorithm::Auto, 11);
    CHECK(stats.algorithm != Algorithm::Auto);
    CHECK(stats.gpu_ms >= 0);
    CHECK(stats.wall_ms > 0);
}

TEST_CASE("forward rejects tensors that do not match the problem", "[direct][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    vkconv::ConvProblem problem;
    problem.N = 1, problem.C = 4, problem.H = 6, problem.W = 6, problem.K = 2, problem.R = 3, problem.S = 3;
    vkconv::Tensor x(*context, problem.input_shape()), w(*context, problem.filter_shape());
    vkconv::Tensor y(*context, problem.output_shape()), b(*context, problem.bias_shape());
    vkconv::Tensor wrong(*context, {1, 4, 6, 5});
    const uint64_t in_use_before = context->pool_stats().in_use;
    auto expect_invalid = [](auto&& call, const std::string& needle) {
        INFO("expected an InvalidArgument error mentioning '" << needle << "'");
        CHECK_THAT(vkt::invalid_argument_message(call), Catch::Contains(needle));
    };
    expect_invalid([&] { vkconv::forward(*context, problem, wrong, w, nullptr, y); }, "input");
    expect_invalid([&] { vkconv::forward(*context, problem, x, wrong, nullptr, y); }, "filter");
    expect_invalid([&] { vkconv::forward(*context, problem, x, w, nullptr, wrong); }, "output");
    expect_invalid([&] { vkconv::forward(*context, problem, x, w, &b, y); }, "has_bias");
    auto with_bias = problem;
    with_bias.has_bias = true;
    expect_invalid([&] { vkconv::forward(*context, with_bias, x, w, nullptr, y); }, "bias");
    expect_invalid([&] { vkconv::forward(*context, with_bias, x, w, &wrong, y); }, "bias");
    expect_invalid([&] { vkconv::forward(*context, problem, x, w, nullptr, x); }, "output");
    vkconv::Tensor empty;
    expect_invalid([&] { vkconv::forward(*context, problem, empty, w, nullptr, y); }, "empty");
    auto bad = problem;
    bad.groups = 3;
    expect_invalid([&] { vkconv::forward(*context, bad, x, w, nullptr, y); }, "groups");
    CHECK(context->pool_stats().in_use == in_use_before);  // a refused call allocates nothing
}

namespace {

// One image just over `range` bytes: direct binds whole tensors, so it runs bands of rows copied into tiles
// (test_tiled.cpp covers every algorithm and shape under a 4 KiB limit). A 1x1 filter makes every output one
// exact product, so every value is checked for equality.
void check_one_image_over(vkconv::Context& context, uint64_t range) {
    vkconv::ConvProblem problem;
    problem.C = 1, problem.H = 4, problem.W = static_cast<int64_t>(range / 16) + 1;
    problem.K = 1, problem.R = 1, problem.S = 1;
    REQUIRE(uint64_t(problem.input_elements()) * 4 > range);
    // Small integers in a repeating pattern: every product is exact, and the host never holds the input and
    // the output at once (at the device's own limit each is over 1 GiB on some devices).
    auto value = [](size_t i) { return float(int(i % 13) - 6); };
    const float w0 = 0.75f;
    std::vector<float> values(size_t(problem.input_elements()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = value(i);
    auto x = vkconv::Tensor::from_host(context, problem.input_shape(), values);
    std::vector<float>().swap(values);
    auto w = vkconv::Tensor::from_host(context, problem.filter_shape(), std::vector<float>{w0});
    auto y = vkconv::Tensor::from_host(context, problem.output_shape(), vkt::poison(problem.output_elements()));
    const auto stats = vkconv::forward(context, problem, x, w, nullptr, y, Algorithm::Direct);
    CHECK(stats.chunks > 1);
    x = vkconv::Tensor();
    const auto ys = y.download();
    size_t wrong = 0;
    for (size_t i = 0; i < ys.size(); ++i) wrong += ys[i] != value(i) * w0;
    CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("a tensor larger than the binding limit runs in tiles", "[direct][gpu]") {
    // The binding limit lowered to 1 MiB (or the device's own, if lower): the tiled path runs on every device.
    auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 1u << 20});
    if (!context) return;
    check_one_image_over(*context, context->device().max_storage_buffer_range);
}

TEST_CASE("a tensor larger than the device's own maxStorageBufferRange runs in tiles", "[direct][device-limit][heavy][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const uint64_t range = context->device().max_storage_buffer_range;
    // Beyond 256 MiB the tensor costs more memory and time than a test may take: a counted skip, shown by
    // ctest. (SwiftShader's 1 GiB range is also the most one allocation may hold there: a tensor past it
    // cannot be made at all until tensors may span several buffers.)
    if (range > (256ull << 20))
        return vkt::skip_case("maxStorageBufferRange is " + std::to_string(range >> 20) +
                              " MiB: too large to exceed in a test (the 1 MiB case above runs the same path)");
    check_one_image_over(*context, range);
}
