// The direct algorithm: every pass, no workspace; refused where one of the problem's tensors exceeds
// maxStorageBufferRange (the passes then run direct in tiles, tiled/tiled.hpp).
// Its row of the algorithm table (conv/algorithm_plan.hpp).
#pragma once

#include "conv/algorithm_plan.hpp"

namespace vkconv::detail {

extern const AlgorithmEntry direct_algorithm;

}  // namespace vkconv::detail
