// A 16-bit output that a pass sums over chunks or pieces (a lowered backward-filter's dw, added chunk by
// chunk): the pass adds into an fp32 copy in its workspace (Slot::WideOutput) instead, and that copy is
// rounded into the output once, at the end, so every output value is rounded once whatever the chunks.
#pragma once

#include "context/operands.hpp"
#include "gemm/gemm.hpp"
#include "gemm/splitk_reduce.hpp"

namespace vkconv::detail {

// Where a pass writes an output it sums into: the fp32 copy when there is one (`wide`, a workspace slot),
// else the output itself, in `type`.
struct SumTarget {
    Window window;
    DataType type;
};
inline SumTarget sum_target(const Operand& output, const Operand& wide, DataType type) {
    if (wide) return {wide.whole(), DataType::F32};
    return {output.whole(), type};
}

// The fp32 copy's `count` values rounded into `output` (of `type`); nothing without a copy.
inline void round_wide_output(ContextImpl& context, CommandStream& stream, const Operand& wide, const Operand& output,
                              uint64_t count, DataType type) {
    if (!wide) return;
    const Window out = output.whole();
    record_splitk_reduce(context, stream, wide.whole().range, out.range, out.delta, count, 1, false, type);
}

}  // namespace vkconv::detail
