// find_algorithms and the measured Algorithm::Auto: results sorted and verified, the Auto cache in memory
// and in a file, budgets, and bad input.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "context/context_impl.hpp"
#include "select/find_cache.hpp"
#include "conv_cases.hpp"
#include "gpu.hpp"
#include "planted_fault.hpp"
#include "select/sampled_reference.hpp"
#include "test_util.hpp"

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Pass;

namespace {

ConvProblem odd_problem() {
    ConvProblem p;
    p.N = 2, p.C = 5, p.H = 11, p.W = 9, p.K = 7, p.R = 3, p.S = 2, p.pad_h = 1, p.pad_w = 1, p.stride_h = 2;
    p.has_bias = true;
    return p;
}

// find's candidates: every algorithm of the table that applies, once per form (algorithm_variants).
size_t candidates(Pass pass, const ConvProblem& p) {
    size_t count = 0;
    for (Algorithm algorithm : vkconv::all_algorithms())
        if (vkconv::algorithm_applies(algorithm, p, pass))
            count += std::max<size_t>(1, vkconv::algorithm_variants(algorithm, pass).size());
    return count;
}

uint64_t query_workspace(vkconv::Context& context, Pass pass, const ConvProblem& p, Algorithm algorithm,
                         vkconv::PassOptions options) {
    switch (pass) {
        case Pass::Forward:
            return vkconv::forward_workspace_bytes(context, p, algorithm, options);
        case Pass::BackwardData:
            return vkconv::backward_data_workspace_bytes(context, p, algorithm, options);
        case Pass::BackwardFilter:
            return vkconv::backward_filter_workspace_bytes(context, p, algorithm, options);
        case Pass::BackwardBias:
            FAIL("backward-bias has one algorithm and no workspace query");
    }
    return 0;
}

// Runs `pass` with Algorithm::Auto under `options` on NaN-poisoned outputs, checks every output against the
// CPU reference, and returns the pass's stats with the bytes the pool held before it (`live`).
struct AutoRun {
    vkconv::RunStats stats;
    uint64_t live = 0;
};
AutoRun run_auto_checked(vkconv::Context& context, Pass pass, const ConvProblem& p, const vkconv::PassOptions& options,
                         uint32_t seed) {
    INFO("Auto " << vkconv::to_string(pass) << " " << p.str());
    const auto x = vkt::random_values(p.input_elements(), seed), w = vkt::random_values(p.filter_elements(), seed + 1);
    const auto dy = vkt::random_values(p.output_elements(), seed + 2), b = vkt::random_values(p.K, seed + 3);
    const auto ax = vkt::absolute(x), aw = vkt::absolute(w), ady = vkt::absolute(dy), ab = vkt::absolute(b);
    auto tx = vkconv::Tensor::from_host(context, p.input_shape(), x);
    auto tw = vkconv::Tensor::from_host(context, p.filter_shape(), w);
    auto tb = vkconv::Tensor::from_host(context, p.bias_shape(), b);
    auto tdy = vkconv::Tensor::from_host(context, p.output_shape(), dy);
    auto out = vkconv::Tensor::from_host(context,
                                         pass == Pass::Forward        ? p.output_shape()
                                         : pass == Pass::BackwardData ? p.input_shape()
                                                                      : p.filter_shape(),
                                         vkt::poison(pass == Pass::Forward        ? p.output_elements()
                                                     : pass == Pass::BackwardData ? p.input_elements()
                                                                                  : p.filter_elements()));
    auto tdb = vkconv::Tensor::from_host(context, p.bias_shape(), vkt::poison(p.K));
    AutoRun run;
    run.live = context.pool_stats().in_use;
    const int64_t positions = p.N * p.P() * p.Q();
    switch (pass) {
        case Pass::Forward:
            run.stats = vkconv::forward(context, p, tx, tw, p.has_bias ? &tb : nullptr, out, Algorithm::Auto, options);
            vkt::check_close(out.download(), vkconv::reference::forward(p, x, w, b),
                             vkconv::reference::forward(p, ax, aw, ab), p.channels_per_group() * p.R * p.S + 1, "y");
            break;
        case Pass::BackwardData:
            run.stats = vkconv::backward_data(context, p, tdy, tw, out, Algorithm::Auto, options);
            vkt::check_close(out.download(), vkconv::reference::backward_data(p, dy, w),
                             vkconv::reference::backward_data(p, ady, aw), p.filters_per_group() * p.R * p.S, "dx");
            break;
        case Pass::BackwardFilter:
            run.stats = vkconv::backward_filter(context, p, tx, tdy, out, p.has_bias ? &tdb : nullptr, Algorithm::Auto,
                                                options);
            vkt::check_close(out.download(), vkconv::reference::backward_filter(p, x, dy),
                             vkconv::reference::backward_filter(p, ax, ady), positions, "dw");
            if (p.has_bias)
                vkt::check_close(tdb.download(), vkconv::reference::backward_bias(p, dy),
                                 vkconv::reference::backward_bias(p, ady), positions, "db");
            break;
        case Pass::BackwardBias:
            FAIL("backward-bias has one algorithm: Auto does not choose for it");
    }
    CHECK(run.stats.algorithm != Algorithm::Auto);
    return run;
}

std::string read_text(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("find runs every applicable algorithm, verified, sorted fastest first", "[find][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    for (auto layout : {vkconv::Layout::NCHW, vkconv::Layout::NHWC})
        for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
            auto p = odd_problem();
            p.layout = layout;
            INFO(vkconv::to_string(pass) << " " << p.str());
            const auto results = vkconv::find_algorithms(*context, pass, p);
            REQUIRE(results.size() == candidates(pass, p));
            for (size_t i = 0; i < results.size(); ++i) {
                const auto& r = results[i];
                INFO(vkconv::to_string(r.algorithm) << " " << r.variant);
                CHECK(r.verified);
                CHECK(r.error_over_bound <= 1.0);
                CHECK(r.deterministic);
                CHECK(r.ms > 0);
                if (i) CHECK(results[i - 1].ms <= r.ms);
                auto options = vkconv::PassOptions{};
                options.variant = r.variant;
                CHECK(r.workspace_bytes == query_workspace(*context, pass, p, r.algorithm, options));
                CHECK(r.peak_bytes >= r.workspace_bytes);
            }
            // Auto now runs find's fastest choice from the cache: no measuring (the pool holds nothing beyond
            // the live tensors and the pass's workspace, where measuring would add find's own operands), and
            // the workspace query agrees with what ran.
            const auto run = run_auto_checked(*context, pass, p, {}, 40 + uint32_t(pass));
            CHECK(run.stats.algorithm == results.front().algorithm);
            if (pass == Pass::Forward && run.stats.algorithm == Algorithm::Mec)
                CHECK(run.stats.variant == results.front().variant);
            CHECK(run.stats.workspace_bytes == results.front().workspace_bytes);
            CHECK(run.stats.workspace_bytes == query_workspace(*context, pass, p, Algorithm::Auto, {}));
            CHECK(run.stats.peak_bytes == run.live + run.stats.workspace_bytes);
        }
}

TEST_CASE("find rejects a candidate whose results are repeatable but wrong, and Auto never runs it", "[find][gpu]") {
    // Direct's kernels (every pass) go wrong in a way that repeats exactly, so a candidate's results being the
    // same run after run is no proof of them: scrambled (the first half of what each dispatch writes copied over
    // its last half) or skipped (the outputs keep the NaN find writes before each candidate).
    VKT_REQUIRE_CONTEXT(context);
    using Kind = vkt::PlantedFault::Kind;
    uint32_t seed = 700;
    for (Kind kind : {Kind::Scramble, Kind::Skip})
        for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
            auto p = odd_problem();
            p.W = kind == Kind::Skip ? 10 : 12;  // problems of their own: Auto's cache is the shared context's
            INFO(vkconv::to_string(pass) << " " << p.str() << ", direct's dispatches " << vkt::name_of(kind));
            const vkt::PlantedFault fault(*context, "conv2d_*", kind);
            const auto results = vkconv::find_algorithms(*context, pass, p);
            REQUIRE(results.size() == candidates(pass, p));
            for (const auto& r : results) {
                INFO(vkconv::to_string(r.algorithm) << " " << r.variant << ": error "
                                                    << r.error_over_bound << " x the bound");
                const bool broken = r.algorithm == Algorithm::Direct;
                CHECK(r.deterministic);  // the broken one too
                CHECK(r.verified == !broken);
                CHECK((r.error_over_bound <= 1.0) == !broken);
            }
            // The unverified one is listed last whatever its time, and never cached.
            CHECK(results.back().algorithm == Algorithm::Direct);
            const auto run = run_auto_checked(*context, pass, p, {}, seed += 4);
            CHECK(run.stats.algorithm == results.front().algorithm);
            CHECK(run.stats.algorithm != Algorithm::Direct);
        }
}

