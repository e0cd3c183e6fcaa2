#include "memory/buffer_pool.hpp"

#include "memory/paging.hpp"

#include <algorithm>
#include <string>

#include "vulkan/vk_check.hpp"

namespace vkconv::detail {
namespace {

constexpr VkBufferUsageFlags kBlockUsage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
    VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;

uint64_t round_up(uint64_t value, uint64_t multiple) {
    return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

BufferPool::BufferPool(Device& device, uint64_t block_bytes, uint64_t memory_limit, uint64_t min_block_bytes)
    : device_(device), memory_limit_(memory_limit) {
    const auto& limits = device_.limits();
    alignment_ = std::max<uint64_t>({limits.minStorageBufferOffsetAlignment, limits.minTexelBufferOffsetAlignment, 16});
    // No block is larger than the device's largest buffer or allocation, whatever the block size asked for.
    largest_block_ = device_.model().max_single_buffer_bytes() / alignment_ * alignment_;
    // An imposed heap (ContextOptions::device_limits) is as much as the pool may hold, as a memory limit is.
    if (const uint64_t heap = device_.imposed_heap_bytes())
        memory_limit_ = memory_limit_ ? std::min(memory_limit_, heap) : heap;
    block_bytes_ = std::min(round_up(std::max<uint64_t>(block_bytes, alignment_), alignment_), largest_block_);
    min_block_bytes_ = std::min(round_up(min_block_bytes, alignment_), block_bytes_);
}

std::string BufferPool::describe_limit() const {
    const DeviceModel& model = device_.model();
    return "this device's largest buffer of " + std::to_string(largest_block_) + " bytes (maxBufferSize " +
           std::to_string(model.max_buffer_size) + ", maxMemoryAllocationSize " +
           std::to_string(model.max_memory_allocation_size) + ")";
}

BufferPool::~BufferPool() {
    for (auto& block : blocks_) destroy_block(*block);
}

PoolAllocation BufferPool::allocate(uint64_t bytes) {
    device_.throw_if_lost();
    const uint64_t size = round(bytes);
    // Refused before any driver call: asking the driver for it would fail as if memory had run out.
    // (Not under the planted fault that puts each tensor in one buffer: tests show they notice it.)
    if (size > largest_block_ && !testing_one_buffer_tensors)
        throw Error(ErrorCategory::Unsupported, "one allocation of " + std::to_string(bytes) + " bytes is above " +
                                                    describe_limit() + "; a tensor larger than that is stored in pages, but a workspace buffer cannot be");
    PoolAllocation out;
    // Best fit: the smallest free range that holds the request, over every block.
    PoolBlock* best_block = nullptr;
    uint64_t best_size = UINT64_MAX;
    for (auto& block : blocks_) {
        for (const auto& [offset, range] : block->free_ranges) {
            if (range >= size && range < best_size) {
                best_size = range;
                best_block = block.get();
            }
        }
    }
    if (!best_block) best_block = create_block(size);
    take_from(*best_block, size, out);
    in_use_ += size;
    ++live_allocations_;
    peak_in_use_ = std::max(peak_in_use_, in_use_);
    for (PeakTracker* tracker : trackers_) tracker->in_use = std::max(tracker->in_use, in_use_);
    return out;
}

bool BufferPool::take_from(PoolBlock& block, uint64_t size, PoolAllocation& out) {
    auto best = block.free_ranges.end();
    for (auto it = block.free_ranges.begin(); it != block.free_ranges.end(); ++it)
        if (it->second >= size && (best == block.free_ranges.end() || it->second < best->second)) best = it;
    if (best == block.free_ranges.end()) return false;
    const uint64_t offset = best->first, range = best->second;
    block.free_ranges.erase(best);
    if (range > size) block.free_ranges.emplace(offset + size, range - size);
    block.used += size;
    out.block = &block;
    out.buffer = block.buffer;
    out.offset = offset;
    out.size = size;
    return true;
}

void BufferPool::release(PoolAllocation& allocation) noexcept {
    if (!allocation.block) return;
    PoolBlock& block = *allocation.block;
    uint64_t offset = allocation.offset, size = allocation.size;
    auto next = block.free_ranges.lower_bound(offset);
    if (next != block.free_ranges.end() && offset + size == next->first) {
        size += next->second;
        next = block.free_ranges.erase(next);
    }
    if (next != block.free_ranges.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == offset) {
            offset = prev->first;
            size += prev->second;
            block.free_ranges.erase(prev);
        }
    }
    block.free_ranges.emplace(offset, size);
    block.used -= allocation.size;
    in_use_ -= allocation.size;
    --live_allocations_;
    allocation = PoolAllocation{};
}

std::unique_ptr<PoolBlock> BufferPool::create_block_buffer(uint64_t size, VkMemoryRequirements& requirements) {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    VkBufferCreateInfo buffer_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    buffer_info.size = size;
    buffer_info.usage = kBlockUsage;
    buffer_info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    auto block = std::make_unique<PoolBlock>();
    block->size = size;
    VKC_CHECK(device_.lost_flag(), vk.vkCreateBuffer(dev, &buffer_info, nullptr, &block->buffer));
    device_.note_created();
    vk.vkGetBufferMemoryRequirements(dev, block->buffer, &requirements);
    block->memory_size = requirements.size;
    if (requirements.size > device_.model().max_memory_allocation_size && !testing_one_buffer_tensors) {
        vk.vkDestroyBuffer(dev, block->buffer, nullptr);
        device_.note_destroyed();
        throw Error(ErrorCategory::Unsupported, "a buffer of " + std::to_string(size) + " bytes needs " +
                                                    std::to_string(requirements.size) + " bytes of memory, above " +
                                                    describe_limit());
    }
    return block;
}

void BufferPool::fail_block(PoolBlock& block, uint64_t min_bytes, const std::string& why) {
    device_.vk().vkDestroyBuffer(device_.handle(), block.buffer, nullptr);
    device_.note_destroyed();
    throw Error(ErrorCategory::OutOfDeviceMemory,
                "cannot allocate " + std::to_string(min_bytes) + " bytes of device memory: " + why);
}

void BufferPool::check_room_for(PoolBlock& block, const VkMemoryRequirements& requirements, uint64_t min_bytes) {
    const uint64_t bytes = requirements.size;
    if (memory_limit_ && reserved_ + bytes > memory_limit_) {
        trim();
        if (reserved_ + bytes > memory_limit_)
            fail_block(block, min_bytes,
                       "the pool would hold " + std::to_string(reserved_ + bytes) + " bytes, above the context's " +
                           (device_.imposed_heap_bytes() == memory_limit_ ? "imposed device heap"
                                                                          : "device_memory_limit") +
                           " of " + std::to_string(memory_limit_) + " bytes (" + std::to_string(in_use_) +
                           " bytes in use)");
    }
    if (memory_type_ == UINT32_MAX) {
        memory_type_ = device_.find_memory_type(requirements.memoryTypeBits, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        if (memory_type_ == UINT32_MAX) fail_block(block, min_bytes, "no memory type accepts storage buffers");
    }
}

void BufferPool::allocate_block_memory(PoolBlock& block) {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    VkMemoryAllocateInfo alloc_info{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc_info.allocationSize = block.memory_size;
    alloc_info.memoryTypeIndex = memory_type_;
    auto allocate = [&] {
        ++attempts_;
        if (inject_first_ && attempts_ >= inject_first_ && attempts_ < inject_first_ + inject_count_)
            return VK_ERROR_OUT_OF_DEVICE_MEMORY;
        return vk.vkAllocateMemory(dev, &alloc_info, nullptr, &block.memory);
    };
    VkResult result = allocate();
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY) {
        // Cached empty blocks may be what stands in the way: give them back and try once more.
        trim();
        result = allocate();
    }
    if (result != VK_SUCCESS) {
        vk.vkDestroyBuffer(dev, block.buffer, nullptr);
        device_.note_destroyed();
        VKC_CHECK(device_.lost_flag(), result);
    }
    ++driver_allocations_;
    largest_buffer_created_ = std::max(largest_buffer_created_, block.size);
    largest_memory_created_ = std::max(largest_memory_created_, block.memory_size);
    device_.note_created();
    result = vk.vkBindBufferMemory(dev, block.buffer, block.memory, 0);
    if (result != VK_SUCCESS) {
        destroy_block(block);
        VKC_CHECK(device_.lost_flag(), result);
    }
}

PoolBlock* BufferPool::create_block(uint64_t min_bytes) {
    // Geometric growth: as large as what the pool holds already (so the block count grows with the
    // logarithm of the memory), between the smallest block asked for and block_bytes_.
    const uint64_t grown = std::min(block_bytes_, std::max(min_block_bytes_, round_up(reserved_, alignment_)));
    const uint64_t size = std::max(grown, min_bytes);
    VkMemoryRequirements requirements{};
    std::unique_ptr<PoolBlock> block = create_block_buffer(size, requirements);
    check_room_for(*block, requirements, min_bytes);
    allocate_block_memory(*block);
    block->free_ranges.emplace(0, size);
    reserved_ += block->memory_size;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
    for (PeakTracker* tracker : trackers_) tracker->reserved = std::max(tracker->reserved, reserved_);
    blocks_.push_back(std::move(block));
    return blocks_.back().get();
}

void BufferPool::destroy_block(PoolBlock& block) noexcept {
    const auto& vk = device_.vk();
    if (block.buffer) {
        device_.streams().forget_views(block.buffer);  // texel views of it, cached by the streams
        vk.vkDestroyBuffer(device_.handle(), block.buffer, nullptr);
        device_.note_destroyed();
    }
    if (block.memory) {
        vk.vkFreeMemory(device_.handle(), block.memory, nullptr);
        device_.note_destroyed();
    }
    block.buffer = VK_NULL_HANDLE;
    block.memory = VK_NULL_HANDLE;
}

void BufferPool::trim() noexcept {
    for (auto it = blocks_.begin(); it != blocks_.end();) {
        if ((*it)->used == 0) {
            reserved_ -= (*it)->memory_size;
            destroy_block(**it);
            it = blocks_.erase(it);
        } else {
            ++it;
        }
    }
}

void BufferPool::remove_peak_tracker(PeakTracker* tracker) noexcept {
    trackers_.erase(std::remove(trackers_.begin(), trackers_.end(), tracker), trackers_.end());
}

PoolStats BufferPool::stats() const {
    PoolStats s;
    s.in_use = in_use_;
    s.peak_in_use = peak_in_use_;
    s.reserved = reserved_;
    s.peak_reserved = peak_reserved_;
    s.driver_allocations = driver_allocations_;
    s.live_blocks = blocks_.size();
    s.live_allocations = live_allocations_;
    s.alignment = alignment_;
    s.staging_bytes = staging_bytes_;
    return s;
}

}  // namespace vkconv::detail
