// What the pass tests share: problems built by named fields, the named table of deliberately odd convolution
// problems and the random sweep, the list of algorithms, and the checks that run a problem on the GPU against the
// CPU reference (forward, and the backward passes).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpu.hpp"

namespace vkt {

// ---------------------------------------------------------------------------------------------------------
// Problems by name.

// A ConvProblem with every field named; it converts to vkconv::ConvProblem (or build() returns one):
//
//     vkconv::ConvProblem p = vkt::problem().batch(2).channels(5).image(14, 13).filters(3).kernel(3, 3)
//                                 .pad(1).stride(2).dilation(1, 2).groups(1).layout(vkconv::Layout::NHWC).bias();
//
// A field left out keeps ConvProblem's default: sizes 1, no padding, stride and dilation 1, one group, NCHW, no
// bias. pad, stride and dilation take one value for both directions or two, (h, w). depthwise(m) makes one group
// per input channel with m filters each (groups = C, K = m * C, whatever order channels() comes in); it cannot be
// combined with filters() or groups(). Nothing is validated: a test may build an invalid problem on purpose.
class ProblemBuilder {
public:
    ProblemBuilder& batch(int64_t n);
    ProblemBuilder& channels(int64_t c);
    ProblemBuilder& image(int64_t h, int64_t w);
    ProblemBuilder& filters(int64_t k);
    ProblemBuilder& kernel(int64_t r, int64_t s);
    ProblemBuilder& pad(int64_t both);
    ProblemBuilder& pad(int64_t h, int64_t w);
    ProblemBuilder& pads(int64_t top, int64_t bottom, int64_t left, int64_t right);
    ProblemBuilder& stride(int64_t both);
    ProblemBuilder& stride(int64_t h, int64_t w);
    ProblemBuilder& dilation(int64_t both);
    ProblemBuilder& dilation(int64_t h, int64_t w);
    ProblemBuilder& groups(int64_t g);
    ProblemBuilder& depthwise(int64_t multiplier = 1);
    ProblemBuilder& layout(vkconv::Layout layout);
    ProblemBuilder& bias(bool has_bias = true);

    vkconv::ConvProblem build() const;
    operator vkconv::ConvProblem() const { return build(); }

private:
    vkconv::ConvProblem p_;
    std::optional<int64_t> multiplier_;  // depthwise(m)
    bool filters_set_ = false, groups_set_ = false;
};

inline ProblemBuilder problem() {
    return {};
}

// ---------------------------------------------------------------------------------------------------------
// Shared tables.

struct NamedProblem {
    std::string name;
    vkconv::ConvProblem problem;  // layout NCHW, no bias: tests vary those two themselves
};

// One variation per case (XNNPACK style): kernel sizes, strides, padding, dilation, groups, odd channels.
std::vector<NamedProblem> odd_problems();

// `count` small valid problems drawn from a fixed seed: any stride/padding/dilation/groups, both layouts,
// with and without bias.
std::vector<vkconv::ConvProblem> random_problems(int count, uint32_t seed);

// Whether the table says `algorithm` runs forward, backward-data and backward-filter of `problem`.
bool runs_every_pass(vkconv::Algorithm algorithm, const vkconv::ConvProblem& problem);

// Every algorithm of the table that runs every pass of `problem` (runs_every_pass). The one list the pass
// tests iterate: a new row of the algorithm table that runs every pass is checked by all of them; one that
// runs fewer passes has tests of its own for those.
std::vector<vkconv::Algorithm> algorithms_for(const vkconv::ConvProblem& problem);

// ---------------------------------------------------------------------------------------------------------
// Checks against the reference.

// Runs forward with `algorithm` on poisoned output memory and checks every value against the reference.
// Returns the RunStats of the pass.
vkconv::RunStats check_forward(vkconv::Context& context, const vkconv::ConvProblem& problem,
                               vkconv::Algorithm algorithm, uint32_t seed, const vkconv::PassOptions& options = {});

// How a check compares the GPU's results with the reference.
enum class Compare {
    Bound,  // within the fp32 summation bound of each output's reduction (check_close)
    Exact,  // equal to the reference, for data that keep every sum exact in fp32 (check_exact)
};

// The values of one operand: `count` of them drawn from `seed`.
using Values = std::function<std::vector<float>(int64_t count, uint32_t seed)>;

// What a backward check runs on and how it compares.
struct BackwardSetup {
    Values values;  // x, w and dy from seed, seed + 1 and seed + 2; empty: random_values in [-1, 1)
    Compare compare = Compare::Bound;
    // true: backward_filter also writes db and backward_bias runs, on the problem with has_bias set, whether the
    // problem has a bias or not (what a layer with a bias needs); false: only when the problem has one.
    bool bias_always = true;
};

// A checked pass: its stats, and the pool bytes in use just before it (every operand of the check alive), so a
// caller can check peak_bytes == live + workspace_bytes.
struct CheckedRun {
    vkconv::RunStats stats;
    uint64_t live = 0;
};
struct CheckedStep {
    vkconv::LayerBackwardStats stats;
    uint64_t live = 0;
};

// The one backward check: one problem's x, w and dy on the device, their references, and dx, dw, db. Every
// call poisons (NaN) each output it writes, runs one pass, downloads and checks each output it wrote against the
// reference: dx within (K/G*R*S + 2)*u*|terms|, dw and db within (N*P*Q + 2)*u*|terms|, or exactly. For an
// algorithm other than Auto it also checks that the pass ran that algorithm and that its workspace equals the
// workspace query under the same options.
class BackwardCheck {
public:
    BackwardCheck(vkconv::Context& context, const vkconv::ConvProblem& problem, uint32_t seed,
                  BackwardSetup setup = {});

