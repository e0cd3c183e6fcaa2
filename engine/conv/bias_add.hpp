// A transposed convolution's bias (conv/pass_plan.cpp records it where a backward-data pass has a bias
// operand): placed in dx before a pass that adds its sums into it (each value rounded once), or added to dx
// once tiles or slices have written it whole; and, where the output reaches past the full result, the
// staged result (with the bias in it) placed in the output, the bias alone around it.
#pragma once

#include "context/operands.hpp"
#include "vkconv/problem.hpp"

namespace vkconv::detail {

struct ContextImpl;
class CommandStream;

// y += bias[channel], or with `overwrite` y = bias[channel], y an input-shaped tensor of `problem` (its C
// channels, H x W pixels, in its layout), y and the bias of the problem's data_type.
void record_bias_add(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const Operand& y,
                     const Operand& bias, bool overwrite = false);

// y (N x K x P x Q in `layout`) = `staged` (N x K x rows x columns, the bias in it) placed at (top, left),
// the bias (when given) or zero elsewhere; the three of `type`, copied without rounding.
struct Placement {
    Layout layout = Layout::NCHW;
    DataType type = DataType::F32;
    int64_t N = 1, K = 1, P = 1, Q = 1, rows = 1, columns = 1, top = 0, left = 0;
};
void record_place_output(ContextImpl& context, CommandStream& stream, const Placement& placement,
                         const Operand& staged, const Operand& bias, const Operand& y);

}  // namespace vkconv::detail