// The check find and bench run holds each algorithm to its own bound: Winograd's result (its error bounded
// normwise, up to 28 times fp32 summation's for F(4x4)) within Winograd's, and one wrong value at an output the
// check samples (the first) beyond it whatever the algorithm.
TEST_CASE("error_over_bound checks a result against the bound of the algorithm that wrote it", "[find][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    for (vkconv::DataType type : {vkconv::DataType::F32, vkconv::DataType::BF16}) {
        // (VGG's conv1, where bench's check, held to fp32 summation's bound, once stopped Winograd's F(4x4) result
        // at 1.49 times that bound.)
        ConvProblem p = vkt::problem().batch(1).channels(3).image(224, 224).filters(64).kernel(3, 3).pad(1);
        p.data_type = type;
        INFO(p.str());
        auto x = vkconv::Tensor::from_host(*context, p.input_shape(), vkt::random_values(size_t(p.input_elements()), 61), type);
        auto w = vkconv::Tensor::from_host(*context, p.filter_shape(), vkt::random_values(size_t(p.filter_elements()), 62), type);
        vkconv::Tensor y(*context, p.output_shape(), type);
        const std::vector<float> xv = x.download(), wv = w.download();
        for (Algorithm algorithm : {Algorithm::Winograd, Algorithm::Im2col}) {
            const vkconv::RunStats stats = vkconv::forward(*context, p, x, w, nullptr, y, algorithm);
            std::vector<float> result = y.download();
            const double ratio = vkconv::error_over_bound(Pass::Forward, p, stats.algorithm, stats.variant, xv, wv, {},
                                                          result);
            CHECK(ratio <= 1);
            result.front() += 0.25f * (1 + std::fabs(result.front()));
            CHECK(vkconv::error_over_bound(Pass::Forward, p, stats.algorithm, stats.variant, xv, wv, {}, result) > 1);
        }
    }
}

