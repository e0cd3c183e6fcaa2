// The direct algorithm: conv2d_direct.comp, one invocation per output value, no workspace.
#pragma once

#include "command_stream.hpp"
#include "vkconv/problem.hpp"

namespace vkconv::detail {

struct ForwardOperands {
    BufferRange input, filter, bias, output;  // bias.size == 0 when the problem has none
};

void record_direct_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const ForwardOperands& operands);

}  // namespace vkconv::detail
