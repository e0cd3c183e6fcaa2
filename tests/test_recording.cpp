// Recordings on vkconv's own queue (recording.hpp): passes recorded now run at submit, in order, each seeing
// what the earlier ones wrote; workspace is held and reused until the submission is waited for; a spent or
// broken recording refuses more work; steady-state recordings create no Vulkan object.
#include <cmath>
#include <limits>

#include "conv_cases.hpp"
#include "test_util.hpp"
#include "vkconv/testing.hpp"

namespace {

using vkconv::Algorithm;
using vkconv::ConvProblem;

bool all_nan(const std::vector<float>& values) {
    for (float v : values)
        if (!std::isnan(v)) return false;
    return true;
}

// One training step's tensors: forward y = conv(x, w) + b, then the backward step with dy = y (so the
// backward passes read what the forward pass of the same recording wrote).
struct Step {
    ConvProblem p;
    std::vector<float> x, w, b;
    vkconv::Tensor tx, tw, tb, y, dx, dw, db;
    Step(vkconv::Context& context, const ConvProblem& problem)
        : p(problem),
          x(vkt::random_values(size_t(p.input_elements()), 11)),
          w(vkt::random_values(size_t(p.filter_elements()), 12)),
          b(vkt::random_values(size_t(p.K), 13)),
          tx(vkconv::Tensor::from_host(context, p.input_shape(), x)),
          tw(vkconv::Tensor::from_host(context, p.filter_shape(), w)),
          tb(vkconv::Tensor::from_host(context, p.bias_shape(), b)),
          y(context, p.output_shape()),
          dx(context, p.input_shape()),
          dw(context, p.filter_shape()),
          db(context, p.bias_shape()) {}
    void poison_outputs() {
        for (vkconv::Tensor* t : {&y, &dx, &dw, &db}) t->upload(vkt::poison(t->elements()));
    }
    void record(vkconv::Recording& recording, Algorithm algorithm, const vkconv::PassOptions& options = {}) {
        vkconv::forward(recording, p, tx, tw, &tb, y, algorithm, options);
        vkconv::layer_backward(recording, p, tx, tw, y, dx, dw, &db, algorithm, options);
    }
    void check(const std::string& what) const {
        const auto y_ref = vkconv::reference::forward(p, x, w, b);
        const auto y_mag = vkconv::reference::forward(p, vkt::absolute(x), vkt::absolute(w), vkt::absolute(b));
        const auto gpu_y = y.download();
        vkt::check_close(gpu_y, y_ref, y_mag, p.C / p.groups * p.R * p.S + 1, what + ": forward");
        // The backward passes took the GPU's y as dy: the reference takes the same values.
        const auto dx_ref = vkconv::reference::backward_data(p, gpu_y, w);
        const auto dx_mag = vkconv::reference::backward_data(p, vkt::absolute(gpu_y), vkt::absolute(w));
        vkt::check_close(dx.download(), dx_ref, dx_mag, p.K / p.groups * p.R * p.S, what + ": backward-data");
        const auto dw_ref = vkconv::reference::backward_filter(p, x, gpu_y);
        const auto dw_mag = vkconv::reference::backward_filter(p, vkt::absolute(x), vkt::absolute(gpu_y));
        vkt::check_close(dw.download(), dw_ref, dw_mag, p.N * p.P() * p.Q(), what + ": backward-filter");
        const auto db_ref = vkconv::reference::backward_bias(p, gpu_y);
        const auto db_mag = vkconv::reference::backward_bias(p, vkt::absolute(gpu_y));
        vkt::check_close(db.download(), db_ref, db_mag, p.N * p.P() * p.Q(), what + ": backward-bias");
    }
};

ConvProblem step_problem() {
    return vkt::problem().batch(2).channels(6).image(13, 10).filters(4).kernel(3, 3).pad(1, 0).stride(1, 2).bias();
}

}  // namespace

TEST_CASE("recorded passes run only when submitted, in order, each seeing the earlier ones' results", "[recording]") {
    VKT_REQUIRE_CONTEXT(context);
    for (Algorithm algorithm : {Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec}) {
        const std::string what = std::string("recorded, ") + vkconv::to_string(algorithm);
        Step step(*context, step_problem());
        step.poison_outputs();
        vkconv::Recording recording(*context);
        step.record(recording, algorithm);
        CHECK(recording.passes() == 2);
        CHECK_FALSE(recording.external());
        // Nothing ran yet.
        CHECK(all_nan(step.y.download()));
        CHECK(all_nan(step.dw.download()));
        vkconv::Submission submission = recording.submit();
        CHECK_FALSE(submission.empty());
        submission.wait();
        CHECK(submission.done());
        step.check(what);
        // The recording is spent.
        CHECK_THROWS_AS(recording.submit(), vkconv::Error);
        CHECK_THROWS_AS(vkconv::forward(recording, step.p, step.tx, step.tw, &step.tb, step.y, algorithm),
                        vkconv::Error);
    }
}