TEST_CASE("find offers depthwise for depthwise problems", "[find][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    ConvProblem p;
    p.N = 2, p.C = 6, p.H = 13, p.W = 10, p.K = 12, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1, p.groups = 6;
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
        const auto results = vkconv::find_algorithms(*context, pass, p);
        bool depthwise = false;
        for (const auto& r : results) {
            CHECK(r.verified);
            depthwise |= r.algorithm == Algorithm::Depthwise;
        }
        CHECK(depthwise);
    }
}

TEST_CASE("a workspace query with auto runs no GPU work, and covers whatever auto then measures", "[find][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    auto& impl = vkconv::detail::impl_of(*context);
    auto p = odd_problem();
    p.W = 15;  // measured by no other test on this context
    vkconv::PassOptions measure;
    measure.auto_choice = vkconv::AutoChoice::Measure;
    const auto query = [&](Pass pass) {
        if (pass == Pass::Forward) return vkconv::forward_workspace_bytes(*context, p, Algorithm::Auto, measure);
        if (pass == Pass::BackwardData)
            return vkconv::backward_data_workspace_bytes(*context, p, Algorithm::Auto, measure);
        return vkconv::backward_filter_workspace_bytes(*context, p, Algorithm::Auto, measure);
    };
    // Measuring would build pipelines, allocate find's operands and fill the cache: none of it happens.
    context->reset_peak();
    const size_t pipelines = impl.pipelines->size();
    const auto before = context->pool_stats();
    uint64_t bound[3];
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) bound[int(pass)] = query(pass);
    const uint64_t step_bound = vkconv::layer_backward_workspace_bytes(*context, p, Algorithm::Auto, measure);
    CHECK(impl.pipelines->size() == pipelines);
    CHECK(context->pool_stats().peak_in_use == before.peak_in_use);
    CHECK(context->pool_stats().driver_allocations == before.driver_allocations);
    // The bound is the most any candidate needs, so it covers each algorithm Auto may pick.
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter})
        for (Algorithm algorithm : vkt::algorithms_for(p)) {
            INFO(vkconv::to_string(pass) << " " << vkconv::to_string(algorithm));
            CHECK(query_workspace(*context, pass, p, algorithm, {}) <= bound[int(pass)]);
        }
    // Auto then measures and runs; what it ran fits the bound, and the query is now exact.
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
        INFO(vkconv::to_string(pass));
        const auto run = run_auto_checked(*context, pass, p, measure, 80 + uint32_t(pass));
        CHECK(run.stats.chosen_by == vkconv::ChoiceSource::Measured);
        CHECK(run.stats.workspace_bytes <= bound[int(pass)]);
        CHECK(query(pass) == run.stats.workspace_bytes);
    }
    const uint64_t step_exact = vkconv::layer_backward_workspace_bytes(*context, p, Algorithm::Auto, measure);
    CHECK(step_exact <= step_bound);
}

