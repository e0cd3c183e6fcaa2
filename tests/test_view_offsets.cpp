// Views that start at any element (Tensor::images at an entry whose first byte is off the device's
// storage-buffer offset alignment): every pass and algorithm, tiles, the gemm and user kernels read and write
// exactly the view's elements.
#include <algorithm>
#include <cmath>

#include "conv_cases.hpp"
#include "gpu.hpp"
#include "test_util.hpp"

extern const uint32_t test_axpy_spv[];
extern const size_t test_axpy_spv_words;
extern const uint32_t test_axpy_offsets_spv[];
extern const size_t test_axpy_offsets_spv_words;

namespace {

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Tensor;

constexpr float kSentinel = 1234.5f;

// A tensor of `shape` one entry into a larger one whose entries hold an odd number of floats (every shape
// below has odd entries), so the view starts off any offset alignment (>= 16 bytes). The entries before
// and after it hold a sentinel that nothing may overwrite.
struct Placed {
    Tensor whole, view;
    int64_t entry = 0;  // floats

    void check_around(const std::string& what) const {
        const auto all = whole.download();
        const auto n = all.size();
        for (size_t i = 0; i < size_t(entry); ++i) {
            INFO(what << ": the entry before the view, float " << i);
            REQUIRE(all[i] == kSentinel);
            INFO(what << ": the entry after the view, float " << i);
            REQUIRE(all[n - size_t(entry) + i] == kSentinel);
        }
    }
};

Placed placed(vkconv::Context& context, vkconv::Shape shape, const std::vector<float>& values) {
    Placed p;
    p.entry = vkconv::shape_elements(shape) / shape[0];
    REQUIRE(p.entry % 2 == 1);
    vkconv::Shape outer = shape;
    outer[0] += 2;
    std::vector<float> all(size_t(vkconv::shape_elements(outer)), kSentinel);
    std::copy(values.begin(), values.end(), all.begin() + p.entry);
    p.whole = Tensor::from_host(context, outer, all);
    p.view = p.whole.images(1, shape[0]);
    REQUIRE(p.view.byte_offset() % context.pool_stats().alignment != 0);
    return p;
}

// Every pass of `p` with `algorithm` on views off the alignment, each output checked in full and its
// surroundings untouched.
void check_passes_on_views(vkconv::Context& context, const ConvProblem& p, Algorithm algorithm, uint32_t seed) {
    using vkt::absolute;
    namespace ref = vkconv::reference;
    const auto x = vkt::random_values(p.input_elements(), seed), w = vkt::random_values(p.filter_elements(), seed + 1);
    const auto b = vkt::random_values(p.K, seed + 2), dy = vkt::random_values(p.output_elements(), seed + 3);
    const Placed tx = placed(context, p.input_shape(), x), tw = placed(context, p.filter_shape(), w);
    const Placed tb = placed(context, p.bias_shape(), b), tdy = placed(context, p.output_shape(), dy);
    const int64_t positions = p.N * p.P() * p.Q();

    Placed y = placed(context, p.output_shape(), vkt::poison(p.output_elements()));
    vkconv::forward(context, p, tx.view, tw.view, &tb.view, y.view, algorithm);
    vkt::check_close(y.view.download(), ref::forward(p, x, w, b),
                     ref::forward(p, absolute(x), absolute(w), absolute(b)), p.channels_per_group() * p.R * p.S + 1,
                     "y");
    y.check_around("y");

    Placed dx = placed(context, p.input_shape(), vkt::poison(p.input_elements()));
    vkconv::backward_data(context, p, tdy.view, tw.view, dx.view, algorithm);
    vkt::check_close(dx.view.download(), ref::backward_data(p, dy, w), ref::backward_data(p, absolute(dy), absolute(w)),
                     p.filters_per_group() * p.R * p.S, "dx");
    dx.check_around("dx");

    Placed dw = placed(context, p.filter_shape(), vkt::poison(p.filter_elements()));
    Placed db = placed(context, p.bias_shape(), vkt::poison(p.K));
    vkconv::backward_filter(context, p, tx.view, tdy.view, dw.view, &db.view, algorithm);
    vkt::check_close(dw.view.download(), ref::backward_filter(p, x, dy),
                     ref::backward_filter(p, absolute(x), absolute(dy)), positions, "dw");
    vkt::check_close(db.view.download(), ref::backward_bias(p, dy), ref::backward_bias(p, absolute(dy)), positions,
                     "db");
    dw.check_around("dw");
    db.check_around("db");

    Placed db_alone = placed(context, p.bias_shape(), vkt::poison(p.K));
    vkconv::backward_bias(context, p, tdy.view, db_alone.view);
    vkt::check_close(db_alone.view.download(), ref::backward_bias(p, dy), ref::backward_bias(p, absolute(dy)),
                     positions, "db alone");
    db_alone.check_around("db alone");
}

}  // namespace

