// Tensor views (Tensor::images) and user compute kernels (vkconv::Kernel).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "context/tensor_storage.hpp"
#include "gpu.hpp"
#include "test_util.hpp"

extern const uint32_t test_axpy_spv[];
extern const size_t test_axpy_spv_words;

namespace {

using vkconv::Algorithm;
using vkconv::BindingAccess;
using vkconv::ErrorCategory;
using vkconv::Tensor;

vkconv::KernelDesc axpy_desc() {
    return {"test_axpy", {test_axpy_spv, test_axpy_spv_words}, {BindingAccess::Read, BindingAccess::ReadWrite}, 4};
}

std::vector<float> slice(const std::vector<float>& v, size_t first, size_t count) {
    return {v.begin() + first, v.begin() + first + count};
}

}  // namespace

TEST_CASE("tensor views share memory, start at their own offset and upload and download their own range",
          "[views][gpu]") {
    auto* context = vkt::shared_context();
    if (!context) return;
    // Entries of 4 x `row` floats: 4 * row * 4 bytes, a multiple of the pool's alignment on any device
    // (128 bytes on most, 1 KiB where the alignment is 256), so every view below is aligned.
    const uint64_t alignment = context->pool_stats().alignment;
    const int64_t row = std::max<int64_t>(8, int64_t(alignment / 16));
    const int64_t entry = 4 * row;  // floats
    const uint64_t entry_bytes = uint64_t(entry) * 4;
    REQUIRE(entry_bytes % alignment == 0);
    const vkconv::Shape shape{5, 4, row};
    const auto values = vkt::random_values(size_t(5 * entry), 11);
    Tensor t = Tensor::from_host(*context, shape, values);
    Tensor middle = t.images(1, 3);
    CHECK(middle.shape() == vkconv::Shape{3, 4, row});
    CHECK(middle.byte_offset() == entry_bytes);
    CHECK(middle.download() == slice(values, entry, 3 * entry));
    Tensor inner = middle.images(1, 1);  // a view of a view
    CHECK(inner.byte_offset() == 2 * entry_bytes);
    const auto replacement = vkt::random_values(size_t(entry), 12);
    inner.upload(replacement);
    auto expected = values;
    std::copy(replacement.begin(), replacement.end(), expected.begin() + 2 * entry);
    CHECK(t.download() == expected);
    // The view keeps the memory alive after the tensor it came from is gone.
    const uint64_t in_use = context->pool_stats().in_use;
    t = Tensor();
    CHECK(context->pool_stats().in_use == in_use);
    CHECK(middle.download() == slice(expected, entry, 3 * entry));
}

TEST_CASE("tensor views are refused out of range or of an empty tensor, and start at any entry", "[views][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const auto values = vkt::random_values(18, 51);
    Tensor t = Tensor::from_host(*context, {6, 3}, values);  // 12-byte entries: entry 1 starts off any alignment
    const Tensor off = t.images(1, 2);
    CHECK(off.byte_offset() == 12);
    CHECK(off.download() == slice(values, 3, 6));
    CHECK_NOTHROW(t.images(0, 6));
    for (auto [first, count] : {std::pair<int64_t, int64_t>{-1, 1}, {0, 0}, {5, 2}, {6, 1}}) {
        INFO(first << " " << count);
        CHECK_THROWS_MATCHES(t.images(first, count), vkconv::Error,
                             Catch::Matchers::Predicate<vkconv::Error>([](const vkconv::Error& e) {
                                 return e.category() == ErrorCategory::InvalidArgument;
                             }));
    }
    CHECK_THROWS_AS(Tensor().images(0, 1), vkconv::Error);
}

