// im2col: every pass on the lowered matrix col, backward-filter with its split-K.
// Its row of the algorithm table (conv/algorithm_plan.hpp).
#pragma once

#include "conv/algorithm_plan.hpp"

namespace vkconv::detail {

extern const AlgorithmEntry im2col_algorithm;

}  // namespace vkconv::detail
