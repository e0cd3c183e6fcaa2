// What a Context owns (or, made from the application's device, uses), in creation order: instance, device
// (with its command pool), find cache, pool, pipelines, staging, tuning, and the GEMM configurations on first
// use. Destroyed in reverse, every part before the device. Tensors and PeakScopes hold a shared_ptr to it,
// so it outlives them.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_set>

#include "memory/buffer_pool.hpp"
#include "vkconv/context.hpp"
#include "vkconv/error.hpp"
#include "vkconv/testing.hpp"
#include "vulkan/device.hpp"
#include "vulkan/instance.hpp"
#include "vulkan/pipeline_cache.hpp"

namespace vkconv::detail {

class Staging;
class FindCache;
class Tuning;
struct GemmConfigTable;

// Limits below the device's own, for tests (testing::make_context; 0 = the device's own).
struct LoweredLimits {
    uint32_t max_workgroups_per_dispatch = 0;
    uint64_t max_storage_buffer_range = 0;
};

struct ContextImpl {
    // `lowered`: testing::make_context's limits; Context(options) passes none.
    explicit ContextImpl(const ContextOptions& options, const LoweredLimits& lowered = {});
    ContextImpl(const ExternalDevice& external, const ContextOptions& options);
    // A context for plans only (vkconv/plan.hpp): a modelled device, a pool that counts but never
    // allocates, pipelines that are descriptions. No instance, no staging, no Vulkan call.
    explicit ContextImpl(const DeviceModel& model);
    ~ContextImpl();

    ContextOptions options;
    std::unique_ptr<Instance> instance;
    std::unique_ptr<Device> device;
    std::unique_ptr<BufferPool> pool;
    std::unique_ptr<PipelineCache> pipelines;
    std::unique_ptr<Staging> staging;
    // The parts of the layers above, which the context keeps but does not know (shared_ptr: destroyed with
    // the context, wherever they are defined): Algorithm::Auto's measured choices (select/find_cache.hpp),
    // `vkconv tune`'s winners for this device (gemm/tuning.hpp; empty for a plan's modelled device) and the
    // GEMM configurations valid on it (gemm/gemm_config.hpp, made on first use).
    std::shared_ptr<FindCache> find_cache;
    std::shared_ptr<Tuning> tuning;
    std::shared_ptr<GemmConfigTable> gemm_config_table;
    // How Auto chooses where a pass's options do not say (ContextOptions::auto_choice, VKCONV_AUTO_CHOICE).
    AutoChoice auto_choice = AutoChoice::Stored;
    // A context runs one call at a time: every public entry point that touches the context holds this
    // (recursive: find's measuring calls the passes) for the whole call, so calls from several threads
    // are serialised and give the single-thread results bit for bit.
    std::recursive_mutex mutex;
    // The passes (conv/pass_plan.cpp's pass_key) whose pipelines a dry run has already gathered and built.
    std::unordered_set<uint64_t> prebuilt_passes;

private:
    // After the device: limits from the options, then `lowered`; caches, pool, pipelines, staging.
    void finish_setup(const LoweredLimits& lowered);
};

ContextImpl& impl_of(const Context& context);

// The context's lock for the length of a public call (ContextImpl::mutex).
[[nodiscard]] inline std::unique_lock<std::recursive_mutex> serialise(ContextImpl& impl) {
    return std::unique_lock<std::recursive_mutex>(impl.mutex);
}
[[nodiscard]] inline std::unique_lock<std::recursive_mutex> serialise(const Context& context) {
    return serialise(impl_of(context));
}

}  // namespace vkconv::detail
