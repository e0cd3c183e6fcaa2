// The fixed-order half of a deterministic split-K: partial results of a reduction cut into pieces, added
// in the order of the pieces (splitk_reduce.comp), so a split reduction is bit-identical from run to run.
#pragma once

#include "context/context_impl.hpp"
#include "vkconv/problem.hpp"
#include "vulkan/command_stream.hpp"

namespace vkconv::detail {

// out[out_offset + i] (+)= sum over s < splits of partials[s * count + i] for i < count, in order of s. The
// partials are fp32; out is of `out_type` (its offset in elements of it), each sum rounded to it once.
void record_splitk_reduce(ContextImpl& context, CommandStream& stream, const BufferRange& partials,
                          const BufferRange& out, uint64_t out_offset, uint64_t count, int64_t splits, bool accumulate,
                          DataType out_type = DataType::F32);
// The same with out[...] = beta * out[...] + the sum (beta 0: out is not read).
void record_splitk_reduce(ContextImpl& context, CommandStream& stream, const BufferRange& partials,
                          const BufferRange& out, uint64_t out_offset, uint64_t count, int64_t splits, float beta,
                          DataType out_type = DataType::F32);

}  // namespace vkconv::detail