TEST_CASE("views of one tensor alias only where their bytes overlap, and operand bytes count shared bytes once",
          "[views][gpu]") {
    auto* context = vkt::shared_context();
    if (!context) return;
    // Depthwise 3x3 over images of 4 x 8 x 8 floats (1 KiB each): input and output as views of one tensor.
    vkconv::ConvProblem p;
    p.N = 2, p.C = 4, p.H = 8, p.W = 8, p.K = 4, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1, p.groups = 4;
    const auto x_values = vkt::random_values(4 * 256, 21);
    Tensor both = Tensor::from_host(*context, {4, 4, 8, 8}, x_values);
    Tensor w = Tensor::from_host(*context, p.filter_shape(), vkt::random_values(36, 22));
    Tensor x = both.images(0, 2), y = both.images(2, 2);
    const auto stats = vkconv::forward(*context, p, x, w, nullptr, y, Algorithm::Depthwise);
    const auto ref = vkconv::reference::forward(p, slice(x_values, 0, 512), w.download());
    const auto got = y.download();
    for (size_t i = 0; i < ref.size(); ++i) REQUIRE(got[i] == Approx(ref[i]).margin(1e-5));
    CHECK(stats.operand_bytes == 4096 + context->pool_stats().rounded(36 * 4));
    CHECK(x.download() == slice(x_values, 0, 512));  // the input half is untouched

    Tensor overlapping = both.images(1, 2);
    CHECK_THROWS_WITH(vkconv::forward(*context, p, x, w, nullptr, overlapping, Algorithm::Depthwise),
                      Catch::Contains("must not also be one of the pass's inputs"));
    // Two views of one allocation that do not overlap are separate tensors to a pass: x and y as inputs.
    Tensor dw(*context, p.filter_shape());
    CHECK_NOTHROW(vkconv::backward_filter(*context, p, x, y, dw, nullptr, Algorithm::Depthwise));
    const auto dw_ref = vkconv::reference::backward_filter(p, slice(x_values, 0, 512), y.download());
    const auto dw_got = dw.download();
    for (size_t i = 0; i < dw_ref.size(); ++i) REQUIRE(dw_got[i] == Approx(dw_ref[i]).epsilon(1e-4).margin(1e-4));

    // The gemm compares byte ranges too: c may be a view beside a, never over it. Square matrices of a side
    // whose bytes are a multiple of the alignment, so the views are aligned on every device.
    int64_t side = 4;
    while (uint64_t(side * side * 4) % context->pool_stats().alignment) side *= 2;
    const auto abc_values = vkt::random_values(size_t(3 * side * side), 23);
    Tensor abc = Tensor::from_host(*context, {3, side, side}, abc_values);
    Tensor c = abc.images(2, 1);
    c.upload(vkt::poison(side * side));
    CHECK_NOTHROW(vkconv::gemm(*context, abc.images(0, 1), abc.images(1, 1), c, {}));
    const auto product = c.download();
    for (int64_t i = 0; i < side; ++i)
        for (int64_t j = 0; j < side; ++j) {
            double sum = 0, magnitude = 0;
            for (int64_t k = 0; k < side; ++k) {
                const double term = double(abc_values[i * side + k]) * abc_values[side * side + k * side + j];
                sum += term, magnitude += std::fabs(term);
            }
            INFO("c[" << i << "][" << j << "]");
            REQUIRE(std::fabs(product[i * side + j] - sum) <= (side + 2) * std::ldexp(1.0, -24) * magnitude);
        }
    Tensor over = abc.images(1, 2);
    Tensor a2 = abc.images(0, 2);
    CHECK_THROWS_WITH(vkconv::gemm(*context, a2, a2, over, {}), Catch::Contains("must not share memory"));
}

TEST_CASE("a kernel runs user SPIR-V on tensors and views, split over the workgroup-count limit", "[kernel][gpu]") {
    // 3 workgroups a dispatch: 192 elements
    auto context = vkt::fresh_context(vkt::test_options(), {.max_workgroups_per_dispatch = 3});
    if (!context) return;
    vkconv::Kernel axpy(*context, axpy_desc());
    CHECK(axpy.name() == "test_axpy");
    const size_t n = 1000;
    const auto x_values = vkt::random_values(n, 31), y_values = vkt::random_values(n, 32);
    Tensor x = Tensor::from_host(*context, {static_cast<int64_t>(n)}, x_values);
    Tensor y = Tensor::from_host(*context, {static_cast<int64_t>(n)}, y_values);
    const auto stats = axpy.run({x, y}, n, 2.0f);
    CHECK(stats.dispatches == 6);  // ceil(1000 / 192)
    CHECK(stats.operand_bytes == 2 * context->pool_stats().rounded(n * 4));
    auto got = y.download();
    for (size_t i = 0; i < n; ++i) REQUIRE(got[i] == 2.0f * x_values[i] + y_values[i]);

    // On views: the second half of y gets the first half of x, the first half stays. Halves of at least 500
    // floats whose bytes are a multiple of the alignment, so the views are aligned on every device.
    const int64_t floats_aligned = int64_t(context->pool_stats().alignment / 4);
    const int64_t half = (500 + floats_aligned - 1) / floats_aligned * floats_aligned;
    const auto x2_values = vkt::random_values(size_t(2 * half), 33),
               y2_values = vkt::random_values(size_t(2 * half), 34);
    Tensor x2 = Tensor::from_host(*context, {2, half}, x2_values);
    Tensor y2 = Tensor::from_host(*context, {2, half}, y2_values);
    axpy.run({x2.images(0, 1), y2.images(1, 1)}, uint64_t(half), -1.0f);
    got = y2.download();
    for (int64_t i = 0; i < half; ++i) REQUIRE(got[i] == y2_values[i]);
    for (int64_t i = 0; i < half; ++i) REQUIRE(got[half + i] == -x2_values[i] + y2_values[half + i]);
    // A second kernel of the same code shares the cached pipeline.
    vkconv::Kernel again(*context, axpy_desc());
    CHECK_NOTHROW(again.run({x, y}, 1, 0.0f));
}

