// Autotuning (vkconv/plan.hpp): each candidate configuration checked, then timed, the fastest stored in the
// context's tuning file (gemm/tuning.hpp).
#include "vkconv/plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "context/access.hpp"
#include "context/context_impl.hpp"
#include "context/tensor_storage.hpp"
#include "gemm/gemm.hpp"
#include "conv/implicit/implicit.hpp"
#include "gemm/tuning.hpp"
#include "select/sampled_reference.hpp"
#include "vkconv/conv.hpp"

namespace vkconv {
namespace {

std::vector<float> values(size_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(count);
    for (float& x : v) x = dist(rng);
    return v;
}

double median(std::vector<double> times) {
    std::sort(times.begin(), times.end());
    return times.empty() ? 0 : times[times.size() / 2];
}

detail::BufferRange range_of(const Tensor& t) {
    const detail::PoolAllocation a = detail::allocation_of(t, "tuning");
    return {a.buffer, a.offset, a.size};
}

// NaN for an output, written before each candidate's checked run: a candidate that leaves it unwritten (or
// writes only part of it) cannot pass on what the candidate before it wrote.
std::vector<float> poison(size_t count) {
    return std::vector<float>(count, std::numeric_limits<float>::quiet_NaN());
}

// The worst error over the fp32 bound of 64 sampled entries of C (the first and last included) against a
// double-precision product of a and b; infinite where an entry is not finite.
double sampled_gemm_error(const GemmShape& shape, const std::vector<float>& av, const std::vector<float>& bv,
                          const std::vector<float>& cv) {
    const uint64_t c_count = cv.size(), samples = std::min<uint64_t>(64, c_count);
    double worst = 0;
    for (uint64_t s = 0; s < samples; ++s) {
        const uint64_t i = samples > 1 ? s * (c_count - 1) / (samples - 1) : 0;
        const uint64_t batch = i / (uint64_t(shape.M) * shape.N), mn = i % (uint64_t(shape.M) * shape.N);
        const uint64_t m = mn / shape.N, n = mn % shape.N;
        double sum = 0, magnitude = 0;
        for (uint64_t k = 0; k < shape.K; ++k) {
            const double t = double(av[(batch * shape.M + m) * shape.K + k]) * bv[(batch * shape.K + k) * shape.N + n];
            sum += t, magnitude += std::fabs(t);
        }
        const double bound = (double(shape.K) + 2) * std::ldexp(1.0, -24) * magnitude + 1e-30;
        worst = std::max(worst, std::isfinite(cv[i]) ? std::fabs(cv[i] - sum) / bound : INFINITY);
    }
    return worst;
}

void choose(TuneResult& result) {
    const TuneCandidate* best = nullptr;
    for (const TuneCandidate& c : result.candidates)
        if (c.ok && (!best || c.gpu_ms < best->gpu_ms)) best = &c;
    if (best) result.best = best->configuration;
}

}  // namespace

TuneResult tune_gemm(Context& context, const GemmShape& shape, uint32_t repeats) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    impl.device->throw_if_lost();
    if (shape.M == 0 || shape.N == 0 || shape.K == 0 || shape.batches == 0)
        throw Error(ErrorCategory::InvalidArgument, "tune_gemm: M, N, K and batches must be positive");
    if (repeats == 0) throw Error(ErrorCategory::InvalidArgument, "tune_gemm: repeats must be at least 1");
    const uint64_t a_count = uint64_t(shape.batches) * shape.M * shape.K, b_count = uint64_t(shape.batches) * shape.K * shape.N,
                   c_count = uint64_t(shape.batches) * shape.M * shape.N;
    if (std::max({a_count, b_count, c_count}) * 4 > impl.device->limits().maxStorageBufferRange)
        throw Error(ErrorCategory::Unsupported, "tune_gemm: an operand exceeds maxStorageBufferRange");
    const auto av = values(a_count, 1), bv = values(b_count, 2);
    Tensor a = Tensor::from_host(context, {int64_t(a_count)}, av);
    Tensor b = Tensor::from_host(context, {int64_t(b_count)}, bv);
    Tensor c(context, {int64_t(c_count)});
    detail::GemmProblem p;
    p.M = shape.M, p.N = shape.N, p.K = shape.K, p.batch_i = shape.batches;
    p.a = {range_of(a), 0, shape.K, 1, uint64_t(shape.M) * shape.K, 0};
    p.b = {range_of(b), 0, shape.N, 1, uint64_t(shape.K) * shape.N, 0};
    p.c = {range_of(c), 0, shape.N, 1, uint64_t(shape.M) * shape.N, 0};

