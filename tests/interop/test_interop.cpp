// vkconv inside an application (interop.hpp, recording.hpp): a context on the application's device, tensors
// over its buffers, a workspace it provides, passes recorded into its command buffer or submitted
// asynchronously on vkconv's queue. Every output is poisoned first and every value checked against the CPU
// reference; the application's side is plain Vulkan through the system loader.
#include <cmath>
#include <cstring>
#include <limits>

#include "conv_cases.hpp"
#include "interop/app_vulkan.hpp"
#include "test_util.hpp"
#include "vkconv/testing.hpp"
#include "vkconv/vkconv.hpp"

namespace {

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkt::AppVulkan;

// The layer every case uses: odd sizes, stride, padding, a bias.
ConvProblem layer() {
    return vkt::problem().batch(2).channels(5).image(11, 9).filters(6).kernel(3, 2).pad(1).stride(2, 1).bias();
}

struct LayerData {
    ConvProblem p = layer();
    std::vector<float> x, w, b, dy;
    LayerData()
        : x(vkt::random_values(size_t(p.input_elements()), 1)),
          w(vkt::random_values(size_t(p.filter_elements()), 2)),
          b(vkt::random_values(size_t(p.K), 3)),
          dy(vkt::random_values(size_t(p.output_elements()), 4)) {}

    void check_forward(std::span<const float> y, const std::string& what) const {
        const auto ref = vkconv::reference::forward(p, x, w, b);
        const auto mag = vkconv::reference::forward(p, vkt::absolute(x), vkt::absolute(w), vkt::absolute(b));
        vkt::check_close(y, ref, mag, p.C / p.groups * p.R * p.S + 1, what + ": forward");
    }
    // Backward results for `grad_output` (dy, or a forward's y).
    void check_backward(std::span<const float> grad_output, std::span<const float> dx, std::span<const float> dw,
                        std::span<const float> db, const std::string& what) const {
        const auto dx_ref = vkconv::reference::backward_data(p, grad_output, w);
        const auto dx_mag = vkconv::reference::backward_data(p, vkt::absolute(grad_output), vkt::absolute(w));
        vkt::check_close(dx, dx_ref, dx_mag, p.K / p.groups * p.R * p.S, what + ": backward-data");
        const auto dw_ref = vkconv::reference::backward_filter(p, x, grad_output);
        const auto dw_mag = vkconv::reference::backward_filter(p, vkt::absolute(x), vkt::absolute(grad_output));
        vkt::check_close(dw, dw_ref, dw_mag, p.N * p.P() * p.Q(), what + ": backward-filter");
        const auto db_ref = vkconv::reference::backward_bias(p, grad_output);
        const auto db_mag = vkconv::reference::backward_bias(p, vkt::absolute(grad_output));
        vkt::check_close(db, db_ref, db_mag, p.N * p.P() * p.Q(), what + ": backward-bias");
    }
};

// The application's instance has the validation layer (AppVulkan): vkconv's option does not apply.
vkconv::ContextOptions external_options() {
    vkconv::ContextOptions options = vkt::test_options();
    options.validation.reset();
    return options;
}

std::unique_ptr<vkconv::Context> external_context(const AppVulkan& app) {
    return std::make_unique<vkconv::Context>(app.external(), external_options());
}

}  // namespace

