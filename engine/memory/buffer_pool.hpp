// BufferPool — every device buffer of a context, with exact counters.
//
// Design: sub-allocation from large blocks. A block is one VkDeviceMemory with one VkBuffer bound over
// all of it (usage: storage, storage/uniform texel, transfer), so an allocation is just (block buffer,
// offset, size) and binds as a descriptor range or a buffer view without a VkBuffer of its own. Blocks are
// `block_bytes` large; a request larger than that gets a block of its own, sized to fit. Inside a block,
// free ranges are kept in an offset-ordered map: allocation is best fit over all blocks, release merges
// with both neighbours, so long-lived tensors and short-lived workspaces of a training loop keep reusing
// the same memory instead of going back to the driver. Empty blocks stay reserved until trim(), which an
// allocation also calls before it would exceed the memory limit or after the driver says out of memory.
//
// Offsets and sizes are multiples of `alignment` = max(minStorageBufferOffsetAlignment,
// minTexelBufferOffsetAlignment, 16), so any allocation can be bound as a storage buffer, viewed as a texel
// buffer, and read as vec4. Counters: in_use is the sum of the rounded sizes of live allocations (the
// figure workspace queries predict), reserved the sum of the blocks' memory sizes as the driver reported
// them in VkMemoryRequirements.
#pragma once

#include "vulkan/vk_api.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vkconv/pool.hpp"
#include "vulkan/device.hpp"

namespace vkconv::detail {

struct PoolBlock {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkBuffer buffer = VK_NULL_HANDLE;
    uint64_t size = 0;         // usable bytes (the buffer's size)
    uint64_t memory_size = 0;  // bytes reserved from the driver for it
    uint64_t used = 0;
    std::map<uint64_t, uint64_t> free_ranges;  // offset -> size
};

// A range of a pool block, or (block null) of an application's buffer that the pool does not own.
struct PoolAllocation {
    PoolBlock* block = nullptr;
    VkBuffer buffer = VK_NULL_HANDLE;
    uint64_t offset = 0;
    uint64_t size = 0;  // rounded up to the pool alignment
    explicit operator bool() const { return buffer != VK_NULL_HANDLE; }
};

class BufferPool {
public:
    BufferPool(Device& device, uint64_t block_bytes, uint64_t memory_limit, uint64_t min_block_bytes = 0);
    ~BufferPool();
    BufferPool(const BufferPool&) = delete;
    BufferPool& operator=(const BufferPool&) = delete;

    PoolAllocation allocate(uint64_t bytes);
    void release(PoolAllocation& allocation) noexcept;
    void trim() noexcept;

    PoolStats stats() const;
    void reset_peak() {
        peak_in_use_ = in_use_;
        peak_reserved_ = reserved_;
    }
    uint64_t alignment() const { return alignment_; }
    // The largest allocation the pool can make: the device's largest buffer and allocation, aligned down.
    uint64_t largest_allocation() const { return largest_block_; }
    // Tests: the largest VkBuffer and VkDeviceMemory the pool has created since it was made.
    uint64_t largest_buffer_created() const { return largest_buffer_created_; }
    uint64_t largest_memory_created() const { return largest_memory_created_; }
    uint64_t round(uint64_t bytes) const {
        return (std::max<uint64_t>(bytes, 1) + alignment_ - 1) / alignment_ * alignment_;
    }
    void set_staging_bytes(uint64_t bytes) { staging_bytes_ = bytes; }

    // Scoped peak trackers (PeakScope): each registered tracker is raised to in_use on every allocation
    // and to reserved on every block the pool takes from the driver.
    struct PeakTracker {
        uint64_t in_use = 0, reserved = 0;
    };
    void add_peak_tracker(PeakTracker* tracker) { trackers_.push_back(tracker); }
    void remove_peak_tracker(PeakTracker* tracker) noexcept;
    uint64_t in_use() const { return in_use_; }
    // Tests: the `count` vkAllocateMemory attempts starting with the `nth` from now (1 = the next one)
    // fail with VK_ERROR_OUT_OF_DEVICE_MEMORY. nth = 0 disarms.
    void inject_allocation_failures(uint64_t nth, uint64_t count) {
        inject_first_ = nth ? attempts_ + nth : 0;
        inject_count_ = count;
    }
    uint64_t reserved() const { return reserved_; }
    uint64_t driver_allocations() const { return driver_allocations_; }

private:
    PoolBlock* create_block(uint64_t min_bytes);
    // create_block's steps: the block's buffer (refused where its memory would exceed the largest
    // allocation), the pool's limit and memory type, the memory (after a trim where the driver is out of
    // it) bound to the buffer. Each gives the buffer back before it throws.
    std::unique_ptr<PoolBlock> create_block_buffer(uint64_t size, VkMemoryRequirements& requirements);
    void check_room_for(PoolBlock& block, const VkMemoryRequirements& requirements, uint64_t min_bytes);
    void allocate_block_memory(PoolBlock& block);
    [[noreturn]] void fail_block(PoolBlock& block, uint64_t min_bytes, const std::string& why);
    void destroy_block(PoolBlock& block) noexcept;
    bool take_from(PoolBlock& block, uint64_t size, PoolAllocation& out);

    Device& device_;
    std::string describe_limit() const;
    uint64_t block_bytes_;
    uint64_t min_block_bytes_;  // ContextOptions::pool_min_block_bytes, rounded, at most block_bytes_
    uint64_t largest_block_ = UINT64_MAX;
    uint64_t largest_buffer_created_ = 0, largest_memory_created_ = 0;
    uint64_t memory_limit_;
    uint64_t alignment_;
    uint32_t memory_type_ = UINT32_MAX;
    std::vector<std::unique_ptr<PoolBlock>> blocks_;
    std::vector<PeakTracker*> trackers_;
    uint64_t in_use_ = 0, peak_in_use_ = 0, reserved_ = 0, peak_reserved_ = 0;
    uint64_t driver_allocations_ = 0, live_allocations_ = 0, staging_bytes_ = 0;
    uint64_t attempts_ = 0, inject_first_ = 0, inject_count_ = 0;  // vkAllocateMemory calls tried; injection
};

}  // namespace vkconv::detail
