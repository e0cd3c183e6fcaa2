// The direct algorithm: conv2d_direct.comp, one invocation per output value, no workspace.
#pragma once

#include "conv_operands.hpp"

namespace vkconv::detail {

void record_direct_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const ForwardOperands& operands);

}  // namespace vkconv::detail