TEST_CASE("a context on the application's device runs every pass and leaves the device to the application",
          "[interop]") {
    auto app = AppVulkan::create();
    if (!app) return;
    const LayerData d;
    const ConvProblem& p = d.p;
    {
        auto context = external_context(*app);
        CHECK(context->external_device());
        CHECK_FALSE(context->validation_enabled());  // the application's instance has the layers
        const auto handles = vkconv::context_handles(*context);
        CHECK(handles.device == app->device);
        CHECK(handles.queue == app->queue);
        for (Algorithm algorithm : {Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec}) {
            const std::string what = vkconv::to_string(algorithm);
            auto x = vkconv::Tensor::from_host(*context, p.input_shape(), d.x);
            auto w = vkconv::Tensor::from_host(*context, p.filter_shape(), d.w);
            auto b = vkconv::Tensor::from_host(*context, p.bias_shape(), d.b);
            auto dy = vkconv::Tensor::from_host(*context, p.output_shape(), d.dy);
            auto y = vkconv::Tensor::from_host(*context, p.output_shape(), vkt::poison(p.output_elements()));
            auto dx = vkconv::Tensor::from_host(*context, p.input_shape(), vkt::poison(p.input_elements()));
            auto dw = vkconv::Tensor::from_host(*context, p.filter_shape(), vkt::poison(p.filter_elements()));
            auto db = vkconv::Tensor::from_host(*context, p.bias_shape(), vkt::poison(p.K));
            vkconv::forward(*context, p, x, w, &b, y, algorithm);
            vkconv::backward_data(*context, p, dy, w, dx, algorithm);
            vkconv::backward_filter(*context, p, x, dy, dw, &db, algorithm);
            d.check_forward(y.download(), what);
            d.check_backward(d.dy, dx.download(), dw.download(), db.download(), what);
        }
    }
    // The context is gone; the application's device, queue and instance are still its own and work.
    auto buffer = app->make_buffer(
        256, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT);
    const std::vector<float> values{1, 2, 3, 4};
    app->upload(buffer, 16, values);
    CHECK(app->download(buffer, 16, 4) == values);
    app->destroy(buffer);
    CHECK(vkDeviceWaitIdle(app->device) == VK_SUCCESS);
}

TEST_CASE("an application's device with a null handle or an index out of range is refused, naming it", "[interop]") {
    auto app = AppVulkan::create();
    if (!app) return;
    auto expect = [](vkconv::ExternalDevice e, vkconv::ErrorCategory category, const std::string& words) {
        try {
            vkconv::Context context(e, external_options());
            FAIL("accepted: " << words);
        } catch (const vkconv::Error& error) {
            CHECK(error.category() == category);
            CHECK_THAT(error.what(), Catch::Contains(words));
        }
    };
    auto e = app->external();
    e.get_instance_proc_addr = nullptr;
    expect(e, vkconv::ErrorCategory::InvalidArgument, "get_instance_proc_addr");
    e = app->external(), e.instance = VK_NULL_HANDLE;
    expect(e, vkconv::ErrorCategory::InvalidArgument, "instance");
    e = app->external(), e.physical_device = VK_NULL_HANDLE;
    expect(e, vkconv::ErrorCategory::InvalidArgument, "physical_device");
    e = app->external(), e.device = VK_NULL_HANDLE;
    expect(e, vkconv::ErrorCategory::InvalidArgument, "device");
    e = app->external(), e.queue_family = 1000;
    expect(e, vkconv::ErrorCategory::InvalidArgument, "queue_family 1000");
    e = app->external(), e.queue_index = 1000;
    expect(e, vkconv::ErrorCategory::InvalidArgument, "queue_index 1000");
    // The application's objects survived every refusal.
    CHECK(vkDeviceWaitIdle(app->device) == VK_SUCCESS);
}

