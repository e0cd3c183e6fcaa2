// The device memory behind a Tensor: a pool allocation that goes back to the pool with the last owner, or
// a range of the application's buffer (wrap_buffer), which vkconv never frees.
#pragma once

#include <algorithm>
#include <memory>

#include "context/access.hpp"
#include "context/context_impl.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv::detail {

struct TensorStorage {
    std::shared_ptr<ContextImpl> context;
    PoolAllocation allocation;  // for an external buffer: no block, the application's buffer and range
    bool external = false;
    VkBufferUsageFlags usage = 0;  // external: the usage the application declared
    ~TensorStorage() {
        const auto lock = serialise(*context);  // a tensor may die on any thread
        if (external)
            context->device->forget_foreign_buffer(allocation.buffer);
        else
            context->pool->release(allocation);
    }
};

// The pool range a tensor (or a view) covers: the allocation moved to the view's first byte, its size
// the view's bytes rounded up to the pool alignment but never past the allocation's end. Every engine
// use of a tensor's memory goes through this, so views bind, transfer and count as their own bytes.
inline PoolAllocation allocation_of(const Tensor& tensor) {
    PoolAllocation a = storage_of(tensor)->allocation;
    const uint64_t offset = tensor.byte_offset();
    a.size = std::min(storage_of(tensor)->context->pool->round(tensor.bytes()), a.size - offset);
    a.offset += offset;
    return a;
}

// True when two non-empty tensors share at least one byte (views of one allocation may not, nor may two
// tensors over one application buffer).
inline bool overlaps(const Tensor& a, const Tensor& b) {
    if (a.empty() || b.empty()) return false;
    const PoolAllocation& x = storage_of(a)->allocation;
    const PoolAllocation& y = storage_of(b)->allocation;
    if (x.buffer != y.buffer) return false;
    const uint64_t a0 = x.offset + a.byte_offset(), b0 = y.offset + b.byte_offset();
    return a0 < b0 + b.bytes() && b0 < a0 + a.bytes();
}

}  // namespace vkconv::detail
