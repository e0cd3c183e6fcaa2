// What command streams record and submit with, kept by the device and lent out again: a command buffer, a
// fence, a timestamp query pool and descriptor pools per stream (reset, never destroyed, between uses),
// and texel-buffer views cached by range. A steady-state pass therefore creates no Vulkan object; the
// device counts every object it creates (Device::objects_created) so a test can hold it to that.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "vulkan/vk_api.hpp"

namespace vkconv::detail {

class Device;

struct StreamResources {
    VkCommandBuffer commands = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkQueryPool timestamps = VK_NULL_HANDLE;  // two queries, made the first time a stream is timed
    std::vector<VkDescriptorPool> descriptor_pools;
    size_t pool = 0;  // the pool sets come from now
    uint32_t sets_in_pool = 0;
};

class StreamPool {
public:
    explicit StreamPool(Device& device);
    ~StreamPool();
    StreamPool(const StreamPool&) = delete;
    StreamPool& operator=(const StreamPool&) = delete;

    // Resources ready to record (an unused command buffer, an unsignalled fence, empty descriptor pools).
    std::unique_ptr<StreamResources> acquire();
    // Back from a stream whose work completed or was never submitted (`settled`): reset for the next one.
    // Unsettled resources (a submission that may still run) are destroyed after the device is idle.
    void recycle(std::unique_ptr<StreamResources> resources, bool settled) noexcept;

    // A descriptor set of `layout` from the stream's descriptor pools, adding a pool when they are full.
    VkDescriptorSet allocate_set(StreamResources& resources, VkDescriptorSetLayout layout);
    VkQueryPool timestamps(StreamResources& resources);
    // The texel view of `range` in `format` (`texels` of them), made once and kept until its buffer goes.
    VkBufferView view(VkBuffer buffer, uint64_t offset, uint64_t bytes, VkFormat format);
    // Destroys the cached views of `buffer` (called before the buffer itself is destroyed).
    void forget_views(VkBuffer buffer) noexcept;

private:
    void destroy(StreamResources& resources) noexcept;

    Device& device_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<StreamResources>> free_;
    std::map<std::tuple<VkBuffer, uint64_t, uint64_t, VkFormat>, VkBufferView> views_;
};

}  // namespace vkconv::detail