TEST_CASE("tensors over the application's buffers: no copy, no pool memory, views and every algorithm", "[interop]") {
    auto app = AppVulkan::create();
    if (!app) return;
    auto context = external_context(*app);
    const LayerData d;
    const ConvProblem& p = d.p;
    const VkBufferUsageFlags usage =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    // One application buffer holds every operand, each at an offset off every alignment but 4 bytes.
    const VkDeviceSize x_at = 4, w_at = x_at + 4 * p.input_elements() + 12, b_at = w_at + 4 * p.filter_elements() + 36,
                       y_at = b_at + 4 * p.K + 20, end = y_at + 4 * p.output_elements() + 4;
    auto buffer = app->make_buffer(end, usage);
    const float sentinel = 7.0f;  // every byte the operands do not cover keeps it
    app->upload(buffer, 0, std::vector<float>(size_t(end / 4), sentinel));
    app->upload(buffer, x_at, d.x);
    app->upload(buffer, w_at, d.w);
    app->upload(buffer, b_at, d.b);
    auto gaps_untouched = [&] {
        const auto all = app->download(buffer, 0, size_t(end / 4));
        for (VkDeviceSize at : {VkDeviceSize{0}, w_at - 12, w_at - 8, w_at - 4, b_at - 4, y_at - 4, end - 4})
            if (all[size_t(at / 4)] != sentinel) return false;
        return true;
    };
    {
        const auto before = context->pool_stats();
        auto x = vkconv::wrap_buffer(*context, app->range(buffer, x_at, 4 * p.input_elements()), p.input_shape());
        auto w = vkconv::wrap_buffer(*context, app->range(buffer, w_at, 4 * p.filter_elements()), p.filter_shape());
        auto b = vkconv::wrap_buffer(*context, app->range(buffer, b_at, 4 * p.K), p.bias_shape());
        auto y = vkconv::wrap_buffer(*context, app->range(buffer, y_at, 4 * p.output_elements()), p.output_shape());
        CHECK(x.external());
        CHECK(context->pool_stats().in_use == before.in_use);
        CHECK(context->pool_stats().live_allocations == before.live_allocations);
        CHECK(x.download() == d.x);  // vkconv reads what the application wrote, in place

        for (Algorithm algorithm : vkt::algorithms_for(p)) {
            const std::string what = std::string("wrapped, ") + vkconv::to_string(algorithm);
            app->upload(buffer, y_at, vkt::poison(p.output_elements()));
            const auto stats = vkconv::forward(*context, p, x, w, &b, y, algorithm);
            CHECK(stats.operand_bytes >=
                  uint64_t(4 * (p.input_elements() + p.filter_elements() + p.K + p.output_elements())));
            d.check_forward(app->download(buffer, y_at, size_t(p.output_elements())), what);
            CHECK(gaps_untouched());
        }
        // A view of a wrapped tensor: image 1 alone, into the second half of y.
        ConvProblem one = p;
        one.N = 1;
        app->upload(buffer, y_at, vkt::poison(p.output_elements()));
        auto y1 = y.images(1, 1);
        vkconv::forward(*context, one, x.images(1, 1), w, &b, y1, Algorithm::Im2col);
        const auto all = app->download(buffer, y_at, size_t(p.output_elements()));
        const auto ref = vkconv::reference::forward(p, d.x, d.w, d.b);
        const auto mag = vkconv::reference::forward(p, vkt::absolute(d.x), vkt::absolute(d.w), vkt::absolute(d.b));
        const size_t half = size_t(p.output_elements() / 2);
        for (size_t i = 0; i < half; ++i) REQUIRE(std::isnan(all[i]));  // image 0 is not written
        vkt::check_close(std::span(all).subspan(half), std::span(ref).subspan(half), std::span(mag).subspan(half),
                         p.C * p.R * p.S + 1, "view of a wrapped tensor");
        CHECK(gaps_untouched());
    }
    app->destroy(buffer);  // after every tensor over it
}

