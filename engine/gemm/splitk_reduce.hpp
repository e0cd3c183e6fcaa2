// The fixed-order half of a deterministic split-K: partial results of a reduction cut into pieces, added
// in the order of the pieces (splitk_reduce.comp), so a split reduction is bit-identical from run to run.
#pragma once

#include "context/context_impl.hpp"
#include "vulkan/command_stream.hpp"

namespace vkconv::detail {

// out[out_offset + i] (+)= sum over s < splits of partials[s * count + i] for i < count, in order of s.
void record_splitk_reduce(ContextImpl& context, CommandStream& stream, const BufferRange& partials,
                          const BufferRange& out, uint64_t out_offset, uint64_t count, int64_t splits, bool accumulate);
// The same with out[...] = beta * out[...] + the sum (beta 0: out is not read).
void record_splitk_reduce(ContextImpl& context, CommandStream& stream, const BufferRange& partials,
                          const BufferRange& out, uint64_t out_offset, uint64_t count, int64_t splits, float beta);

}  // namespace vkconv::detail