TEST_CASE("auto runs the measured choice and its workspace query agrees", "[find][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    auto p = odd_problem();
    p.W = 14;  // a problem no other test measured on this context
    const auto xs = vkt::random_values(p.input_elements(), 5), ws = vkt::random_values(p.filter_elements(), 6);
    auto x = vkconv::Tensor::from_host(*context, p.input_shape(), xs);
    auto w = vkconv::Tensor::from_host(*context, p.filter_shape(), ws);
    auto b = vkconv::Tensor::from_host(*context, p.bias_shape(), vkt::random_values(p.K, 7));
    vkconv::Tensor y(*context, p.output_shape());
    // The first Auto call asked to measure does (find's operands come and go); the rest, by default, reuse
    // the stored choice.
    vkconv::PassOptions measure;
    measure.auto_choice = vkconv::AutoChoice::Measure;
    const auto first = vkconv::forward(*context, p, x, w, &b, y, Algorithm::Auto, measure);
    CHECK(first.chosen_by == vkconv::ChoiceSource::Measured);
    const auto results = vkconv::find_algorithms(*context, Pass::Forward, p);
    const auto again = vkconv::forward(*context, p, x, w, &b, y);
    CHECK(again.chosen_by == vkconv::ChoiceSource::Stored);
    CHECK(again.algorithm == results.front().algorithm);
    if (again.algorithm == Algorithm::Mec) CHECK(again.variant == results.front().variant);
    CHECK(first.algorithm != Algorithm::Auto);
    CHECK(vkconv::forward_workspace_bytes(*context, p, Algorithm::Auto) == again.workspace_bytes);
    // Reusing the cache allocates nothing beyond the pass's workspace.
    CHECK(again.peak_bytes == again.operand_bytes + again.workspace_bytes);

    // The heuristic, when asked for, is choose_forward_algorithm's pick.
    vkconv::PassOptions heuristic;
    heuristic.auto_choice = vkconv::AutoChoice::Heuristic;
    CHECK(vkconv::forward(*context, p, x, w, &b, y, Algorithm::Auto, heuristic).algorithm ==
          vkconv::choose_forward_algorithm(*context, p, heuristic));
}

// A forward call with Auto on fresh tensors; `live` the pool's bytes in use before it.
struct AutoCall {
    vkconv::RunStats stats;
    uint64_t live = 0;
};
AutoCall forward_auto(vkconv::Context& context, const ConvProblem& p, const vkconv::PassOptions& options = {}) {
    auto x = vkconv::Tensor::from_host(context, p.input_shape(), vkt::random_values(p.input_elements(), 3));
    auto w = vkconv::Tensor::from_host(context, p.filter_shape(), vkt::random_values(p.filter_elements(), 4));
    auto b = vkconv::Tensor::from_host(context, p.bias_shape(), vkt::random_values(p.K, 5));
    vkconv::Tensor y(context, p.output_shape());
    AutoCall call;
    call.live = context.pool_stats().in_use;
    context.reset_peak();
    call.stats = vkconv::forward(context, p, x, w, &b, y, Algorithm::Auto, options);
    return call;
}

