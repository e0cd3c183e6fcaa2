// Staging — host<->device transfers through one reused host-visible buffer.
//
// The staging buffer grows to the largest transfer seen, up to kMaxStagingBytes; larger transfers go
// through it in pieces. Its size is reported as PoolStats::staging_bytes, apart from device memory.
#pragma once

#include "vulkan/vk_api.hpp"

#include <cstdint>

#include "memory/buffer_pool.hpp"

namespace vkconv::detail {

class Staging {
public:
    static constexpr uint64_t kMaxStagingBytes = 32ull << 20;

    Staging(Device& device, BufferPool& pool);
    ~Staging();
    Staging(const Staging&) = delete;
    Staging& operator=(const Staging&) = delete;

    void upload(const PoolAllocation& destination, const void* data, uint64_t bytes);
    void download(const PoolAllocation& source, void* data, uint64_t bytes);

private:
    void reserve(uint64_t bytes);
    void release() noexcept;

    Device& device_;
    BufferPool& pool_;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    void* mapped_ = nullptr;
    uint64_t size_ = 0;
    bool coherent_ = true;
};

}  // namespace vkconv::detail
