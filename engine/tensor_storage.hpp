// The device memory behind a Tensor: a pool allocation that goes back to the pool with the last owner.
#pragma once

#include <memory>

#include "context_impl.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv::detail {

struct TensorStorage {
    std::shared_ptr<ContextImpl> context;
    PoolAllocation allocation;
    ~TensorStorage() { context->pool->release(allocation); }
};

}  // namespace vkconv::detail