TEST_CASE("a kernel rejects bad descriptions and bad runs with errors that name the problem", "[kernel][gpu]") {
    auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 4096});
    if (!context) return;
    auto category_of = [](auto&& f) {
        try {
            f();
        } catch (const vkconv::Error& e) {
            return std::pair{e.category(), std::string(e.what())};
        }
        return std::pair{ErrorCategory::VulkanFailure, std::string("no error")};
    };
    // Descriptions.
    auto desc = axpy_desc();
    const uint32_t not_spirv[] = {1, 2, 3, 4, 5, 6};
    desc.spirv = not_spirv;
    auto r = category_of([&] { vkconv::Kernel(*context, desc); });
    CHECK(r.first == ErrorCategory::InvalidArgument);
    CHECK_THAT(r.second, Catch::Contains("not SPIR-V"));
    desc = axpy_desc(), desc.bindings.clear();
    CHECK(category_of([&] { vkconv::Kernel(*context, desc); }).first == ErrorCategory::InvalidArgument);
    desc = axpy_desc(), desc.params_bytes = 124;
    CHECK_THAT(category_of([&] { vkconv::Kernel(*context, desc); }).second, Catch::Contains("params_bytes 124"));
    desc = axpy_desc(), desc.params_bytes = 6;
    CHECK(category_of([&] { vkconv::Kernel(*context, desc); }).first == ErrorCategory::InvalidArgument);

    // Runs.
    vkconv::Kernel axpy(*context, axpy_desc());
    Tensor x(*context, {1024}), y(*context, {1024}), big(*context, {1025});
    r = category_of([&] { axpy.run({x}, 1024, 1.0f); });
    CHECK(r.first == ErrorCategory::InvalidArgument);
    CHECK_THAT(r.second, Catch::Contains("1 tensors given for 2 bindings"));
    r = category_of([&] { axpy.run({x, y}, 1024); });
    CHECK_THAT(r.second, Catch::Contains("0 bytes of params given, the kernel takes 4"));
    r = category_of([&] { axpy.run({x, y}, 1024, 1.0); });  // a double is 8 bytes
    CHECK(r.first == ErrorCategory::InvalidArgument);
    CHECK(category_of([&] { axpy.run({x, y}, 0, 1.0f); }).first == ErrorCategory::InvalidArgument);
    CHECK(category_of([&] { axpy.run({x, Tensor()}, 1, 1.0f); }).first == ErrorCategory::InvalidArgument);
    r = category_of([&] { axpy.run({x, big}, 1024, 1.0f); });  // 4100 bytes > the lowered 4096
    CHECK(r.first == ErrorCategory::Unsupported);
    CHECK_THAT(r.second, Catch::Contains("binding 1") && Catch::Contains("maxStorageBufferRange of 4096"));
    r = category_of([&] { axpy.run({y, y}, 1024, 1.0f); });
    CHECK(r.first == ErrorCategory::InvalidArgument);
    CHECK_THAT(r.second, Catch::Contains("shares memory"));
    r = category_of([&] { axpy.run({x, y}, uint64_t{1} << 32, 1.0f); });
    CHECK(r.first == ErrorCategory::Unsupported);
    auto other = vkt::fresh_context();
    if (other) {
        Tensor foreign(*other, {1024});
        CHECK_THAT(category_of([&] { axpy.run({x, foreign}, 1024, 1.0f); }).second, Catch::Contains("another context"));
    }
    CHECK_NOTHROW(axpy.run({x, y}, 1024, 1.0f));  // the context is fine after every refusal
}
