// A run of elements copied (or added) from one operand to another by copy_box.comp, the one copy every
// engine path shares: tiles, the slices of paged passes, and kernels that read a residual from the output.
#pragma once

#include <cstdint>

#include "context/operands.hpp"

namespace vkconv::detail {

// dst[dst_first, + count) (+)= src[src_first, + count) (accumulate: added): in parts that each lie in one
// page of a paged operand. Both operands hold elements of `type`.
void record_run(ContextImpl& context, CommandStream& stream, const Operand& src, uint64_t src_first, const Operand& dst,
                uint64_t dst_first, uint64_t count, bool accumulate, DataType type = DataType::F32);
// The same from elements of `src_type` to elements of `dst_type`: widened exactly, or rounded once to the
// narrower type as they are written (after the add, where `accumulate`).
void record_run(ContextImpl& context, CommandStream& stream, const Operand& src, uint64_t src_first, const Operand& dst,
                uint64_t dst_first, uint64_t count, bool accumulate, DataType src_type, DataType dst_type);

}  // namespace vkconv::detail
