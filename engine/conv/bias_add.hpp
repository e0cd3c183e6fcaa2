// The bias a transposed convolution adds to its output: one elementwise dispatch after the backward-data
// pass that wrote it (conv/pass_plan.cpp records it where a backward-data pass has a bias operand).
#pragma once

#include "context/operands.hpp"
#include "vkconv/problem.hpp"

namespace vkconv::detail {

struct ContextImpl;
class CommandStream;

// y += bias[channel], y an input-shaped tensor of `problem` (its C channels, H x W pixels, in its layout).
void record_bias_add(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const Operand& y,
                     const Operand& bias);

}  // namespace vkconv::detail
