// The implicit-GEMM algorithm's row of the algorithm table (conv/algorithm_plan.hpp; implicit.hpp).
#pragma once

#include "conv/algorithm_plan.hpp"

namespace vkconv::detail {

extern const AlgorithmEntry implicit_gemm_algorithm;

}  // namespace vkconv::detail