namespace {

// Operands laid out in one application buffer, each starting one float past a 16-byte boundary (so off every
// vec4, whatever the device's offset alignment), with sentinel floats around them that nothing may overwrite.
class OffVec4Operands {
public:
    OffVec4Operands(AppVulkan& app, vkconv::Context& context, const std::vector<vkconv::Shape>& shapes) : app_(app) {
        VkDeviceSize at = 0;
        for (const auto& shape : shapes) {
            const VkDeviceSize bytes = 4 * VkDeviceSize(vkconv::shape_elements(shape));
            places_.push_back({at + 20, bytes});  // 20 = 16 + 4: a sentinel vec4, then one float more
            at = (at + 20 + bytes + 15) / 16 * 16;
        }
        end_ = at + 16;
        buffer_ = app.make_buffer(end_, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                            VK_BUFFER_USAGE_TRANSFER_DST_BIT);
        app.upload(buffer_, 0, std::vector<float>(size_t(end_ / 4), kSentinel));
        for (size_t i = 0; i < shapes.size(); ++i)
            tensors_.push_back(vkconv::wrap_buffer(context, app.range(buffer_, places_[i].first, places_[i].second),
                                                   shapes[i]));
    }
    ~OffVec4Operands() {
        tensors_.clear();  // before the buffer
        app_.destroy(buffer_);
    }
    OffVec4Operands(const OffVec4Operands&) = delete;
    OffVec4Operands& operator=(const OffVec4Operands&) = delete;

    vkconv::Tensor& operator[](size_t i) { return tensors_[i]; }
    void set(size_t i, std::span<const float> values) { app_.upload(buffer_, places_[i].first, values); }
    std::vector<float> get(size_t i) { return app_.download(buffer_, places_[i].first, size_t(places_[i].second / 4)); }
    // Every float outside the operands still holds the sentinel.
    bool gaps_untouched() {
        const auto all = app_.download(buffer_, 0, size_t(end_ / 4));
        size_t next = 0;
        for (const auto& [at, bytes] : places_) {
            for (; next < at / 4; ++next)
                if (all[next] != kSentinel) return false;
            next = size_t((at + bytes) / 4);
        }
        for (; next < all.size(); ++next)
            if (all[next] != kSentinel) return false;
        return true;
    }

private:
    static constexpr float kSentinel = 7.0f;
    AppVulkan& app_;
    AppVulkan::Buffer buffer_;
    VkDeviceSize end_ = 0;
    std::vector<std::pair<VkDeviceSize, VkDeviceSize>> places_;  // offset and bytes of each operand
    std::vector<vkconv::Tensor> tensors_;
};

}  // namespace

