// The direct algorithm: conv2d_direct.comp, one invocation per output value, no workspace.
#pragma once

#include "conv_operands.hpp"

namespace vkconv::detail {

// Error(Unsupported) naming the tensor when one of the problem's tensors exceeds maxStorageBufferRange:
// direct binds whole tensors (the passes then run it in tiles, conv_tiled.hpp).
void check_direct_bindings(const ContextImpl& context, const ConvProblem& problem);

void record_direct_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const ForwardOperands& operands);

}  // namespace vkconv::detail
