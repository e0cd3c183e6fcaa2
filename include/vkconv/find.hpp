// Measured algorithm choice: find runs every algorithm (in each of its forms) that fits a pass's workspace
// limit on the problem, checks each result, and returns them fastest first, as cuDNN's Find does.
//
// Algorithm::Auto uses what it stores (AutoChoice in context.hpp): by default a stored choice where there
// is one, else the heuristic; under AutoChoice::Measure the first Auto call for a (pass, problem, options)
// on a context runs find once and stores the fastest verified choice, which later calls reuse.
// ContextOptions::find_cache_path keeps the stored choices in a file across processes (keyed by device
// and driver).
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "vkconv/conv.hpp"
#include "vkconv/export.hpp"

namespace vkconv {
VKCONV_API_BEGIN

struct AlgorithmPerf {
    Algorithm algorithm = Algorithm::Auto;
    std::string variant;  // the form that ran (RunStats::variant; PassOptions::variant runs it again)
    double ms = 0;                 // fastest of the timed runs (GPU timestamps where the queue has them)
    uint64_t workspace_bytes = 0;  // what the pass allocated for itself
    uint64_t peak_bytes = 0;       // pool in-use peak during the pass, find's own operands included
    uint32_t chunks = 1;
    bool deterministic = false;   // two runs gave bit-identical results
    bool verified = false;        // sampled outputs within the fp32 summation bound of the CPU reference
    double error_over_bound = 0;  // worst |gpu - reference| / bound over the sampled outputs (<= 1: verified)
};

// Runs each applicable algorithm once to warm up (pipelines are built) and `options.find_repeats` more
// times on synthetic tensors the pool allocates for the call (uniform in [0.5, 1), a fixed seed), checks up
// to 64 sampled outputs of each against a double-precision CPU reference, and returns the algorithms that
// ran: verified ones first, each group fastest first. An algorithm whose smallest chunk does not fit
// options.workspace_limit (or the device's binding limits) is left out; none left: Error(InvalidArgument)
// naming the smallest workspace any algorithm needs, as the passes give. The fastest verified entry goes
// into the context's Auto cache.
std::vector<AlgorithmPerf> find_algorithms(Context& context, Pass pass, const ConvProblem& problem,
                                           const PassOptions& options = {});

// How find checks a result, for a result of one's own: the worst |result - reference| / bound at `samples`
// outputs spread over the whole result (the first and the last included), the reference summed in double, the
// bound the one `algorithm` holds to in the form `variant` (RunStats::variant) on this pass of `problem`, in the
// type of its output (docs/algorithms.md: fp32 summation's, Winograd's normwise one added for Winograd, and a
// 16-bit output's one rounding). Operands, as the tensors hold them: forward a = input, b = filter, bias
// (empty without); backward-data a = grad_output, b = filter; backward-filter a = input, b = grad_output;
// backward-bias a = grad_output. Above 1: a wrong result; a NaN gives infinity.
double error_over_bound(Pass pass, const ConvProblem& problem, Algorithm algorithm, std::string_view variant,
                        std::span<const float> a, std::span<const float> b, std::span<const float> bias,
                        std::span<const float> result, size_t samples = 512);

VKCONV_API_END
}  // namespace vkconv
