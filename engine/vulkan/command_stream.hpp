// CommandStream — records copies and dispatches into one command buffer, then submits and waits (or
// submits and returns, for a Recording; or leaves submission to the application whose command buffer it
// records into).
//
// Every stream begins with a barrier from earlier compute and transfer writes to its own reads and
// writes, so work queued behind an earlier submission that nobody waited for sees its results.
// Barriers come from recorded access (as ncnn does): each command declares the buffer ranges it reads and
// writes, and a barrier is inserted only before a command that reads or writes a range an earlier,
// still-unbarriered command wrote (or writes a range one read). Descriptor sets come from pools owned by
// the stream and die with it. Optional GPU timestamps bracket the work between begin_timing/end_timing.
#pragma once

#include <memory>

#include "vulkan/vk_api.hpp"

#include <cstdint>
#include <span>
#include <vector>

#include "vkconv/device.hpp"
#include "vulkan/device.hpp"
#include "vulkan/pipeline_cache.hpp"

namespace vkconv::detail {

struct BufferRange {
    VkBuffer buffer = VK_NULL_HANDLE;
    uint64_t offset = 0;
    uint64_t size = 0;
};

struct Binding {
    BufferRange range;
    bool written = false;
    // For texel-buffer descriptors: the view's format (a view over `range` is made for the dispatch).
    VkFormat texel_format = VK_FORMAT_UNDEFINED;
};

// What a submission waits for before it runs (the application's semaphores).
struct SemaphoreWait {
    VkSemaphore semaphore = VK_NULL_HANDLE;
    uint64_t value = 0;  // timeline semaphores; ignored for binary ones
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
};

class CommandStream {
public:
    explicit CommandStream(Device& device);
    // Records into the application's command buffer (already begun); never submitted here.
    CommandStream(Device& device, VkCommandBuffer external);
    // A planning stream: appends each dispatch to `plan` (vkconv/plan.hpp) and records nothing; it touches
    // no Vulkan object, so it works on a modelled device. Copies are not listed; it cannot be submitted.
    CommandStream(Device& device, std::vector<PlannedDispatch>& plan, std::vector<GemmShape>* gemms = nullptr);
    ~CommandStream();
    CommandStream(const CommandStream&) = delete;
    CommandStream& operator=(const CommandStream&) = delete;

    void copy(const BufferRange& source, const BufferRange& destination);
    // The work of the next dispatch, for a plan's listing: the FLOPs it computes and the longest chain of
    // multiply-adds (or additions) one invocation runs. Ignored by a recording stream.
    void note_work(uint64_t flops, uint64_t serial_macs_per_invocation) {
        work_flops_ = flops, work_serial_ = serial_macs_per_invocation;
    }
    bool planning() const { return plan_ != nullptr; }
    // A planning stream lists the GEMM products it records (Plan::gemms) where it was given a list.
    void note_gemm(const GemmShape& shape) {
        if (gemms_) gemms_->push_back(shape);
    }
    void dispatch(const Pipeline& pipeline, std::span<const Binding> bindings, const void* push_constants,
                  uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);

    void begin_timing();
    void end_timing();
    // Ends recording, submits, waits. Throws DeviceLost (sticky) or VulkanFailure on failure.
    void submit_and_wait();
    // Ends recording and submits after `waits`; signals the stream's fence and, where the device has one,
    // its timeline semaphore (the value is returned; 0 without).
    uint64_t submit(std::span<const SemaphoreWait> waits = {});
    // Waits for the submission (then reads the timestamps).
    void wait();
    bool done() const;  // the submission completed (never blocks)
    VkFence fence() const;
    bool external() const { return external_; }
    // Milliseconds between begin_timing and end_timing on the GPU; negative without timestamps.
    double gpu_ms() const { return gpu_ms_; }
    uint32_t dispatch_count() const { return dispatches_; }
    Device& device() const { return device_; }

private:
    struct Access {
        BufferRange range;
        bool written;
    };
    void release() noexcept;
    void begin_barrier();
    void access(std::span<const Access> accesses);
    VkDescriptorSet allocate_set(VkDescriptorSetLayout layout);
    VkBufferView make_view(const BufferRange& range, VkFormat format);
    // Device::planted_fault's Scramble: the first half of each written range copied over its last half.
    void scramble_writes(std::span<const Binding> bindings);

    Device& device_;
    const DeviceFunctions& vk_;
    std::unique_ptr<StreamResources> resources_;  // lent by the device's StreamPool, given back on release
    VkCommandBuffer commands_ = VK_NULL_HANDLE;
    VkQueryPool timestamps_ = VK_NULL_HANDLE;
    bool submitted_ = false, completed_ = false, external_ = false;
    std::vector<Access> pending_;  // accesses since the last barrier
    bool recording_ = true;
    double gpu_ms_ = -1;
    uint32_t dispatches_ = 0;
    std::vector<PlannedDispatch>* plan_ = nullptr;
    std::vector<GemmShape>* gemms_ = nullptr;
    uint64_t work_flops_ = 0, work_serial_ = 0;
};

}  // namespace vkconv::detail