TEST_CASE("a recording holds the largest workspace its passes need, not the sum, until it completes", "[recording]") {
    VKT_REQUIRE_CONTEXT(context);
    const ConvProblem p = step_problem();
    Step step(*context, p);
    vkconv::PassOptions options;
    options.auto_choice = vkconv::AutoChoice::Heuristic;
    const uint64_t forward_bytes = vkconv::forward_workspace_bytes(*context, p, Algorithm::Im2col, options);
    const uint64_t step_bytes = vkconv::layer_backward_workspace_bytes(*context, p, Algorithm::Im2col, options);
    REQUIRE(forward_bytes > 0);
    const uint64_t in_use = context->pool_stats().in_use;
    step.poison_outputs();
    vkconv::Submission submission;
    {
        vkconv::Recording recording(*context);
        for (int i = 0; i < 3; ++i) step.record(recording, Algorithm::Im2col, options);
        CHECK(recording.passes() == 6);
        // Six passes share what the largest slot set needs (the forward's and the step's slots overlap).
        CHECK(recording.workspace_bytes() <= forward_bytes + step_bytes);
        CHECK(recording.workspace_bytes() >= std::max(forward_bytes, step_bytes));
        CHECK(context->pool_stats().in_use == in_use + recording.workspace_bytes());
        submission = recording.submit();
    }
    // The recording object is gone; its submission still holds the workspace until waited for.
    CHECK(context->pool_stats().in_use > in_use);
    submission.wait();
    CHECK(context->pool_stats().in_use == in_use);
    step.check("three recorded steps");
}

TEST_CASE("a recording dropped unsubmitted runs nothing and gives everything back", "[recording]") {
    VKT_REQUIRE_CONTEXT(context);
    Step step(*context, step_problem());
    step.poison_outputs();
    const uint64_t in_use = context->pool_stats().in_use;
    {
        vkconv::Recording recording(*context);
        step.record(recording, Algorithm::Mec);
    }
    CHECK(context->pool_stats().in_use == in_use);
    CHECK(all_nan(step.y.download()));
    CHECK(all_nan(step.dx.download()));
    // A blocking call afterwards, and a Submission dropped without wait (its destructor waits).
    {
        vkconv::Recording recording(*context);
        step.record(recording, Algorithm::Mec);
        vkconv::Submission dropped = recording.submit();
    }
    CHECK(context->pool_stats().in_use == in_use);
    step.check("submission destroyed without an explicit wait");
}

TEST_CASE("blocking calls queue behind a submission nobody waited for", "[recording]") {
    VKT_REQUIRE_CONTEXT(context);
    Step step(*context, step_problem());
    step.poison_outputs();
    vkconv::Recording recording(*context);
    vkconv::forward(recording, step.p, step.tx, step.tw, &step.tb, step.y, Algorithm::Im2col);
    vkconv::Submission pending = recording.submit();
    // Not waited for: the blocking backward step reads y, which the submission writes.
    vkconv::layer_backward(*context, step.p, step.tx, step.tw, step.y, step.dx, step.dw, &step.db, Algorithm::Im2col);
    step.check("blocking step after an unwaited submission");
    pending.wait();
}

TEST_CASE("gemm and backward-bias record too", "[recording]") {
    VKT_REQUIRE_CONTEXT(context);
    const int64_t M = 7, K = 5, N = 9;
    const auto a = vkt::random_values(size_t(M * K), 21), b = vkt::random_values(size_t(K * N), 22);
    auto ta = vkconv::Tensor::from_host(*context, {M, K}, a);
    auto tb = vkconv::Tensor::from_host(*context, {K, N}, b);
    auto tc = vkconv::Tensor::from_host(*context, {M, N}, vkt::poison(M * N));
    const ConvProblem p = step_problem();
    const auto dy = vkt::random_values(size_t(p.output_elements()), 23);
    auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
    auto db = vkconv::Tensor::from_host(*context, p.bias_shape(), vkt::poison(p.K));
    vkconv::Recording recording(*context);
    const auto g = vkconv::gemm(recording, ta, tb, tc);
    CHECK(g.dispatches >= 1);
    CHECK_FALSE(g.gpu_timed);
    const auto s = vkconv::backward_bias(recording, p, tdy, db);
    CHECK(s.gpu_ms == 0);
    CHECK(all_nan(tc.download()));
    recording.submit().wait();
    const auto c = tc.download();
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
            double sum = 0, mag = 0;
            for (int64_t k = 0; k < K; ++k) {
                sum += double(a[size_t(m * K + k)]) * b[size_t(k * N + n)];
                mag += std::fabs(double(a[size_t(m * K + k)]) * b[size_t(k * N + n)]);
            }
            REQUIRE(std::fabs(c[size_t(m * N + n)] - sum) <= (K + 2) * std::ldexp(1.0, -24) * mag + 1e-30);
        }
    const auto db_ref = vkconv::reference::backward_bias(p, dy);
    const auto db_mag = vkconv::reference::backward_bias(p, vkt::absolute(dy));
    vkt::check_close(db.download(), db_ref, db_mag, p.N * p.P() * p.Q(), "recorded backward-bias");
}

TEST_CASE("steady-state recordings create no Vulkan object", "[recording][steady]") {
    VKT_REQUIRE_CONTEXT(context);
    Step step(*context, step_problem());
    vkconv::PassOptions options;
    options.auto_choice = vkconv::AutoChoice::Heuristic;
    auto one_step = [&] {
        vkconv::Recording recording(*context);
        step.record(recording, Algorithm::Auto, options);
        recording.submit().wait();
    };
    one_step();  // pipelines, pool blocks, stream resources, views: made once
    const uint64_t before = vkconv::testing::vulkan_objects_created(*context);
    for (int i = 0; i < 5; ++i) one_step();
    CHECK(vkconv::testing::vulkan_objects_created(*context) == before);
    step.poison_outputs();
    one_step();
    step.check("steady state");
}