TEST_CASE("auto measures only when asked: the heuristic first, a stored measurement after, never in a recording",
          "[find][gpu]") {
    auto context = vkt::fresh_context();
    if (!context) return;
    auto& impl = vkconv::detail::impl_of(*context);
    auto p = odd_problem();
    p.W = 13;  // measured by no other test
    vkconv::PassOptions measure, heuristic;
    measure.auto_choice = vkconv::AutoChoice::Measure;
    heuristic.auto_choice = vkconv::AutoChoice::Heuristic;
    // By default a first call runs the heuristic's choice and nothing else: no find operands, no entry.
    const auto first = forward_auto(*context, p);
    CHECK(first.stats.chosen_by == vkconv::ChoiceSource::Heuristic);
    CHECK(first.stats.algorithm == vkconv::choose_forward_algorithm(*context, p));
    CHECK(context->pool_stats().peak_in_use == first.live + first.stats.workspace_bytes);
    CHECK_FALSE(impl.find_cache->lookup(Pass::Forward, p, {}));
    // Asked to measure, it measures once; the default then runs the stored measurement; the heuristic,
    // asked for, ignores it.
    const auto measured = forward_auto(*context, p, measure);
    CHECK(measured.stats.chosen_by == vkconv::ChoiceSource::Measured);
    REQUIRE(impl.find_cache->lookup(Pass::Forward, p, {}));
    const auto stored = forward_auto(*context, p);
    CHECK(stored.stats.chosen_by == vkconv::ChoiceSource::Stored);
    CHECK(stored.stats.algorithm == measured.stats.algorithm);
    CHECK(forward_auto(*context, p, heuristic).stats.chosen_by == vkconv::ChoiceSource::Heuristic);
    CHECK(forward_auto(*context, p, measure).stats.chosen_by == vkconv::ChoiceSource::Stored);  // measured once

    // The context's default, from its options: Measure there measures where the pass leaves it open.
    auto measuring_options = vkt::test_options();
    measuring_options.auto_choice = vkconv::AutoChoice::Measure;
    auto measuring = vkt::fresh_context(measuring_options);
    CHECK(forward_auto(*measuring, p).stats.chosen_by == vkconv::ChoiceSource::Measured);
    // Inside a recording nothing is measured, whatever is asked: the heuristic, and no entry stored.
    p.W = 12;
    auto x = vkconv::Tensor::from_host(*measuring, p.input_shape(), vkt::random_values(p.input_elements(), 3));
    auto w = vkconv::Tensor::from_host(*measuring, p.filter_shape(), vkt::random_values(p.filter_elements(), 4));
    auto b = vkconv::Tensor::from_host(*measuring, p.bias_shape(), vkt::random_values(p.K, 5));
    vkconv::Tensor y(*measuring, p.output_shape());
    vkconv::Recording recording(*measuring);
    const auto recorded = vkconv::forward(recording, p, x, w, &b, y, Algorithm::Auto, measure);
    recording.submit().wait();
    CHECK(recorded.chosen_by == vkconv::ChoiceSource::Heuristic);
    CHECK_FALSE(vkconv::detail::impl_of(*measuring).find_cache->lookup(Pass::Forward, p, {}));
    // The layer step says how each of its passes was chosen.
    vkconv::Tensor dy(*measuring, p.output_shape()), dx(*measuring, p.input_shape()), dw(*measuring, p.filter_shape());
    const auto step = vkconv::layer_backward(*measuring, p, x, w, dy, dx, dw, nullptr, Algorithm::Auto, heuristic);
    CHECK(step.data_chosen_by == vkconv::ChoiceSource::Heuristic);
    CHECK(step.filter_chosen_by == vkconv::ChoiceSource::Heuristic);
    CHECK(vkconv::layer_backward(*measuring, p, x, w, dy, dx, dw).data_chosen_by == vkconv::ChoiceSource::Measured);
}