    TuneResult result;
    result.what = "gemm " + std::to_string(shape.M) + "x" + std::to_string(shape.N) + "x" + std::to_string(shape.K) +
                  "x" + std::to_string(shape.batches);
    result.before = detail::choose_gemm_config(impl, p).name;
    for (const detail::GemmConfig& config : gemm_configs(impl).all) {
        TuneCandidate candidate{config.name};
        if (config.access != detail::GemmAccess::StorageBuffer && !detail::texel_views_fit(*impl.device, p)) {
            candidate.problem = "operands too large for texel views";
            result.candidates.push_back(candidate);
            continue;
        }
        std::vector<double> times;
        c.upload(poison(c_count));
        for (uint32_t run = 0; run <= repeats; ++run) {  // run 0 builds the pipeline and is checked
            detail::CommandStream stream(*impl.device);
            stream.begin_timing();
            detail::record_gemm(impl, stream, p, &config);
            stream.end_timing();
            stream.submit_and_wait();
            if (run > 0) times.push_back(stream.gpu_ms());
            if (run == 0) {
                const double worst = sampled_gemm_error(shape, av, bv, c.download());
                if (!(worst <= 1.0)) {
                    candidate.problem = "result outside the fp32 bound (" + std::to_string(worst) + "x)";
                    break;
                }
            }
        }
        if (candidate.problem.empty()) candidate.ok = true, candidate.gpu_ms = median(times);
        result.candidates.push_back(candidate);
    }
    choose(result);
    if (!result.best.empty()) impl.tuning->set_gemm(shape.M, shape.N, shape.K, shape.batches, result.best);
    return result;
}

namespace {

// One implicit-GEMM pass over fixed inputs: the tensors, their host values (to check the result against)
// and the pass run through the public entry point, so tuning measures what callers get.
class ImplicitPassRun {
public:
    ImplicitPassRun(Context& context, Pass pass, const ConvProblem& p)
        : context_(context),
          pass_(pass),
          p_(p),
          xv_(values(size_t(p.input_elements()), 3)),
          wv_(values(size_t(p.filter_elements()), 4)),
          yv_(values(size_t(p.output_elements()), 5)),
          x_(Tensor::from_host(context, p.input_shape(), xv_)),
          w_(Tensor::from_host(context, p.filter_shape(), wv_)),
          y_(Tensor::from_host(context, p.output_shape(), yv_)) {}

    // What the pass writes.
    Tensor& output() { return pass_ == Pass::Forward ? y_ : pass_ == Pass::BackwardData ? x_ : w_; }

    std::pair<RunStats, std::vector<float>> run() {
        PassOptions options;
        options.auto_choice = AutoChoice::Heuristic;
        switch (pass_) {
            case Pass::Forward: {
                RunStats s = forward(context_, p_, x_, w_, nullptr, y_, Algorithm::ImplicitGemm, options);
                return {s, y_.download()};
            }
            case Pass::BackwardData: {
                RunStats s = backward_data(context_, p_, y_, w_, x_, Algorithm::ImplicitGemm, options);
                return {s, x_.download()};
            }
            default: {
                RunStats s = backward_filter(context_, p_, x_, y_, w_, nullptr, Algorithm::ImplicitGemm, options);
                return {s, w_.download()};
            }
        }
    }

