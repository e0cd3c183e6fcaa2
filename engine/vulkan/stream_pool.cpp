#include "vulkan/stream_pool.hpp"

#include <array>

#include "vulkan/device.hpp"
#include "vulkan/vk_check.hpp"

namespace vkconv::detail {
namespace {

constexpr uint32_t kSetsPerPool = 64;
constexpr uint32_t kDescriptorsPerType = kSetsPerPool * 8;

}  // namespace

StreamPool::StreamPool(Device& device) : device_(device) {}

StreamPool::~StreamPool() {
    for (auto& resources : free_) destroy(*resources);
    for (auto& [key, view] : views_) device_.vk().vkDestroyBufferView(device_.handle(), view, nullptr);
    device_.note_destroyed(views_.size());
}

void StreamPool::destroy(StreamResources& r) noexcept {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    for (VkDescriptorPool pool : r.descriptor_pools) vk.vkDestroyDescriptorPool(dev, pool, nullptr);
    device_.note_destroyed(r.descriptor_pools.size());
    if (r.timestamps) vk.vkDestroyQueryPool(dev, r.timestamps, nullptr), device_.note_destroyed();
    if (r.fence) vk.vkDestroyFence(dev, r.fence, nullptr), device_.note_destroyed();
    if (r.commands) {
        std::lock_guard lock(device_.command_pool_mutex());
        vk.vkFreeCommandBuffers(dev, device_.command_pool(), 1, &r.commands);
        device_.note_destroyed();
    }
    r = {};
}

std::unique_ptr<StreamResources> StreamPool::acquire() {
    {
        std::lock_guard lock(mutex_);
        if (!free_.empty()) {
            auto resources = std::move(free_.back());
            free_.pop_back();
            return resources;
        }
    }
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    auto r = std::make_unique<StreamResources>();
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = device_.command_pool();
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VkResult result;
    {
        // The command pool is the device's, shared by every stream: its use is serialised.
        std::lock_guard lock(device_.command_pool_mutex());
        result = vk.vkAllocateCommandBuffers(dev, &alloc, &r->commands);
    }
    if (result == VK_SUCCESS) {
        device_.note_created();
        VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        result = vk.vkCreateFence(dev, &fence_info, nullptr, &r->fence);
        if (result == VK_SUCCESS) device_.note_created();
    }
    if (result != VK_SUCCESS) {
        destroy(*r);
        VKC_CHECK(device_.lost_flag(), result);
    }
    return r;
}

void StreamPool::recycle(std::unique_ptr<StreamResources> r, bool settled) noexcept {
    if (!r) return;
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    if (!settled) {
        // Best effort (a lost device may refuse): the submission's own fence, not the whole device, whose
        // other queues may be the application's.
        vk.vkWaitForFences(dev, 1, &r->fence, VK_TRUE, UINT64_MAX);
        destroy(*r);
        return;
    }
    bool reusable = vk.vkResetFences(dev, 1, &r->fence) == VK_SUCCESS;
    {
        std::lock_guard lock(device_.command_pool_mutex());
        reusable = reusable && vk.vkResetCommandBuffer(r->commands, 0) == VK_SUCCESS;
    }
    for (VkDescriptorPool pool : r->descriptor_pools)
        reusable = reusable && vk.vkResetDescriptorPool(dev, pool, 0) == VK_SUCCESS;
    if (!reusable) {
        destroy(*r);
        return;
    }
    r->pool = 0, r->sets_in_pool = 0;
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(r));
}

VkDescriptorSet StreamPool::allocate_set(StreamResources& r, VkDescriptorSetLayout layout) {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    if (r.sets_in_pool == kSetsPerPool) ++r.pool, r.sets_in_pool = 0;
    if (r.pool == r.descriptor_pools.size()) {
        const std::array<VkDescriptorPoolSize, 3> sizes{
            VkDescriptorPoolSize{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerType},
            VkDescriptorPoolSize{VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, kDescriptorsPerType},
            VkDescriptorPoolSize{VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, kDescriptorsPerType}};
        VkDescriptorPoolCreateInfo info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        info.maxSets = kSetsPerPool;
        info.poolSizeCount = static_cast<uint32_t>(sizes.size());
        info.pPoolSizes = sizes.data();
        VkDescriptorPool pool = VK_NULL_HANDLE;
        VKC_CHECK(device_.lost_flag(), vk.vkCreateDescriptorPool(dev, &info, nullptr, &pool));
        device_.note_created();
        r.descriptor_pools.push_back(pool);
    }
    VkDescriptorSetAllocateInfo alloc{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    alloc.descriptorPool = r.descriptor_pools[r.pool];
    alloc.descriptorSetCount = 1;
    alloc.pSetLayouts = &layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    VKC_CHECK(device_.lost_flag(), vk.vkAllocateDescriptorSets(dev, &alloc, &set));
    ++r.sets_in_pool;
    return set;
}

VkQueryPool StreamPool::timestamps(StreamResources& r) {
    if (!r.timestamps) {
        VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
        info.queryType = VK_QUERY_TYPE_TIMESTAMP;
        info.queryCount = 2;
        VKC_CHECK(device_.lost_flag(), device_.vk().vkCreateQueryPool(device_.handle(), &info, nullptr, &r.timestamps));
        device_.note_created();
    }
    return r.timestamps;
}

VkBufferView StreamPool::view(VkBuffer buffer, uint64_t offset, uint64_t bytes, VkFormat format) {
    std::lock_guard lock(mutex_);
    const auto key = std::make_tuple(buffer, offset, bytes, format);
    if (auto it = views_.find(key); it != views_.end()) return it->second;
    VkBufferViewCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
    info.buffer = buffer;
    info.format = format;
    info.offset = offset;
    info.range = bytes;
    VkBufferView view = VK_NULL_HANDLE;
    VKC_CHECK(device_.lost_flag(), device_.vk().vkCreateBufferView(device_.handle(), &info, nullptr, &view));
    device_.note_created();
    views_.emplace(key, view);
    return view;
}

void StreamPool::forget_views(VkBuffer buffer) noexcept {
    std::lock_guard lock(mutex_);
    for (auto it = views_.begin(); it != views_.end();) {
        if (std::get<0>(it->first) == buffer) {
            device_.vk().vkDestroyBufferView(device_.handle(), it->second, nullptr);
            device_.note_destroyed();
            it = views_.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace vkconv::detail
