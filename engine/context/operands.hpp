// The device memory a pass works on (a range of a pool allocation), and windows into it.
//
// A window binds part of a tensor (the images of one chunk) without exceeding maxStorageBufferRange:
// its descriptor offset is rounded down to the pool alignment (which covers the storage and texel offset
// alignments) and the shader adds the remaining `delta` floats itself.
#pragma once

#include "memory/buffer_pool.hpp"
#include "vulkan/command_stream.hpp"
#include "context/context_impl.hpp"
#include "vkconv/problem.hpp"

namespace vkconv::detail {

struct Operand {
    PoolAllocation allocation;
    uint64_t floats = 0;
    explicit operator bool() const { return static_cast<bool>(allocation); }
    BufferRange whole() const { return {allocation.buffer, allocation.offset, floats * 4}; }
};

struct Window {
    BufferRange range;
    uint64_t delta = 0;  // floats from range.offset to the window's first element
};

inline Window window(const Operand& operand, uint64_t first, uint64_t count, uint64_t alignment) {
    const uint64_t byte = first * 4;
    const uint64_t aligned = byte / alignment * alignment;
    Window w;
    w.range = {operand.allocation.buffer, operand.allocation.offset + aligned, byte - aligned + count * 4};
    w.delta = (byte - aligned) / 4;
    return w;
}


}  // namespace vkconv::detail