TEST_CASE("VKCONV_AUTO_CHOICE sets a context's default, and a bad value is named", "[find][gpu]") {
    const vkt::ScopedEnv measure("VKCONV_AUTO_CHOICE", "measure");
    auto context = vkt::fresh_context();
    if (!context) return;
    auto p = odd_problem();
    p.W = 11;
    CHECK(forward_auto(*context, p).stats.chosen_by == vkconv::ChoiceSource::Measured);
    const vkt::ScopedEnv bad("VKCONV_AUTO_CHOICE", "sometimes");
    const auto e = vkt::thrown_error([&] { vkconv::Context c(vkt::test_options()); });
    CHECK(e.category() == vkconv::ErrorCategory::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("'sometimes'") && Catch::Contains("stored, measure or heuristic"));
}

TEST_CASE("find and auto honour the workspace limit", "[find][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    auto p = odd_problem();
    p.N = 3;
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
        INFO(vkconv::to_string(pass));
        const auto unlimited = vkconv::find_algorithms(*context, pass, p);
        uint64_t smallest_lowered = UINT64_MAX;
        for (const auto& r : unlimited)
            if (r.algorithm != Algorithm::Direct) smallest_lowered = std::min(smallest_lowered, r.workspace_bytes);
        vkconv::PassOptions options;
        options.workspace_limit = smallest_lowered - 1;
        const auto limited = vkconv::find_algorithms(*context, pass, p, options);
        REQUIRE(!limited.empty());
        for (const auto& r : limited) {
            INFO(vkconv::to_string(r.algorithm));
            CHECK(r.workspace_bytes <= options.workspace_limit);
            CHECK(r.verified);
        }
        // Auto under the limit runs the fastest choice that fit, within the limit, and gets the right answer.
        const auto run = run_auto_checked(*context, pass, p, options, 60 + uint32_t(pass));
        CHECK(run.stats.algorithm == limited.front().algorithm);
        CHECK(run.stats.workspace_bytes <= options.workspace_limit);
        CHECK(run.stats.peak_bytes == run.live + run.stats.workspace_bytes);
    }
    // Nothing fits (under a 1 KiB binding limit every algorithm runs in tiles, and even the smallest tiles
    // need more than 16 bytes of workspace): the error names the smallest workspace and the limit.
    auto small = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 1024});
    if (!small) return;
    vkconv::PassOptions tiny;
    tiny.workspace_limit = 16;
    const auto e = vkt::thrown_error([&] { vkconv::find_algorithms(*small, Pass::Forward, p, tiny); });
    CHECK(e.category() == vkconv::ErrorCategory::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("smallest workspace") && Catch::Contains("16 bytes"));
}

TEST_CASE("the auto cache file is written, read back and used", "[find][gpu]") {
    const vkt::TempDir dir("vkconv find cache");
    const std::string path = dir.file("find cache.txt");
    auto options = vkt::test_options();
    options.find_cache_path = path;
    auto p = odd_problem();
    Algorithm measured_winner = Algorithm::Auto;
    {
        auto context = vkt::fresh_context(options);
        if (!context) return;
        const auto results = vkconv::find_algorithms(*context, Pass::BackwardData, p);
        REQUIRE(!results.empty());
        measured_winner = results.front().algorithm;
        const std::string text = read_text(path);
        CHECK(text.rfind("vkconv-find-cache 1\n", 0) == 0);
        CHECK_THAT(text, Catch::Contains(p.str()) && Catch::Contains("backward-data") &&
                             Catch::Contains(vkconv::to_string(measured_winner)));
    }
    // Rewrite the cached choice to one the measurement did not make (direct, or im2col when direct won,
    // whichever algorithm the measurement picked): a new context must run it, which shows the choice
    // comes from the file.
    const Algorithm planted = measured_winner == Algorithm::Direct ? Algorithm::Im2col : Algorithm::Direct;
    std::string text = read_text(path);
    const std::string winner_field = std::string("\t") + vkconv::to_string(measured_winner) + "\t";
    const auto at = text.find(winner_field);
    REQUIRE(at != std::string::npos);
    text.replace(at, winner_field.size(), std::string("\t") + vkconv::to_string(planted) + "\t");
    std::ofstream(path, std::ios::trunc) << text;
    {
        auto context = vkt::fresh_context(options);
        vkconv::Tensor dy(*context, p.output_shape()), w(*context, p.filter_shape()), dx(*context, p.input_shape());
        const auto stats = vkconv::backward_data(*context, p, dy, w, dx);
        CHECK(stats.algorithm == planted);
        CHECK(stats.chosen_by == vkconv::ChoiceSource::Stored);  // the default starts measured from the file
        CHECK(stats.peak_bytes == stats.operand_bytes + stats.workspace_bytes);  // nothing measured
    }
}

