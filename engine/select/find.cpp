// find_algorithms: every applicable algorithm run, timed and spot-checked on synthetic operands; and
// Algorithm::Auto's use of it through the context's cache.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>
#include <random>

#include "context/context_impl.hpp"
#include "select/auto_choice.hpp"
#include "conv/heuristic.hpp"
#include "conv/winograd/winograd.hpp"
#include "select/find_cache.hpp"
#include "select/sampled_reference.hpp"

namespace vkconv {

namespace {

constexpr size_t kVerifiedSamples = 64;

std::vector<float> synthetic_values(int64_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    // Positive: nothing cancels, so the fp32 bound is tight enough that a sum cut short fails verification
    // (with random signs a long sum is small next to its bound).
    std::uniform_real_distribution<float> dist(0.5f, 1.0f);
    std::vector<float> values(static_cast<size_t>(count));
    for (float& v : values) v = dist(rng);
    return values;
}

// The pass's operands, synthetic, and one way to run it with a given algorithm.
struct Bench {
    Context& context;
    Pass pass;
    const ConvProblem& problem;
    std::vector<float> a, b, bias;  // as sampled_error_over_bound takes them
    Tensor ta, tb, tbias, result, grad_bias;

    Bench(Context& ctx, Pass ps, const ConvProblem& p) : context(ctx), pass(ps), problem(p) {
        const Shape a_shape = pass == Pass::BackwardData ? p.output_shape() : p.input_shape();
        const Shape b_shape = pass == Pass::BackwardFilter ? p.output_shape() : p.filter_shape();
        const Shape result_shape = pass == Pass::Forward        ? p.output_shape()
                                   : pass == Pass::BackwardData ? p.input_shape()
                                                                : p.filter_shape();
        // Tensors of the problem's type; the host copies are the values they hold (narrowed, for 16 bits).
        const DataType type = p.data_type;
        ta = Tensor::from_host(ctx, a_shape, synthetic_values(shape_elements(a_shape), 1), type);
        tb = Tensor::from_host(ctx, b_shape, synthetic_values(shape_elements(b_shape), 2), type);
        a = ta.download(), b = tb.download();
        // (dw and db in the weight-gradient type: fp32 with ConvProblem::fp32_weight_gradients.)
        const DataType gradient_type = p.weight_gradient_type();
        result = Tensor(ctx, result_shape, pass == Pass::BackwardFilter ? gradient_type : type);
        if (p.has_bias && pass == Pass::Forward) {
            tbias = Tensor::from_host(ctx, p.bias_shape(), synthetic_values(p.K, 3), type);
            bias = tbias.download();
        }
        // Backward-filter with a bias computes db in the same pass, as a training step would ask for it.
        if (p.has_bias && pass == Pass::BackwardFilter) grad_bias = Tensor(ctx, p.bias_shape(), gradient_type);
    }

