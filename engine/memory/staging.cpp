#include "memory/staging.hpp"

#include <algorithm>
#include <cstring>

#include "vulkan/command_stream.hpp"
#include "vulkan/vk_check.hpp"

namespace vkconv::detail {

Staging::Staging(Device& device, BufferPool& pool) : device_(device), pool_(pool) {}

Staging::~Staging() {
    release();
}

void Staging::release() noexcept {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    if (mapped_) vk.vkUnmapMemory(dev, memory_);
    if (buffer_) vk.vkDestroyBuffer(dev, buffer_, nullptr), device_.note_destroyed();
    if (memory_) vk.vkFreeMemory(dev, memory_, nullptr), device_.note_destroyed();
    mapped_ = nullptr;
    buffer_ = VK_NULL_HANDLE;
    memory_ = VK_NULL_HANDLE;
    size_ = 0;
    pool_.set_staging_bytes(0);
}

void Staging::reserve(uint64_t bytes) {
    const uint64_t wanted = std::min(bytes, kMaxStagingBytes);
    if (size_ >= wanted) return;
    release();
    uint64_t size = 1ull << 20;
    while (size < wanted) size <<= 1;
    size = std::min(size, kMaxStagingBytes);

    Device& device = device_;
    const auto& vk = device.vk();
    VkDevice dev = device.handle();
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = size;
    info.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    VKC_CHECK(device.lost_flag(), vk.vkCreateBuffer(dev, &info, nullptr, &buffer_));
    device.note_created();
    VkMemoryRequirements requirements{};
    vk.vkGetBufferMemoryRequirements(dev, buffer_, &requirements);
    // Cached memory makes the downloads' host reads fast; coherence spares flushes where offered.
    const uint32_t type =
        device.find_memory_type(requirements.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT,
                                VK_MEMORY_PROPERTY_HOST_CACHED_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (type == UINT32_MAX) {
        release();
        throw Error(ErrorCategory::Unsupported, "device has no host-visible memory for staging");
    }
    coherent_ = device.memory().memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = requirements.size;
    alloc.memoryTypeIndex = type;
    VkResult result = vk.vkAllocateMemory(dev, &alloc, nullptr, &memory_);
    if (result == VK_SUCCESS) device.note_created();
    if (result == VK_SUCCESS) result = vk.vkBindBufferMemory(dev, buffer_, memory_, 0);
    const char* call = "vkAllocateMemory/vkBindBufferMemory";
    if (result == VK_SUCCESS) {
        call = "vkMapMemory";
        result = device.fault_at(Device::FaultPoint::Mapping);
        if (result == VK_SUCCESS) result = vk.vkMapMemory(dev, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_);
    }
    if (result != VK_SUCCESS) {
        release();
        VKC_CHECK_RESULT(device.lost_flag(), result, call);
    }
    size_ = size;
    pool_.set_staging_bytes(requirements.size);
}

void Staging::upload(const PoolAllocation& destination, const void* data, uint64_t bytes) {
    reserve(bytes);
    const auto* source = static_cast<const unsigned char*>(data);
    for (uint64_t done = 0; done < bytes;) {
        const uint64_t piece = std::min(size_, bytes - done);
        std::memcpy(mapped_, source + done, piece);
        if (!coherent_) {
            VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, memory_, 0, VK_WHOLE_SIZE};
            VKC_CHECK(device_.lost_flag(), device_.vk().vkFlushMappedMemoryRanges(device_.handle(), 1, &range));
        }
        CommandStream stream(device_);
        stream.copy({buffer_, 0, piece}, {destination.buffer, destination.offset + done, piece});
        stream.submit_and_wait();
        done += piece;
    }
}

void Staging::download(const PoolAllocation& source, void* data, uint64_t bytes) {
    reserve(bytes);
    auto* target = static_cast<unsigned char*>(data);
    for (uint64_t done = 0; done < bytes;) {
        const uint64_t piece = std::min(size_, bytes - done);
        CommandStream stream(device_);
        stream.copy({source.buffer, source.offset + done, piece}, {buffer_, 0, piece});
        stream.submit_and_wait();
        if (!coherent_) {
            VkMappedMemoryRange range{VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE, nullptr, memory_, 0, VK_WHOLE_SIZE};
            VKC_CHECK(device_.lost_flag(), device_.vk().vkInvalidateMappedMemoryRanges(device_.handle(), 1, &range));
        }
        std::memcpy(target + done, mapped_, piece);
        done += piece;
    }
}

}  // namespace vkconv::detail
