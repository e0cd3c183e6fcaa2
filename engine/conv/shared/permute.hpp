// A 4-D permutation of a buffer (permute4d.comp): the filter copies between OIHW and OHWI.
#pragma once

#include <array>
#include <cstdint>

#include "context/context_impl.hpp"
#include "vulkan/command_stream.hpp"

namespace vkconv::detail {

// out[i0][i1][i2][i3] (contiguous from out_offset, extents d) = in[in_offset + sum(i * s)].
void record_permute(ContextImpl& context, CommandStream& stream, const BufferRange& in, uint64_t in_offset,
                    const BufferRange& out, uint64_t out_offset, std::array<int64_t, 4> d, std::array<int64_t, 4> s);

}  // namespace vkconv::detail