TEST_CASE("operands off a vec4 boundary with shapes in fours: every pass and algorithm falls back from its vec4 "
          "paths",
          "[interop]") {
    // Channels, rows and filters in whole vec4s select the vec4 paths: in NHWC implicit GEMM's channel loads,
    // depthwise's c4 kernels and the bias gradient's; in NCHW depthwise's vec4 rows; the GEMM's loads of the
    // filter. Views of pool tensors start on a vec4 with such shapes, the application's buffers need not: each
    // kernel must notice that element 0 lies mid-vec4.
    auto app = AppVulkan::create();
    if (!app) return;
    auto context = external_context(*app);
    namespace ref = vkconv::reference;
    using vkt::absolute;
    using vkconv::Layout;
    const std::vector<ConvProblem> problems = {
        vkt::problem().batch(2).channels(8).image(7, 8).filters(12).kernel(3, 3).pad(1).layout(Layout::NHWC).bias(),
        vkt::problem().batch(2).channels(8).depthwise().image(9, 8).kernel(3, 3).pad(1).stride(2, 1)
            .layout(Layout::NHWC).bias(),
        // NCHW rows in whole vec4s (W and Q multiples of 4): depthwise's vec4 rows; the filter (C*R*S = 72)
        // in whole vec4s for the GEMM's loads of it.
        vkt::problem().batch(2).channels(8).depthwise().image(6, 8).kernel(3, 3).pad(1).bias(),
        vkt::problem().batch(2).channels(8).image(5, 8).filters(4).kernel(3, 3).pad(1).bias(),
    };
    uint32_t seed = 900;
    for (const ConvProblem& p : problems) {
        REQUIRE((p.C % 4 == 0 && p.K % 4 == 0 && p.W % 4 == 0 && p.Q() % 4 == 0));
        const auto x = vkt::random_values(size_t(p.input_elements()), seed++);
        const auto w = vkt::random_values(size_t(p.filter_elements()), seed++);
        const auto b = vkt::random_values(size_t(p.K), seed++);
        const auto dy = vkt::random_values(size_t(p.output_elements()), seed++);
        enum { X, W, B, DY, Y, DX, DW, DB };
        OffVec4Operands t(*app, *context,
                          {p.input_shape(), p.filter_shape(), p.bias_shape(), p.output_shape(), p.output_shape(),
                           p.input_shape(), p.filter_shape(), p.bias_shape()});
        t.set(X, x), t.set(W, w), t.set(B, b), t.set(DY, dy);
        const int64_t positions = p.N * p.P() * p.Q();
        auto check_db = [&](const std::string& what) {
            vkt::check_close(t.get(DB), ref::backward_bias(p, dy), ref::backward_bias(p, absolute(dy)), positions, what);
        };
        for (Algorithm algorithm : vkt::algorithms_for(p)) {
            const std::string what = p.str() + " " + vkconv::to_string(algorithm);
            INFO(what);
            t.set(Y, vkt::poison(p.output_elements()));
            vkconv::forward(*context, p, t[X], t[W], &t[B], t[Y], algorithm);
            vkt::check_close(t.get(Y), ref::forward(p, x, w, b), ref::forward(p, absolute(x), absolute(w), absolute(b)),
                             p.channels_per_group() * p.R * p.S + 1, what + ": y");
            t.set(DX, vkt::poison(p.input_elements()));
            vkconv::backward_data(*context, p, t[DY], t[W], t[DX], algorithm);
            vkt::check_close(t.get(DX), ref::backward_data(p, dy, w), ref::backward_data(p, absolute(dy), absolute(w)),
                             p.filters_per_group() * p.R * p.S, what + ": dx");
            t.set(DW, vkt::poison(p.filter_elements()));
            t.set(DB, vkt::poison(p.K));
            vkconv::backward_filter(*context, p, t[X], t[DY], t[DW], &t[DB], algorithm);
            vkt::check_close(t.get(DW), ref::backward_filter(p, x, dy),
                             ref::backward_filter(p, absolute(x), absolute(dy)), positions, what + ": dw");
            check_db(what + ": db with dw");
            CHECK(t.gaps_untouched());
        }
        t.set(DB, vkt::poison(p.K));
        vkconv::backward_bias(*context, p, t[DY], t[DB]);
        check_db(p.str() + ": backward-bias");
        CHECK(t.gaps_untouched());
    }
}

