// Whether an algorithm that binds a problem's tensors whole (direct, implicit-gemm) can bind them: each
// within maxStorageBufferRange, in its own element type.
#pragma once

#include <optional>

#include "conv/planned.hpp"
#include "vkconv/problem.hpp"

namespace vkconv::detail {

struct ContextImpl;

// Why `algorithm` cannot bind the problem's tensors, naming the tensor, when one of them exceeds
// maxStorageBufferRange (the passes then run in tiles, tiled/tiled.hpp). A filter-shaped tensor counts in
// the wider of data_type and the weight-gradient type (dw may be fp32: ConvProblem::weight_gradient_type).
std::optional<Refusal> whole_tensors_refusal(const ContextImpl& context, const ConvProblem& problem,
                                             const char* algorithm);

}  // namespace vkconv::detail
