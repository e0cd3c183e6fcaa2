// The operands of a convolution pass by their role in the convolution (as CUTLASS names a pass's A, B and
// C by the tensors they are): each a whole tensor's range. Which roles a pass reads and which it writes:
//
//   pass             reads                              writes
//   forward          input x, filter w, bias b          output y
//   backward-data    output dy, filter w                input dx
//   backward-filter  input x, output dy                 filter dw, bias db (when asked for)
//   backward-bias    output dy                          bias db
//
// Forward also carries its epilogue (conv/epilogue.hpp), with the residual z it may read; the backward
// passes leave it at its default, which changes nothing.
#pragma once

#include "context/operands.hpp"
#include "conv/epilogue.hpp"

namespace vkconv::detail {

struct ConvOperands {
    Operand input, filter, bias, output;  // bias empty when the pass has none
    FusedEpilogue epilogue;               // forward: applied where y is written
    // Backward-data: dx += the pass's result, its first write of each value reading what dx holds (a
    // transposed convolution's bias, placed there first, so each value is rounded once).
    bool add_into_dx = false;
    Window bias_or(const Operand& stand_in) const { return bias ? bias.whole() : stand_in.whole(); }
};

}  // namespace vkconv::detail