    RunStats run(Algorithm algorithm, const PassOptions& options) {
        switch (pass) {
            case Pass::Forward:
                return forward(context, problem, ta, tb, tbias.empty() ? nullptr : &tbias, result, algorithm, options);
            case Pass::BackwardData:
                return backward_data(context, problem, ta, tb, result, algorithm, options);
            case Pass::BackwardFilter:
                return backward_filter(context, problem, ta, tb, result, grad_bias.empty() ? nullptr : &grad_bias,
                                       algorithm, options);
            case Pass::BackwardBias:
                break;  // refused by find_algorithms
        }
        return {};
    }
};

// Every algorithm that applies to the problem, once per form (the table's variants) where options.variant is
// empty; the form asked for where the algorithm has it; else as it is.
std::vector<std::pair<Algorithm, std::string>> candidates_for(Pass pass, const ConvProblem& problem,
                                                              const PassOptions& options) {
    std::vector<std::pair<Algorithm, std::string>> candidates;
    for (Algorithm algorithm : all_algorithms()) {
        if (!algorithm_applies(algorithm, problem, pass)) continue;
        const std::vector<std::string> forms = algorithm_variants(algorithm, pass);
        if (options.variant.empty() && !forms.empty()) {
            for (const std::string& form : forms) candidates.emplace_back(algorithm, form);
        } else {
            const bool has = std::find(forms.begin(), forms.end(), options.variant) != forms.end();
            candidates.emplace_back(algorithm, has ? options.variant : std::string());
        }
    }
    return candidates;
}

// A candidate's times and memory, and the output of its first (untimed) run.
struct Timing {
    AlgorithmPerf perf;
    std::vector<float> first;
};

// One run to build the pipelines, then options.find_repeats timed ones; throws what the pass throws.
Timing time_candidate(Bench& bench, const std::vector<float>& poison, Algorithm algorithm, const std::string& form,
                      const PassOptions& options) {
    PassOptions run_options = options;
    run_options.variant = form;
    Timing timing;
    AlgorithmPerf& perf = timing.perf;
    perf.algorithm = algorithm;
    bench.result.upload(poison);
    const RunStats warm = bench.run(algorithm, run_options);  // builds the pipelines
    timing.first = bench.result.download();
    perf.ms = std::numeric_limits<double>::infinity();
    perf.peak_bytes = warm.peak_bytes;
    for (uint32_t r = 0; r < options.find_repeats; ++r) {
        const RunStats stats = bench.run(algorithm, run_options);
        perf.ms = std::min(perf.ms, stats.gpu_ms);
        perf.peak_bytes = std::max(perf.peak_bytes, stats.peak_bytes);
        perf.workspace_bytes = stats.workspace_bytes;
        perf.chunks = stats.chunks;
        perf.variant = stats.variant;  // what ran: MEC's tiled bands run B whatever was asked
    }
    return timing;
}

// Whether the last run's output is the first run's, bit for bit, and within the bound at sampled points.
void verify(Bench& bench, const std::vector<float>& first, AlgorithmPerf& perf) {
    const std::vector<float> last = bench.result.download();
    perf.deterministic = std::memcmp(first.data(), last.data(), first.size() * sizeof(float)) == 0;
    perf.error_over_bound = error_over_bound(bench.pass, bench.problem, perf.algorithm, perf.variant, bench.a, bench.b,
                                             bench.bias, last, kVerifiedSamples);
    perf.verified = perf.error_over_bound <= 1.0;
}

// The candidates that ran, timed and verified, in candidate order; `last_error`: why the last one that
// could not run did not.
std::vector<AlgorithmPerf> measure_candidates(Bench& bench,
                                              const std::vector<std::pair<Algorithm, std::string>>& candidates,
                                              const PassOptions& options, std::optional<Error>& last_error) {
    // NaN before every candidate: an algorithm that leaves outputs unwritten cannot pass on the values
    // the previous one wrote.
    const std::vector<float> poison(size_t(bench.result.elements()), std::numeric_limits<float>::quiet_NaN());
    std::vector<AlgorithmPerf> results;
    for (const auto& [algorithm, form] : candidates) {
        // One that does not fit the limits is not a candidate.
        const auto plan = detail::plan_choice(bench.context, bench.problem, bench.pass, {algorithm, form}, options);
        if (!plan) {
            last_error = Error(plan.refusal().category, plan.refusal().reason);
            continue;
        }
        Timing timing;
        try {
            timing = time_candidate(bench, poison, algorithm, form, options);
        } catch (const Error& e) {
            // The memory it needs is not there now: not a candidate either.
            if (e.category() != ErrorCategory::OutOfDeviceMemory) throw;
            last_error = e;
            continue;
        }
        AlgorithmPerf& perf = timing.perf;
        // A form asked for may give way to another (banded NCHW MEC runs B): one entry for what ran.
        if (std::any_of(results.begin(), results.end(), [&](const AlgorithmPerf& r) {
                return r.algorithm == perf.algorithm && r.variant == perf.variant;
            }))
            continue;
        verify(bench, timing.first, perf);
        results.push_back(perf);
    }
    return results;
}

// The fastest verified choice, stored; with none verified, the heuristic's choice, remembered.
void cache_choice(detail::ContextImpl& impl, Pass pass, const ConvProblem& problem, const PassOptions& options,
                  const AlgorithmPerf& best) {
    if (best.verified)
        impl.find_cache->store(pass, problem, options, {best.algorithm, best.variant, best.ms});
    else  // nothing to trust a time of: the heuristic's choice, kept in memory so Auto does not measure again
        impl.find_cache->remember(
            pass, problem, options,
            {detail::heuristic_algorithm(impl, problem, pass, options).value(), std::string(), 0});
}

}  // namespace

double error_over_bound(Pass pass, const ConvProblem& problem, Algorithm algorithm, std::string_view variant,
                        std::span<const float> a, std::span<const float> b, std::span<const float> bias,
                        std::span<const float> result, size_t samples) {
    const int tile = algorithm != Algorithm::Winograd ? 0 : variant == detail::winograd_variant(2) ? 2 : 4;
    return detail::sampled_error_over_bound(pass, problem, a, b, bias, result, samples, tile);
}

std::vector<AlgorithmPerf> find_algorithms(Context& context, Pass pass, const ConvProblem& problem,
                                           const PassOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    impl.device->throw_if_lost();
    problem.validate();
    if (options.find_repeats < 1)
        throw Error(ErrorCategory::InvalidArgument, "find_repeats must be at least 1 (it is 0)");
    if (pass == Pass::BackwardBias)
        throw Error(ErrorCategory::InvalidArgument,
                    "backward-bias has one algorithm, the bias-gradient kernel: there is nothing to find");
    detail::check_variant(Algorithm::Auto, options);

    const auto candidates = candidates_for(pass, problem, options);
    Bench bench(context, pass, problem);
    std::optional<Error> last_error;
    std::vector<AlgorithmPerf> results = measure_candidates(bench, candidates, options, last_error);
    std::stable_sort(results.begin(), results.end(), [](const AlgorithmPerf& x, const AlgorithmPerf& y) {
        if (x.verified != y.verified) return x.verified;
        return x.ms < y.ms;
    });
    if (results.empty()) {
        // The "nothing fits" error the passes give, else why the last candidate could not run.
        if (auto heuristic = detail::heuristic_algorithm(impl, problem, pass, options); !heuristic)
            heuristic.refusal().raise();
        throw *last_error;
    }
    cache_choice(impl, pass, problem, options, results.front());
    return results;
}

namespace detail {
namespace {

bool plannable(const Context& context, Pass pass, const ConvProblem& problem, const Choice& choice,
               const PassOptions& options) {
    return static_cast<bool>(plan_choice(context, problem, pass, choice, options));
}

}  // namespace

AutoChoice auto_choice_of(const Context& context, const PassOptions& options) {
    return options.auto_choice.value_or(impl_of(context).auto_choice);
}

std::optional<Choice> known_choice(const Context& context, Pass pass, const ConvProblem& problem, Algorithm algorithm,
                                   const PassOptions& options) {
    if (pass != Pass::BackwardBias) check_variant(algorithm, options);  // one kernel, no forms
    if (algorithm != Algorithm::Auto) return Choice{algorithm, options.variant, ChoiceSource::Named};
    const Choice heuristic{Algorithm::Auto, options.variant, ChoiceSource::Heuristic};  // planned by plan_pass_on
    const AutoChoice mode = auto_choice_of(context, options);
    if (mode == AutoChoice::Heuristic || pass == Pass::BackwardBias) return heuristic;
    // A stored choice that cannot plan here (a file written under other limits) is not used.
    if (auto cached = impl_of(context).find_cache->lookup(pass, problem, options)) {
        const Choice choice{cached->algorithm, cached->variant, ChoiceSource::Stored};
        if (plannable(context, pass, problem, choice, options)) return choice;
    }
    if (mode == AutoChoice::Stored) return heuristic;
    return std::nullopt;
}

std::vector<Choice> auto_candidates(Pass pass, const ConvProblem& problem, const PassOptions& options) {
    std::vector<Choice> choices;
    for (const auto& [algorithm, schedule] : candidates_for(pass, problem, options))
        choices.push_back({algorithm, schedule});
    return choices;
}

Choice choose_algorithm(Context& context, Pass pass, const ConvProblem& problem, Algorithm algorithm,
                        const PassOptions& options) {
    if (auto known = known_choice(context, pass, problem, algorithm, options)) return *known;
    const auto results = find_algorithms(context, pass, problem, options);
    if (results.front().verified)
        return {results.front().algorithm, results.front().variant, ChoiceSource::Measured};
    // Nothing verified, not worth trusting a time: the heuristic.
    return {Algorithm::Auto, options.variant, ChoiceSource::Heuristic};
}

PassOptions with_variant(const PassOptions& options, const Choice& choice) {
    PassOptions chosen = options;
    if (options.variant.empty()) chosen.variant = choice.variant;
    return chosen;
}

}  // namespace detail
}  // namespace vkconv
