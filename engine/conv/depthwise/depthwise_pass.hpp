// The depthwise kernels: every pass of a problem with one input channel per group, backward-filter's
// partial sums in the Lowered slot.
// Its row of the algorithm table (conv/algorithm_plan.hpp).
#pragma once

#include "conv/algorithm_plan.hpp"

namespace vkconv::detail {

extern const AlgorithmEntry depthwise_algorithm;

}  // namespace vkconv::detail