TEST_CASE("views that start at any element run every pass and algorithm, in tiles too", "[views][gpu]") {
    VKT_REQUIRE_CONTEXT(shared);
    // A second context whose bindings end at 1 KiB: these problems' tensors no longer bind whole, so the
    // passes run in tiles, whose copies read and write the views.
    auto tiny = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 1024});
    REQUIRE(tiny);
    // Entries of 105 (x, dx), 175 or 105 (y, dy), 27 or 9 (filters) and 1 (bias) floats: all odd.
    const std::vector<std::pair<std::string, ConvProblem>> problems = {
        {"grouped", vkt::problem().batch(2).channels(3).image(5, 7).filters(5).kernel(3, 3).pad(1).bias()},
        {"depthwise", vkt::problem().batch(2).channels(3).image(5, 7).depthwise(1).kernel(3, 3).pad(1).bias()},
    };
    uint32_t seed = 900;
    for (const auto& [name, problem] : problems)
        for (auto layout : {vkconv::Layout::NCHW, vkconv::Layout::NHWC})
            for (vkconv::Context* context : {shared, tiny.get()}) {
                ConvProblem p = problem;
                p.layout = layout;
                for (Algorithm algorithm : vkt::algorithms_for(p)) {
                    INFO(name << " " << p.str() << " " << vkconv::to_string(algorithm)
                              << (context == shared ? "" : ", 1 KiB bindings"));
                    check_passes_on_views(*context, p, algorithm, seed += 4);
                }
            }
}

TEST_CASE("the gemm reads and writes views that start at any element", "[views][gemm][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const int64_t M = 9, N = 7, K = 13;  // rows of K, N and N floats: odd, off every alignment
    const auto a = vkt::random_values(M * K, 31), b = vkt::random_values(K * N, 32);
    const Placed ta = placed(*context, {M, K}, a), tb = placed(*context, {K, N}, b);
    Placed tc = placed(*context, {M, N}, vkt::poison(M * N));
    vkconv::gemm(*context, ta.view, tb.view, tc.view, {});
    std::vector<double> exact(M * N), magnitude(M * N);
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
            for (int64_t k = 0; k < K; ++k) {
                const double term = double(a[i * K + k]) * double(b[k * N + j]);
                exact[i * N + j] += term, magnitude[i * N + j] += std::fabs(term);
            }
    vkt::check_close(tc.view.download(), exact, magnitude, K, "c");
    tc.check_around("c");
}

TEST_CASE("a kernel takes views at any element with element_offsets, and names the flag without it",
          "[views][kernel][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    using vkconv::BindingAccess;
    const int64_t n = 11;
    const auto x = vkt::random_values(n * 3, 41), y = vkt::random_values(n * 3, 42);
    const Placed tx = placed(*context, {n, 3}, x);
    Placed ty = placed(*context, {n, 3}, y);
    vkconv::Kernel with_offsets(*context, {"test_axpy_offsets",
                                           {test_axpy_offsets_spv, test_axpy_offsets_spv_words},
                                           {BindingAccess::Read, BindingAccess::ReadWrite},
                                           4,
                                           true});
    const float a = 2.0f;
    with_offsets.run({tx.view, ty.view}, uint64_t(n * 3), a);
    const auto got = ty.view.download();
    for (size_t i = 0; i < got.size(); ++i) {
        INFO("y[" << i << "]");
        REQUIRE(got[i] == a * x[i] + y[i]);
    }
    ty.check_around("y");

    vkconv::Kernel plain(
        *context,
        {"test_axpy", {test_axpy_spv, test_axpy_spv_words}, {BindingAccess::Read, BindingAccess::ReadWrite}, 4});
    const std::string message = vkt::invalid_argument_message([&] { plain.run({tx.view, ty.view}, 3, a); });
    CHECK_THAT(message, Catch::Contains("binding 0") && Catch::Contains("element_offsets"));
    CHECK(ty.view.download() == got);  // the refused run wrote nothing
}