    // The sampled error of a result, in units of its fp32 bound.
    double error_over_bound(const std::vector<float>& out) const {
        std::span<const float> a = pass_ == Pass::BackwardData ? std::span<const float>(yv_) : xv_;
        std::span<const float> b = pass_ == Pass::BackwardFilter ? std::span<const float>(yv_) : wv_;
        return detail::sampled_error_over_bound(pass_, p_, a, b, {}, out, 256);
    }

private:
    Context& context_;
    Pass pass_;
    const ConvProblem& p_;
    const std::vector<float> xv_, wv_, yv_;
    Tensor x_, w_, y_;
};

// Runs the pass (with the candidate's configuration stored) 1 + repeats times: the first builds the
// pipelines and is checked, the others are timed. A failure other than a lost device marks the candidate.
void time_candidate(TuneCandidate& candidate, ImplicitPassRun& pass_run, uint32_t repeats) {
    try {
        // Inputs as uploaded: each run overwrites only its own output, so every run computes from them.
        std::vector<double> times;
        pass_run.output().upload(poison(size_t(pass_run.output().elements())));
        for (uint32_t r = 0; r <= repeats; ++r) {
            auto [stats, out] = pass_run.run();
            if (r > 0) times.push_back(stats.gpu_ms);
            if (r == 0) {
                const double error = pass_run.error_over_bound(out);
                if (!(error <= 1.0)) {
                    candidate.problem = "result outside the fp32 bound (" + std::to_string(error) + "x)";
                    break;
                }
            }
        }
        if (candidate.problem.empty()) candidate.ok = true, candidate.gpu_ms = median(times);
    } catch (const Error& e) {
        if (e.category() == ErrorCategory::DeviceLost) throw;
        candidate.problem = e.what();
    }
}

// After the runs: the runs' own (unbiased) entry back as it was, and the caller's problem keeps the winner,
// else what it had before.
void store_implicit_winner(detail::ContextImpl& impl, Pass pass, const ConvProblem& key, const ConvProblem& p,
                           const std::optional<std::string>& earlier, const std::optional<std::string>& unbiased,
                           const std::string& best) {
    if (unbiased)
        impl.tuning->set_implicit(pass, p, *unbiased);
    else
        impl.tuning->forget_implicit(pass, p);
    if (!best.empty())
        impl.tuning->set_implicit(pass, key, best);
    else if (earlier)
        impl.tuning->set_implicit(pass, key, *earlier);
    else
        impl.tuning->forget_implicit(pass, key);
}

}  // namespace

TuneResult tune_implicit_gemm(Context& context, const ConvProblem& problem, Pass pass, uint32_t repeats) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    impl.device->throw_if_lost();
    problem.validate();
    if (pass == Pass::BackwardBias)
        throw Error(ErrorCategory::InvalidArgument, "tune_implicit_gemm: backward-bias runs no implicit GEMM");
    if (repeats == 0) throw Error(ErrorCategory::InvalidArgument, "tune_implicit_gemm: repeats must be at least 1");
    // The winner is kept for the caller's problem (bias included: the passes look it up so); the runs
    // leave the bias out, which is not implicit GEMM's work.
    const ConvProblem& key = problem;
    ConvProblem p = problem;
    p.has_bias = false;
    ImplicitPassRun pass_run(context, pass, p);
    TuneResult result;
    result.what = std::string("implicit-gemm ") + to_string(pass) + " " + p.str();
    const auto earlier = impl.tuning->implicit(pass, key);
    const auto unbiased = impl.tuning->implicit(pass, p);  // the runs' own entry, put back afterwards
    result.before = earlier ? *earlier : "";
    for (const detail::GemmConfig& config : gemm_configs(impl).all) {
        if (!detail::implicit_candidate(impl, pass, config, p)) continue;  // the ones implicit GEMM can run here
        TuneCandidate candidate{config.name};
        // The pass runs this configuration: stored for the problem it runs (without the bias) meanwhile.
        impl.tuning->set_implicit(pass, p, config.name);
        time_candidate(candidate, pass_run, repeats);
        result.candidates.push_back(candidate);
    }
    choose(result);
    store_implicit_winner(impl, pass, key, p, earlier, unbiased, result.best);
    return result;
}

void save_tuning(Context& context) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    impl.tuning->save();
}

std::string tuning_path(const Context& context) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    return impl.tuning->path();
}

size_t tuned_entries(const Context& context) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    return impl.tuning->size();
}

}  // namespace vkconv