TEST_CASE("a malformed or unwritable auto cache file is a clear error", "[find][gpu]") {
    if (!vkt::shared_context()) return;
    const vkt::TempDir dir("vkconv find cache");
    const std::string path = dir.file("bad cache.txt");
    auto options = vkt::test_options();
    options.find_cache_path = path;
    auto expect_bad = [&](const std::string& text, const std::string& why) {
        std::ofstream(path, std::ios::trunc) << text;
        INFO(text);
        const auto e = vkt::thrown_error([&] { vkt::fresh_context(options); });
        CHECK(e.category() == vkconv::ErrorCategory::InvalidArgument);
        CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains(why));
    };
    expect_bad("", "empty");
    expect_bad("not a cache\n", "line 1");
    expect_bad("vkconv-find-cache 1\ndevice\tforward\n", "line 2: expected 7");
    expect_bad("vkconv-find-cache 1\nd\tforward\tlimit=0\tN=1\tfastest\tAuto\t1\n", "unknown algorithm");
    expect_bad("vkconv-find-cache 1\nd\tsideways\tlimit=0\tN=1\tmec\tA\t1\n", "unknown pass");
    expect_bad("vkconv-find-cache 1\nd\tforward\tlimit=0\tN=1\tmec\tA\tsoon\n", "not a non-negative number");

    // A cache in a folder that does not exist: refused when the context is made, naming the file.
    options.find_cache_path = dir.file("no such folder") + "/cache.txt";
    const auto e = vkt::thrown_error([&] { vkt::fresh_context(options); });
    CHECK(e.category() == vkconv::ErrorCategory::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("no such folder") && Catch::Contains("does not exist or is not writable"));
}

TEST_CASE("a cached choice is measured again where it cannot run", "[find][gpu]") {
    // A file written by a context with the device's own limits, read by one whose binding limit is 4 KiB:
    // the device key differs (limits are part of it), so the second context measures for itself.
    const vkt::TempDir dir("vkconv find cache");
    auto options = vkt::test_options();
    options.find_cache_path = dir.file("cache.txt");
    ConvProblem p;
    p.N = 1, p.C = 4, p.H = 30, p.W = 40, p.K = 8, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1;
    {
        auto context = vkt::fresh_context(options);
        if (!context) return;
        vkconv::find_algorithms(*context, Pass::Forward, p);
    }
    auto small = vkt::fresh_context(options, {.max_storage_buffer_range = 4096});
    const auto stats = vkt::check_forward(*small, p, Algorithm::Auto, 3);
    CHECK(stats.algorithm != Algorithm::Auto);
    CHECK(stats.chunks > 1);  // tiles: one image is beyond 4 KiB
}

TEST_CASE("find measures every form: MEC's schedules and Winograd's tiles, each entry naming what ran",
          "[find][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    ConvProblem p;
    p.N = 2, p.C = 6, p.H = 13, p.W = 11, p.K = 5, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1;
    for (Pass pass : {Pass::Forward, Pass::BackwardData}) {
        INFO(vkconv::to_string(pass));
        const auto results = vkconv::find_algorithms(*context, pass, p);
        std::set<std::string> winograd, mec;
        for (const auto& r : results) {
            CHECK(r.verified);
            if (r.algorithm == Algorithm::Winograd) winograd.insert(r.variant);
            if (r.algorithm == Algorithm::Mec) mec.insert(r.variant);
            if (r.algorithm != Algorithm::Winograd && r.algorithm != Algorithm::Mec) CHECK(r.variant.empty());
        }
        CHECK(winograd == std::set<std::string>{"F(4x4,3x3)", "F(2x2,3x3)"});
        CHECK(mec == (pass == Pass::Forward ? std::set<std::string>{"A", "B"} : std::set<std::string>{""}));
        // Each entry's form, asked for by name, plans the workspace it measured.
        for (const auto& r : results) {
            INFO(vkconv::to_string(r.algorithm) << " " << r.variant);
            const vkconv::PassOptions named{.variant = r.variant};
            CHECK(r.workspace_bytes == (pass == Pass::Forward
                                            ? vkconv::forward_workspace_bytes(*context, p, r.algorithm, named)
                                            : vkconv::backward_data_workspace_bytes(*context, p, r.algorithm, named)));
        }
    }
}