TEST_CASE("wrap_buffer and transfers refuse what the application's buffer cannot do, naming it", "[interop]") {
    auto app = AppVulkan::create();
    if (!app) return;
    auto context = external_context(*app);
    const VkBufferUsageFlags all =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    auto usable = app->make_buffer(1024, all);
    auto storage_only = app->make_buffer(1024, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
    auto transfer_only = app->make_buffer(1024, VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT);
    auto expect = [&](auto&& call, const std::string& words) {
        try {
            call();
            FAIL("accepted: " << words);
        } catch (const vkconv::Error& e) {
            CHECK(e.category() == vkconv::ErrorCategory::InvalidArgument);
            CHECK_THAT(e.what(), Catch::Contains(words));
        }
    };
    expect([&] { vkconv::wrap_buffer(*context, {VK_NULL_HANDLE, 0, 64, all}, {4}); }, "null");
    expect([&] { vkconv::wrap_buffer(*context, app->range(usable, 2, 64), {4}); }, "multiple of 4");
    expect([&] { vkconv::wrap_buffer(*context, app->range(usable, 0, 12), {4}); }, "smaller than shape");
    expect([&] { vkconv::wrap_buffer(*context, app->range(transfer_only, 0, 64), {4}); }, "STORAGE_BUFFER");
    expect([&] { vkconv::wrap_buffer(*context, app->range(storage_only, 0, 64), {4}); }, "TRANSFER_SRC");
    expect([&] { vkconv::wrap_buffer(*context, app->range(usable, 0, 64), {0}); }, "not positive");
    expect([&] { vkconv::wrap_buffer(*context, {usable.buffer, ~uint64_t{0} - 15, 64, all}, {4}); }, "overflows");
    {
        // A good one round-trips.
        auto t = vkconv::wrap_buffer(*context, app->range(usable, 4, 64), {16});
        const std::vector<float> values = vkt::random_values(16, 5);
        t.upload(values);
        CHECK(t.download() == values);
        CHECK(app->download(usable, 4, 16) == values);
    }
    app->destroy(usable);
    app->destroy(storage_only);
    app->destroy(transfer_only);
}

TEST_CASE("a workspace the caller provides: the pass allocates nothing and the pool is untouched", "[interop]") {
    auto app = AppVulkan::create();
    if (!app) return;
    auto context = external_context(*app);
    const LayerData d;
    const ConvProblem& p = d.p;
    auto x = vkconv::Tensor::from_host(*context, p.input_shape(), d.x);
    auto w = vkconv::Tensor::from_host(*context, p.filter_shape(), d.w);
    auto b = vkconv::Tensor::from_host(*context, p.bias_shape(), d.b);
    auto dy = vkconv::Tensor::from_host(*context, p.output_shape(), d.dy);
    auto y = vkconv::Tensor(*context, p.output_shape());
    auto dx = vkconv::Tensor(*context, p.input_shape());
    auto dw = vkconv::Tensor(*context, p.filter_shape());
    auto db = vkconv::Tensor(*context, p.bias_shape());
    const uint64_t align = context->pool_stats().alignment;
    for (Algorithm algorithm : {Algorithm::Im2col, Algorithm::Mec}) {
        const uint64_t need = std::max({vkconv::forward_workspace_bytes(*context, p, algorithm),
                                        vkconv::layer_backward_workspace_bytes(*context, p, algorithm),
                                        vkconv::backward_bias_workspace_bytes(*context, p)});
        REQUIRE(need > 0);
        // The application's buffer, the workspace at an aligned offset; and a pool tensor as workspace.
        auto app_buffer =
            app->make_buffer(align + need, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                               VK_BUFFER_USAGE_TRANSFER_DST_BIT);
        {
            auto app_ws = vkconv::wrap_buffer(*context, app->range(app_buffer, align, need), {int64_t(need / 4)});
            auto pool_ws = vkconv::Tensor(*context, {int64_t(need / 4)});
            for (const vkconv::Tensor* ws : {&app_ws, &pool_ws}) {
                const std::string what = std::string(vkconv::to_string(algorithm)) +
                                         (ws == &app_ws ? ", application workspace" : ", pool workspace");
                vkconv::PassOptions options;
                options.workspace = ws;
                options.auto_choice = vkconv::AutoChoice::Heuristic;
                for (auto* t : {&y, &dx, &dw, &db}) t->upload(vkt::poison(t->elements()));
                const auto pool = context->pool_stats();
                const auto f = vkconv::forward(*context, p, x, w, &b, y, algorithm, options);
                const auto step = vkconv::layer_backward(*context, p, x, w, dy, dx, dw, &db, algorithm, options);
                const auto bias = vkconv::backward_bias(*context, p, dy, db, options);
                for (const vkconv::RunStats* s : {&f, &step.step, &bias}) {
                    CHECK(s->driver_allocations == 0);
                    CHECK(s->peak_bytes == pool.in_use);  // nothing allocated from the pool, not even for a moment
                }
                CHECK(f.workspace_bytes == vkconv::forward_workspace_bytes(*context, p, algorithm));
                CHECK(context->pool_stats().in_use == pool.in_use);
                CHECK(context->pool_stats().driver_allocations == pool.driver_allocations);
                d.check_forward(y.download(), what);
                d.check_backward(d.dy, dx.download(), dw.download(), db.download(), what);
            }
        }
        app->destroy(app_buffer);  // after the tensor over it
    }
}

TEST_CASE("a workspace smaller than a pass needs makes it plan within it, or is refused naming the sizes",
          "[interop]") {
    VKT_REQUIRE_CONTEXT(context);
    const LayerData d;
    const ConvProblem& p = d.p;
    auto x = vkconv::Tensor::from_host(*context, p.input_shape(), d.x);
    auto w = vkconv::Tensor::from_host(*context, p.filter_shape(), d.w);
    auto b = vkconv::Tensor::from_host(*context, p.bias_shape(), d.b);
    auto y = vkconv::Tensor::from_host(*context, p.output_shape(), vkt::poison(p.output_elements()));
    auto tiny = vkconv::Tensor(*context, {1});
    vkconv::PassOptions options;
    options.workspace = &tiny;
    try {
        vkconv::forward(*context, p, x, w, &b, y, Algorithm::Im2col, options);
        FAIL("im2col ran in a 4-byte workspace");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == vkconv::ErrorCategory::Unsupported);
        CHECK_THAT(e.what(), Catch::Contains("workspace limit"));
    }
    // Direct needs none; Auto (heuristic) picks what fits.
    options.auto_choice = vkconv::AutoChoice::Heuristic;
    const auto stats = vkconv::forward(*context, p, x, w, &b, y, Algorithm::Auto, options);
    CHECK(stats.workspace_bytes <= context->pool_stats().alignment);
    d.check_forward(y.download(), "auto in a tiny workspace");
    // A workspace that is one of the pass's tensors is refused.
    options.workspace = &x;
    CHECK_THROWS_AS(vkconv::forward(*context, p, x, w, &b, y, Algorithm::Im2col, options), vkconv::Error);
}

