// A 4-D permutation of a buffer (permute4d.comp): the filter copies between OIHW and OHWI, and MEC's Solution A
// moving its result into the output, where it applies the rest of the forward epilogue.
#pragma once

#include <array>
#include <cstdint>

#include "context/context_impl.hpp"
#include "conv/epilogue.hpp"
#include "vulkan/command_stream.hpp"

namespace vkconv::detail {

// What a permute that writes y applies to each value v it moves: act(v + beta * z), with `epilogue`'s beta,
// activation and residual (its alpha is not applied: the product's kernel applied it). z is read through
// `residual`, a window whose element i is the one the permute's output element i is; unused without a
// residual. The default applies nothing.
struct PermuteEpilogue {
    FusedEpilogue epilogue;
    Window residual;
};

// out[i0][i1][i2][i3] (contiguous from out_offset, extents d) = in[in_offset + sum(i * s)], through `epilogue`. Offsets and
// strides count elements of `in_type` and `out_type` (the residual's is out_type): a copy between equal types
// is exact, an fp32 source into a 16-bit output is rounded once.
void record_permute(ContextImpl& context, CommandStream& stream, const BufferRange& in, uint64_t in_offset,
                    const BufferRange& out, uint64_t out_offset, std::array<int64_t, 4> d, std::array<int64_t, 4> s,
                    const PermuteEpilogue& epilogue = {}, DataType in_type = DataType::F32,
                    DataType out_type = DataType::F32);

}  // namespace vkconv::detail