TEST_CASE("find gives a forward MEC schedule per entry, tiled too", "[find][gpu]") {
    auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 4096});
    if (!context) return;
    ConvProblem p;
    p.N = 2, p.C = 5, p.H = 23, p.W = 17, p.K = 6, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1;
    // Each MEC entry names the schedule that ran (here the tiles' bands run B, whatever was asked), and
    // no (algorithm, schedule) appears twice.
    const auto results = vkconv::find_algorithms(*context, Pass::Forward, p);
    for (size_t i = 0; i < results.size(); ++i) {
        if (results[i].algorithm == Algorithm::Mec) CHECK_FALSE(results[i].variant.empty());
        for (size_t j = 0; j < i; ++j)
            CHECK_FALSE(
                (results[j].algorithm == results[i].algorithm && results[j].variant == results[i].variant));
    }
}

TEST_CASE("find rejects bad options and problems", "[find][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    vkconv::PassOptions none;
    none.find_repeats = 0;
    vkt::invalid_argument_message([&] { vkconv::find_algorithms(*context, Pass::Forward, odd_problem(), none); });
    auto bad = odd_problem();
    bad.groups = 2;  // C = 5 is not a multiple
    vkt::invalid_argument_message([&] { vkconv::find_algorithms(*context, Pass::Forward, bad); });
    CHECK(vkconv::parse_pass("Backward-Filter") == Pass::BackwardFilter);
    CHECK(vkconv::parse_pass("backward-bias") == Pass::BackwardBias);
    vkt::invalid_argument_message([&] { vkconv::parse_pass("backward"); });
    // Backward-bias has one algorithm: nothing to choose among.
    const std::string one =
        vkt::invalid_argument_message([&] { vkconv::find_algorithms(*context, Pass::BackwardBias, odd_problem()); });
    CHECK(one.find("backward-bias") != std::string::npos);
}

TEST_CASE("the sampled reference agrees with the full reference and catches a wrong value", "[find]") {
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter, Pass::BackwardBias})
        for (auto layout : {vkconv::Layout::NCHW, vkconv::Layout::NHWC}) {
            auto p = odd_problem();
            p.layout = layout, p.groups = 1, p.dilation_w = 2, p.W = 12;
            INFO(vkconv::to_string(pass) << " " << p.str());
            const auto x = vkt::random_values(p.input_elements(), 1), w = vkt::random_values(p.filter_elements(), 2);
            const auto dy = vkt::random_values(p.output_elements(), 3), b = vkt::random_values(p.K, 4);
            std::vector<double> exact;
            std::vector<float> a_in, b_in, bias;
            if (pass == Pass::Forward) exact = vkconv::reference::forward(p, x, w, b), a_in = x, b_in = w, bias = b;
            if (pass == Pass::BackwardData) exact = vkconv::reference::backward_data(p, dy, w), a_in = dy, b_in = w;
            if (pass == Pass::BackwardFilter) exact = vkconv::reference::backward_filter(p, x, dy), a_in = x, b_in = dy;
            if (pass == Pass::BackwardBias) exact = vkconv::reference::backward_bias(p, dy), a_in = dy;
            std::vector<float> result(exact.begin(), exact.end());
            CHECK(vkconv::detail::sampled_error_over_bound(pass, p, a_in, b_in, bias, result, result.size()) <= 1.0);
            result.back() += 0.01f;  // the last output is always sampled
            CHECK(vkconv::detail::sampled_error_over_bound(pass, p, a_in, b_in, bias, result, 8) > 1.0);
        }
}
