// Device loss through the path a real one takes: the i-th submission, fence wait (or status query) or memory
// mapping of a training step returns VK_ERROR_DEVICE_LOST (testing::inject_device_loss), for every i in
// turn. Each time the step throws Error(DeviceLost); every later call on that context fails the same way
// without one more device call or Vulkan object; and the tensors and the context die quietly (the
// runner fails on any validation message, a sanitizer build on any leak, ctest's timeout on a hang).
#include <memory>

#include <vkconv/testing.hpp>
#include "gpu.hpp"
#include "test_util.hpp"

using vkconv::Algorithm;
using vkconv::ErrorCategory;
using vkconv::Tensor;

namespace {

struct Step {
    std::unique_ptr<Tensor> x, w, b, dy, y, dx, dw, db;
};

// A training step from nothing: the operands uploaded (the first upload maps the staging memory), forward
// and the whole backward pass blocking, the forward again recorded and submitted (its status queried once,
// then waited for), and the gradients downloaded. Its device calls are the same on every run.
std::vector<float> run_step(vkconv::Context& context, const vkconv::ConvProblem& p, Algorithm algorithm, Step& s) {
    s.x = std::make_unique<Tensor>(Tensor::from_host(context, p.input_shape(), vkt::random_values(p.input_elements(), 1)));
    s.w = std::make_unique<Tensor>(Tensor::from_host(context, p.filter_shape(), vkt::random_values(p.filter_elements(), 2)));
    s.b = std::make_unique<Tensor>(Tensor::from_host(context, p.bias_shape(), vkt::random_values(p.K, 3)));
    s.dy = std::make_unique<Tensor>(Tensor::from_host(context, p.output_shape(), vkt::random_values(p.output_elements(), 4)));
    s.y = std::make_unique<Tensor>(context, p.output_shape());
    s.dx = std::make_unique<Tensor>(context, p.input_shape());
    s.dw = std::make_unique<Tensor>(context, p.filter_shape());
    s.db = std::make_unique<Tensor>(context, p.bias_shape());
    vkconv::forward(context, p, *s.x, *s.w, s.b.get(), *s.y, algorithm);
    vkconv::layer_backward(context, p, *s.x, *s.w, *s.dy, *s.dx, *s.dw, s.db.get(), algorithm);
    vkconv::Recording recording(context);
    vkconv::forward(recording, p, *s.x, *s.w, s.b.get(), *s.y, algorithm);
    vkconv::Submission submission = recording.submit();
    (void)submission.done();
    submission.wait();
    std::vector<float> out = s.y->download();
    for (const Tensor* t : {s.dx.get(), s.dw.get(), s.db.get()}) {
        const auto values = t->download();
        out.insert(out.end(), values.begin(), values.end());
    }
    return out;
}

// Every call that would touch the device throws DeviceLost, and none of them reaches it.
void check_fails_fast(vkconv::Context& context, const vkconv::ConvProblem& p, Algorithm algorithm, Step& s) {
    const uint64_t calls = vkconv::testing::device_calls(context);
    const uint64_t objects = vkconv::testing::vulkan_objects_created(context);
    auto lost = [](auto&& call) {
        CHECK(vkt::thrown_error(call).category() == ErrorCategory::DeviceLost);
    };
    lost([&] { Tensor t(context, {4}); });
    lost([&] { Tensor::from_host(context, {2}, std::vector<float>{1, 2}); });
    lost([&] { vkconv::Recording r(context); });
    if (s.x && s.w && s.y) {
        lost([&] { vkconv::forward(context, p, *s.x, *s.w, nullptr, *s.y, algorithm); });
        lost([&] { s.x->upload(vkt::random_values(p.input_elements(), 5)); });
        lost([&] { (void)s.y->download(); });
    }
    if (s.x && s.w && s.dy && s.dx && s.dw && s.db) {
        lost([&] { vkconv::layer_backward(context, p, *s.x, *s.w, *s.dy, *s.dx, *s.dw, s.db.get(), algorithm); });
        lost([&] { vkconv::backward_data(context, p, *s.dy, *s.w, *s.dx, algorithm); });
        lost([&] { vkconv::backward_filter(context, p, *s.x, *s.dy, *s.dw, s.db.get(), algorithm); });
    }
    CHECK(vkconv::testing::device_calls(context) == calls);
    CHECK(vkconv::testing::vulkan_objects_created(context) == objects);
}

}  // namespace

TEST_CASE("device loss at every submission, fence wait and mapping of a step: sticky, fast, clean teardown",
          "[device-loss][gpu]") {
    vkconv::ConvProblem p;
    p.N = 2, p.C = 3, p.H = 9, p.W = 7, p.K = 5, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1, p.has_bias = true;
    for (Algorithm algorithm : {Algorithm::Im2col, Algorithm::Mec, Algorithm::Direct}) {
        INFO(vkconv::to_string(algorithm));
        // The step's device calls, counted on a clean run; the same step with loss injected at each.
        uint64_t calls = 0;
        std::vector<float> clean;
        {
            auto context = vkt::fresh_context();
            if (!context) return;
            const uint64_t before = vkconv::testing::device_calls(*context);
            Step s;
            clean = run_step(*context, p, algorithm, s);
            calls = vkconv::testing::device_calls(*context) - before;
        }
        REQUIRE(calls >= 10);  // uploads, passes, the recorded submission and downloads all count
        for (uint64_t i = 1; i <= calls; ++i) {
            INFO("device lost at device call " << i << " of " << calls);
            auto context = vkt::fresh_context();
            REQUIRE(context);
            Step s;
            vkconv::testing::inject_device_loss(*context, i);
            const vkconv::Error e = vkt::thrown_error([&] { run_step(*context, p, algorithm, s); });
            CHECK(e.category() == ErrorCategory::DeviceLost);
            CHECK(vkconv::testing::device_calls(*context) == i);  // nothing after the lost call reached the device
            check_fails_fast(*context, p, algorithm, s);
            // The tensors die first (the usual order), then the context.
            CHECK_NOTHROW(s = Step{});
            CHECK_NOTHROW(context.reset());
        }
        // Past the step's last call the injection never fires: the step completes with the clean results.
        auto context = vkt::fresh_context();
        REQUIRE(context);
        vkconv::testing::inject_device_loss(*context, calls + 1);
        Step s;
        CHECK(run_step(*context, p, algorithm, s) == clean);
    }
}

TEST_CASE("a context lost after its tensors were made still lets them die quietly, also when destroyed first",
          "[device-loss][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    vkconv::ConvProblem p;
    p.C = 2, p.H = 4, p.W = 4, p.K = 2, p.R = 3, p.S = 3;
    auto x = std::make_unique<Tensor>(Tensor::from_host(*context, p.input_shape(), vkt::random_values(p.input_elements(), 1)));
    Tensor w(*context, p.filter_shape()), y(*context, p.output_shape());
    vkconv::testing::inject_device_loss(*context, 1);
    CHECK(vkt::thrown_error([&] { vkconv::forward(*context, p, *x, w, nullptr, y); }).category() ==
          ErrorCategory::DeviceLost);
    CHECK(vkt::thrown_error([&] { y.download(); }).category() == ErrorCategory::DeviceLost);
    // The context goes before its tensors: they keep what they need alive and release it quietly.
    CHECK_NOTHROW(context.reset());
    CHECK_NOTHROW(x.reset());
}
