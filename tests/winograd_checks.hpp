// Winograd's test checks, shared by its test files: the error bounds of engine/conv/winograd/winograd.hpp in
// double precision (elementwise, over the tiles a pass uses; normwise, for any tile grid), and forward and
// backward-data runs on poisoned outputs, every value checked against them.
#pragma once

#include <array>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "conv/winograd/winograd.hpp"
#include "conv_cases.hpp"
#include "test_util.hpp"
#include "vkconv/error.hpp"

namespace wgt {

// The worst error over its bound and the worst error relative to max|reference| seen by the checks (reported
// by the summary case).
struct Observed {
    double ratio = 0, relative = 0;
    int m = 0;
};
extern std::array<Observed, 2> observed;  // F(2×2), F(4×4)

struct EpilogueCase {
    float alpha = 1.0f, beta = 0.0f;
    bool residual = false;
    vkconv::Activation activation = vkconv::Activation::None;
    bool in_place = false;  // the residual is y itself (y holds z before the pass)
};

// `call` throws Error of `category` whose message holds every one of `words`.
template <typename Call>
void require_error(vkconv::ErrorCategory category, const std::vector<std::string>& words, Call&& call) {
    try {
        call();
        FAIL("no error");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == category);
        for (const std::string& word : words) CHECK_THAT(e.what(), Catch::Contains(word));
    }
}

// The tile options.variant names (4 or 2), else 0: the rule's; and `options` asking for tile m.
int tile_of(const vkconv::PassOptions& options);
vkconv::PassOptions with_tile(vkconv::PassOptions options, int m);

// The elementwise bound on every value of the pass's output (y, or dx) for tile `tile` (0: the rule's), `in` x or dy.
std::vector<double> winograd_bound(const vkconv::ConvProblem& p, vkconv::Pass pass, std::span<const float> in,
                                   std::span<const float> w, int tile = 0);
// Every value within `bound` plus `slack`, none NaN; records the worst ratio in `observed`.
void check_bound(const std::vector<float>& gpu, const std::vector<double>& ref, const std::vector<double>& bound,
                 const std::vector<double>& slack, int m, const std::string& what);

// Forward (or backward-data) with Winograd on a poisoned output, every value checked against the elementwise
// bound (`normwise`: the normwise one, for tiled passes); returns the stats and the output.
std::pair<vkconv::RunStats, std::vector<float>> check_winograd_forward(vkconv::Context& context,
                                                                       const vkconv::ConvProblem& p, uint32_t seed,
                                                                       const EpilogueCase& e = {},
                                                                       const vkconv::PassOptions& options = {},
                                                                       bool normwise = false);
std::pair<vkconv::RunStats, std::vector<float>> check_winograd_backward_data(vkconv::Context& context,
                                                                             const vkconv::ConvProblem& p,
                                                                             uint32_t seed,
                                                                             const vkconv::PassOptions& options = {},
                                                                             bool normwise = false);

// The 3×3 stride-1 cases of the odd table and Winograd's own; and every one of them checked at both tiles
// (`rotate`: one layout and bias setting per case in turn).
std::vector<vkt::NamedProblem> winograd_problems();
void check_odd_table(vkconv::Context& context, const std::vector<vkconv::Layout>& layouts, bool rotate,
                     vkconv::DataType type = vkconv::DataType::F32);

}  // namespace wgt
