// What a Context owns, in creation order (destroyed in reverse): instance, device (with its command pool),
// find cache, pool, pipelines, staging. Tensors and PeakScopes hold a shared_ptr to it, so it outlives them.
#pragma once

#include <memory>

#include "memory/buffer_pool.hpp"
#include "vulkan/device.hpp"
#include "vulkan/instance.hpp"
#include "vulkan/pipeline_cache.hpp"
#include "vkconv/context.hpp"
#include "vkconv/error.hpp"

namespace vkconv::detail {

class Staging;
class FindCache;
struct GemmConfigTable;

struct ContextImpl {
    explicit ContextImpl(const ContextOptions& options);
    ~ContextImpl();

    ContextOptions options;
    std::unique_ptr<Instance> instance;
    std::unique_ptr<Device> device;
    std::unique_ptr<BufferPool> pool;
    std::unique_ptr<PipelineCache> pipelines;
    std::unique_ptr<Staging> staging;
    std::unique_ptr<FindCache> find_cache;  // Algorithm::Auto's measured choices

    // The GEMM configurations valid on this device (made on first use).
    const GemmConfigTable& gemm_configs();

private:
    std::unique_ptr<GemmConfigTable> gemm_configs_;
};

ContextImpl& impl_of(const Context& context);

}  // namespace vkconv::detail
