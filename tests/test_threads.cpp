// The thread model: calls on one Context from several threads at once are serialised by the context, and
// threads with Contexts of their own run side by side; either way every result is the single-thread one,
// bit for bit. (Catch2's assertions are not thread-safe: threads only compute, the test checks after.)
#include <atomic>
#include <thread>
#include <vector>

#include "conv_cases.hpp"
#include "gpu.hpp"
#include "test_util.hpp"

namespace {

using vkconv::Algorithm;
using vkconv::Tensor;

struct Outputs {
    std::vector<float> y, dx, dw, db;
    std::string error;
};

// Forward, backward-data and backward-filter with db of `p` with `algorithm`, on fresh tensors of
// `context`, `rounds` times (each a blocking call, or all three `recorded` and submitted together); the
// outputs of the last round.
Outputs run_layer(vkconv::Context& context, const vkconv::ConvProblem& p, Algorithm algorithm, int rounds,
                  bool recorded = false) {
    Outputs out;
    try {
        auto x = Tensor::from_host(context, p.input_shape(), vkt::random_values(p.input_elements(), 1));
        auto w = Tensor::from_host(context, p.filter_shape(), vkt::random_values(p.filter_elements(), 2));
        auto b = Tensor::from_host(context, p.bias_shape(), vkt::random_values(p.K, 3));
        auto dy = Tensor::from_host(context, p.output_shape(), vkt::random_values(p.output_elements(), 4));
        Tensor y(context, p.output_shape()), dx(context, p.input_shape()), dw(context, p.filter_shape()),
            db(context, p.bias_shape());
        for (int r = 0; r < rounds; ++r) {
            y.upload(vkt::poison(p.output_elements()));
            dx.upload(vkt::poison(p.input_elements()));
            dw.upload(vkt::poison(p.filter_elements()));
            db.upload(vkt::poison(p.K));
            auto passes = [&](auto& target) {
                vkconv::forward(target, p, x, w, &b, y, algorithm);
                vkconv::backward_data(target, p, dy, w, dx, algorithm);
                vkconv::backward_filter(target, p, x, dy, dw, &db, algorithm);
            };
            if (recorded) {
                vkconv::Recording recording(context);
                passes(recording);
                recording.submit().wait();
            } else {
                passes(context);
            }
        }
        out.y = y.download(), out.dx = dx.download(), out.dw = dw.download(), out.db = db.download();
    } catch (const std::exception& e) {
        out.error = e.what();
    }
    return out;
}

struct Job {
    vkconv::ConvProblem problem;
    Algorithm algorithm;
};

std::vector<Job> jobs() {
    const vkconv::ConvProblem a = vkt::problem().batch(2).channels(5).image(9, 8).filters(6).kernel(3, 3).pad(1).bias();
    const vkconv::ConvProblem d =
        vkt::problem().batch(3).channels(4).image(10, 7).depthwise(2).kernel(3, 3).pad(1).bias();
    return {{a, Algorithm::Im2col}, {a, Algorithm::Mec}, {d, Algorithm::Depthwise}, {a, Algorithm::Direct}};
}

void check_same(const Outputs& got, const Outputs& expected, size_t job) {
    INFO("job " << job << (got.error.empty() ? "" : ": " + got.error));
    REQUIRE(got.error.empty());
    CHECK(got.y == expected.y);
    CHECK(got.dx == expected.dx);
    CHECK(got.dw == expected.dw);
    CHECK(got.db == expected.db);
}

}  // namespace

TEST_CASE("several threads on one context get the single-thread results bit for bit", "[threads][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const auto list = jobs();
    std::vector<Outputs> expected;
    for (const Job& job : list) expected.push_back(run_layer(*context, job.problem, job.algorithm, 1));
    std::vector<Outputs> got(list.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < list.size(); ++i)
        threads.emplace_back([&, i] { got[i] = run_layer(*context, list[i].problem, list[i].algorithm, 3); });
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < list.size(); ++i) check_same(got[i], expected[i], i);
}

TEST_CASE("threads with contexts of their own get the single-thread results bit for bit", "[threads][gpu]") {
    VKT_REQUIRE_CONTEXT(shared);
    const auto list = jobs();
    std::vector<Outputs> expected;
    for (const Job& job : list) expected.push_back(run_layer(*shared, job.problem, job.algorithm, 1));
    std::vector<std::unique_ptr<vkconv::Context>> contexts;
    for (size_t i = 0; i < list.size(); ++i) contexts.push_back(vkt::fresh_context());
    std::vector<Outputs> got(list.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < list.size(); ++i)
        threads.emplace_back([&, i] { got[i] = run_layer(*contexts[i], list[i].problem, list[i].algorithm, 2); });
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < list.size(); ++i) check_same(got[i], expected[i], i);
}

namespace {

// One hammering thread's work: `rounds` times its layer on fresh tensors, blocking and recorded in turn;
// the outputs of its last round.
Outputs hammer(vkconv::Context& context, const Job& job, int rounds) {
    Outputs out;
    for (int r = 0; r < rounds && out.error.empty(); ++r)
        out = run_layer(context, job.problem, job.algorithm, 1, r % 2 == 1);
    return out;
}

}  // namespace

TEST_CASE("threads hammering one context and several contexts at once, blocking and recorded, stay exact",
          "[threads][hammer][gpu]") {
    // Eight threads on the shared context and two more on each of two contexts of their own, every one
    // running its layer 12 times (blocking and recorded in turn), while one more thread reads the pool's
    // counters, resets the peak and trims the cache of the shared context the whole time. Run under
    // -DVKCONV_SANITIZE=thread this is the data-race check of the thread model.
    VKT_REQUIRE_CONTEXT(shared);
    const auto list = jobs();
    std::vector<Outputs> expected;
    for (const Job& job : list) expected.push_back(run_layer(*shared, job.problem, job.algorithm, 1));
    const uint64_t in_use = shared->pool_stats().in_use;
    std::vector<std::unique_ptr<vkconv::Context>> own;
    for (int i = 0; i < 2; ++i) own.push_back(vkt::fresh_context());
    constexpr int kRounds = 12;
    struct Worker {
        vkconv::Context* context;
        size_t job;
    };
    std::vector<Worker> workers;
    for (size_t i = 0; i < 8; ++i) workers.push_back({shared, i % list.size()});
    for (size_t c = 0; c < own.size(); ++c)
        for (size_t i = 0; i < 2; ++i) workers.push_back({own[c].get(), (c + i) % list.size()});
    std::vector<Outputs> got(workers.size());
    std::atomic<bool> running{true};
    std::atomic<uint64_t> janitor_rounds{0};
    std::thread janitor([&] {
        while (running.load()) {
            (void)shared->pool_stats();
            shared->reset_peak();
            shared->trim();
            ++janitor_rounds;
            std::this_thread::yield();
        }
    });
    std::vector<std::thread> threads;
    for (size_t i = 0; i < workers.size(); ++i)
        threads.emplace_back([&, i] { got[i] = hammer(*workers[i].context, list[workers[i].job], kRounds); });
    for (auto& t : threads) t.join();
    running = false;
    janitor.join();
    for (size_t i = 0; i < workers.size(); ++i) check_same(got[i], expected[workers[i].job], workers[i].job);
    CHECK(janitor_rounds.load() > 0);
    CHECK(shared->pool_stats().in_use == in_use);  // every thread's tensors and workspaces given back
    for (auto& context : own) CHECK(context->pool_stats().in_use == 0);
}
