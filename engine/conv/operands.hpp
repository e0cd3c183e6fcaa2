// The operands of a forward pass by role: input, filter, bias and output, each a whole tensor's range.
#pragma once

#include "context/operands.hpp"

namespace vkconv::detail {

struct ForwardOperands {
    Operand input, filter, bias, output;  // bias empty when the problem has none
    BufferRange bias_or(const Operand& stand_in) const { return bias ? bias.whole() : stand_in.whole(); }
};

}  // namespace vkconv::detail
