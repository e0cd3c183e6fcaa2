// A spot check of a pass's result against the CPU reference at a fixed sample of its outputs: what find
// uses to verify each algorithm on problems far too large for the full reference.
#pragma once

#include <cstddef>
#include <span>

#include "vkconv/find.hpp"

namespace vkconv::detail {

// Worst |result - reference| / bound over `samples` outputs of `pass` spread over the whole result (the
// first and last included), the reference summed in double and the bound the worst case of fp32
// recursive summation over the pass's reduction length times the sum of the terms' magnitudes (for a 16-bit
// problem, with the output's one rounding to its type added). The operands are the values the device holds.
// Operands by pass: forward a = input, b = filter, bias (empty without); backward-data a = grad_output,
// b = filter; backward-filter a = input, b = grad_output; backward-bias a = grad_output. NaN in the result
// gives infinity.
// `winograd_tile` (4 or 2; 0: none): the result is Winograd's, F(m×m, 3×3), whose error is bounded normwise
// (conv/winograd/winograd.hpp): that bound, γ_k·α_m²/9 · n · max|a| · max|b|, is added to the summation's.
double sampled_error_over_bound(Pass pass, const ConvProblem& problem, std::span<const float> a,
                                std::span<const float> b, std::span<const float> bias, std::span<const float> result,
                                size_t samples, int winograd_tile = 0);

}  // namespace vkconv::detail
