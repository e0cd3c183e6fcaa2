// MEC: forward in Solution A or B, the backward passes on Solution B's chunks with a reordered filter
// copy, backward-filter with its split reduction.
// Its row of the algorithm table (conv/algorithm_plan.hpp).
#pragma once

#include "conv/algorithm_plan.hpp"

namespace vkconv::detail {

extern const AlgorithmEntry mec_algorithm;

}  // namespace vkconv::detail