// Winograd on a CPU device reads its filter as quads and its products through texel views; an application's
// buffer (created without texel usage) is read through storage buffers instead, to the same bits. (Its
// accuracy against the reference is tests/test_winograd.cpp's.)
TEST_CASE("winograd reads an application's filter and workspace through storage buffers, to the same bits",
          "[interop]") {
    auto app = AppVulkan::create();
    if (!app) return;
    auto context = external_context(*app);
    // 8 channels a group: the filter's quads line up.
    const ConvProblem p = vkt::problem().batch(2).channels(8).image(10, 9).filters(6).kernel(3, 3).pad(1);
    const auto x = vkt::random_values(size_t(p.input_elements()), 21);
    const auto w = vkt::random_values(size_t(p.filter_elements()), 22);
    const uint64_t need = vkconv::forward_workspace_bytes(*context, p, Algorithm::Winograd), w_bytes = w.size() * 4;
    const VkBufferUsageFlags usage =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    auto ws_buffer = app->make_buffer(need, usage), w_buffer = app->make_buffer(w_bytes, usage);
    {
        auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
        auto pool_w = vkconv::Tensor::from_host(*context, p.filter_shape(), w);
        auto app_w = vkconv::wrap_buffer(*context, app->range(w_buffer, 0, w_bytes), p.filter_shape());
        app_w.upload(w);
        auto app_ws = vkconv::wrap_buffer(*context, app->range(ws_buffer, 0, need), {int64_t(need / 4)});
        std::vector<std::vector<float>> results;
        for (bool application : {false, true}) {
            auto y = vkconv::Tensor::from_host(*context, p.output_shape(), vkt::poison(p.output_elements()));
            vkconv::PassOptions options;
            if (application) options.workspace = &app_ws;
            vkconv::forward(*context, p, tx, application ? app_w : pool_w, nullptr, y, Algorithm::Winograd, options);
            results.push_back(y.download());
            CHECK(vkt::all_written(results.back()));
        }
        CHECK(std::memcmp(results[0].data(), results[1].data(), results[0].size() * 4) == 0);
    }
    app->destroy(ws_buffer);
    app->destroy(w_buffer);
}
