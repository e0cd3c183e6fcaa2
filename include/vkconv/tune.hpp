// Autotuning: time the candidate tile configurations of the GEMM and of implicit GEMM on the present
// device, and keep the fastest per product shape (GEMM) or per pass and problem (implicit GEMM) in the
// context's tuning file (ContextOptions::tuning_path), where every later GEMM of that shape and every
// implicit-GEMM pass of that problem, Auto and find included, runs the winner. `vkconv tune` does this
// for the layers of a table.
//
// Every candidate's result is checked before it is timed (the GEMM against a CPU product on sampled
// entries, a pass against the double-precision reference on sampled outputs); one that fails or cannot
// run is reported and never chosen. Times are the median of `repeats` GPU-timed runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkconv/context.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/export.hpp"
#include "vkconv/plan.hpp"

namespace vkconv {
VKCONV_API_BEGIN

struct TuneCandidate {
    std::string configuration;
    double gpu_ms = 0;    // median; 0 where it did not run
    bool ok = false;      // ran and its result checked out
    std::string problem;  // why not, where not ok
};

struct TuneResult {
    std::string what;  // "gemm 49x512x4608x1", "implicit-gemm forward <problem>"
    std::string best;  // the winner now stored (empty if no candidate was ok)
    // What ran before: the GEMM's own choice or an earlier winner; for implicit GEMM an earlier winner,
    // empty where its own choice ran.
    std::string before;
    std::vector<TuneCandidate> candidates;
};

// Times every GEMM configuration of the device on C[M x N] = A[M x K] * B[K x N] (batches of it) and
// stores the fastest for that shape.
TuneResult tune_gemm(Context& context, const GemmShape& shape, uint32_t repeats = 5);

// Times implicit GEMM's configurations on `pass` of `problem` and stores the fastest for them.
TuneResult tune_implicit_gemm(Context& context, const ConvProblem& problem, Pass pass, uint32_t repeats = 5);

// Writes the context's tuning file. Error(InvalidArgument) when it has none or naming the file it cannot write.
void save_tuning(Context& context);
// The context's tuning file (empty: none) and how many winners it holds.
std::string tuning_path(const Context& context);
size_t tuned_entries(const Context& context);

VKCONV_API_END
}  // namespace vkconv
