// Checks of passes on 16-bit tensors, shared by the 16-bit test files: every output poisoned first and checked
// whole against the double-precision reference computed on the same 16-bit inputs, within the stated bound
// (docs/algorithms.md, "Element types"): |ŷ - y| ≤ (1 + u_t)·E + u_t·|y| + η, E = (n + 2)·u·Σ|x||w|.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "conv_cases.hpp"
#include "test_util.hpp"
#include "vkconv/vkconv.hpp"

namespace sixteen {

// The names the 16-bit tests use (`using namespace sixteen` brings them).
using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::DataType;
using vkconv::Layout;
using vkconv::Pass;
using vkconv::Tensor;

// The algorithms that run 16-bit tensors in every pass.
inline constexpr vkconv::Algorithm kSixteenBit[] = {vkconv::Algorithm::Direct, vkconv::Algorithm::Depthwise,
                                                    vkconv::Algorithm::Im2col, vkconv::Algorithm::Mec,
                                                    vkconv::Algorithm::ImplicitGemm};

// The stated bound on every value of `gpu` (checked all, NaN failing); `reduction` is n.
void check_16bit(std::span<const float> gpu, std::span<const double> reference, std::span<const double> magnitude,
                 int64_t reduction, vkconv::DataType type, const std::string& what);
// A tensor of `type` holding `values` narrowed, and the values it holds, widened back (what the pass reads).
std::pair<vkconv::Tensor, std::vector<float>> upload(vkconv::Context& context, const vkconv::Shape& shape,
                                                     const std::vector<float>& values, vkconv::DataType type);
// The three passes of `p` through `algorithm`, each output poisoned first and checked whole, each workspace
// as its query says; returns the outputs (forward, dx, dw, and db with a bias) for the rerun check.
// (`sliced`: paged tensors, whose db is checked against the bound rather than backward-filter's bits.)
std::vector<std::vector<float>> check_passes(vkconv::Context& context, const vkconv::ConvProblem& p,
                                             vkconv::Algorithm algorithm, uint32_t seed,
                                             const vkconv::PassOptions& options = {}, bool sliced = false);
// `problem` with a bias, in the (type, layout) of `turn`: f16 and bf16 in turn, NCHW for two turns, then NHWC.
vkconv::ConvProblem in_turn(vkconv::ConvProblem problem, size_t turn);
// y = relu(alpha·conv + b + beta·z) (z its own tensor, or y itself `in_place`) checked against the reference.
vkconv::RunStats check_epilogue(vkconv::Context& context, const vkconv::ConvProblem& p, vkconv::Algorithm algorithm,
                                bool in_place, uint32_t seed, const vkconv::PassOptions& options = {});

}  // namespace sixteen