    // backward_data: dx.
    CheckedRun data(vkconv::Algorithm algorithm, const vkconv::PassOptions& options = {});
    // backward_filter: dw, and db (see BackwardSetup::bias_always).
    CheckedRun filter(vkconv::Algorithm algorithm, const vkconv::PassOptions& options = {});
    // backward_bias: db.
    CheckedRun bias();
    // layer_backward: dx, dw, and db as backward_filter.
    CheckedStep step(vkconv::Algorithm algorithm, const vkconv::PassOptions& options = {});

    // The results the last call that wrote them downloaded (checked already).
    const std::vector<float>& dx() const { return dx_; }
    const std::vector<float>& dw() const { return dw_; }
    const std::vector<float>& db() const { return db_; }

private:
    bool writes_bias() const { return filter_problem_.has_bias; }
    void check(const std::vector<float>& gpu, const std::vector<double>& reference,
               const std::vector<double>& magnitude, int64_t reduction, const std::string& what) const;
    void check_dx(const std::string& what);
    void check_dw(const std::string& what);
    void check_db(const std::string& what);

    vkconv::Context& context_;
    vkconv::ConvProblem problem_;  // backward_data's
    vkconv::ConvProblem
        filter_problem_;  // backward_filter's, backward_bias's and the step's: has_bias as db is written
    Compare compare_;
    std::vector<float> x_, w_, dy_;
    std::vector<double> dx_ref_, dx_mag_, dw_ref_, dw_mag_, db_ref_, db_mag_;
    vkconv::Tensor tx_, tw_, tdy_, tdx_, tdw_, tdb_;
    std::vector<float> dx_, dw_, db_;
};

struct BackwardResult {
    CheckedRun data, filter, bias;
};

// The whole backward check of one algorithm: backward_data, backward_filter with db, and backward_bias (which takes
// no options), through BackwardCheck. Returns each pass's stats.
BackwardResult check_backward(vkconv::Context& context, const vkconv::ConvProblem& problem, vkconv::Algorithm algorithm,
                              uint32_t seed, const vkconv::PassOptions& options = {}, BackwardSetup setup = {});

}  // namespace vkt
