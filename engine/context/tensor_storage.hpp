// The device memory behind a Tensor: a pool allocation that goes back to the pool with the last owner.
#pragma once

#include <algorithm>
#include <memory>

#include "context/context_impl.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv::detail {

struct TensorStorage {
    std::shared_ptr<ContextImpl> context;
    PoolAllocation allocation;
    ~TensorStorage() {
        const auto lock = serialise(*context);  // a tensor may die on any thread
        context->pool->release(allocation);
    }
};

// The pool range a tensor (or a view) covers: the allocation moved to the view's first byte, its size
// the view's bytes rounded up to the pool alignment but never past the allocation's end. Every engine
// use of a tensor's memory goes through this, so views bind, transfer and count as their own bytes.
inline PoolAllocation allocation_of(const Tensor& tensor) {
    PoolAllocation a = tensor.storage()->allocation;
    const uint64_t offset = tensor.byte_offset();
    a.size = std::min(tensor.storage()->context->pool->round(tensor.bytes()), a.size - offset);
    a.offset += offset;
    return a;
}

// True when two non-empty tensors share at least one byte (views of one allocation may not).
inline bool overlaps(const Tensor& a, const Tensor& b) {
    if (a.empty() || b.empty() || a.storage() != b.storage()) return false;
    const uint64_t a0 = a.byte_offset(), b0 = b.byte_offset();
    return a0 < b0 + b.bytes() && b0 < a0 + a.bytes();
}

}  // namespace vkconv::detail
