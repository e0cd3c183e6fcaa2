// The last step of a transposed convolution, after the backward-data pass that computes it: the bias added
// to the output in place (conv/pass_plan.cpp records it where a backward-data pass has a bias operand), or,
// where the output reaches past the full result, the staged result placed in the output with the bias.
#pragma once

#include "context/operands.hpp"
#include "vkconv/problem.hpp"

namespace vkconv::detail {

struct ContextImpl;
class CommandStream;

// y += bias[channel], y an input-shaped tensor of `problem` (its C channels, H x W pixels, in its layout).
void record_bias_add(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const Operand& y,
                     const Operand& bias);

// y (N x K x P x Q in `layout`) = bias (when given) + `staged` (N x K x rows x columns) placed at (top, left),
// zero elsewhere.
struct Placement {
    Layout layout = Layout::NCHW;
    int64_t N = 1, K = 1, P = 1, Q = 1, rows = 1, columns = 1, top = 0, left = 0;
};
void record_place_output(ContextImpl& context, CommandStream& stream, const Placement& placement,
                         const Operand& staged, const Operand& bias, const Operand& y);

}  // namespace vkconv::detail
