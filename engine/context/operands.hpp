// The device memory a pass works on (a range of a pool allocation), and windows into it.
//
// A window binds part of a tensor (the images of one chunk) without exceeding maxStorageBufferRange:
// its descriptor offset is rounded down to the pool alignment (which covers the storage and texel offset
// alignments) and the shader adds the remaining `delta` floats itself.
#pragma once

#include "context/context_impl.hpp"
#include "memory/buffer_pool.hpp"
#include "vkconv/problem.hpp"
#include "vulkan/command_stream.hpp"

namespace vkconv::detail {

struct Window {
    BufferRange range;
    uint64_t delta = 0;  // floats from range.offset to the window's first element
};

// A tensor (or workspace) as a pass binds it. The allocation starts on the pool alignment; a view whose
// first byte is off the alignment (Tensor::images at any entry) keeps the aligned start and carries the
// distance to its element 0 in `first`, which every kernel binding it adds to its indices.
struct Operand {
    PoolAllocation allocation;
    uint64_t floats = 0;
    uint64_t first = 0;  // floats from allocation.offset to element 0
    explicit operator bool() const { return static_cast<bool>(allocation); }
    // The whole operand: the aligned range up to its last element, and `first` as the window's delta.
    Window whole() const { return {{allocation.buffer, allocation.offset, (first + floats) * 4}, first}; }
};

// An operand of a tensor's pool range `allocation` (allocation_of), its start aligned down to `alignment`.
inline Operand operand_of(PoolAllocation allocation, uint64_t floats, uint64_t alignment) {
    const uint64_t aligned = allocation.offset / alignment * alignment;
    Operand op;
    op.first = (allocation.offset - aligned) / 4;
    allocation.size += allocation.offset - aligned;
    allocation.offset = aligned;
    op.allocation = allocation;
    op.floats = floats;
    return op;
}

// Elements [first, first + count) of `operand`, bound from the alignment at or below the first of them.
inline Window window(const Operand& operand, uint64_t first, uint64_t count, uint64_t alignment) {
    const uint64_t byte = (operand.first + first) * 4;
    const uint64_t aligned = byte / alignment * alignment;
    Window w;
    w.range = {operand.allocation.buffer, operand.allocation.offset + aligned, byte - aligned + count * 4};
    w.delta = (byte - aligned) / 4;
    return w;
}

}  // namespace vkconv::detail
