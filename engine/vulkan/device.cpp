#include "vulkan/device.hpp"

#include <algorithm>
#include <vector>

#include "vulkan/vk_check.hpp"

namespace vkconv::detail {

Device::Device(const InstanceFunctions& instance, VkPhysicalDevice physical, const DeviceInfo& info)
    : instance_(instance), physical_(physical), info_(info) {
    instance_.vkGetPhysicalDeviceProperties(physical_, &properties_);
    instance_.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);

    uint32_t count = 0;
    instance_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    instance_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &count, families.data());
    // Prefer a compute-only family (async compute on discrete GPUs), else any family with compute.
    uint32_t chosen = UINT32_MAX;
    for (uint32_t i = 0; i < count; ++i) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (chosen == UINT32_MAX || !(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) chosen = i;
        if (!(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) break;
    }
    if (chosen == UINT32_MAX)
        throw Error(ErrorCategory::Unsupported, "device '" + info_.name + "' has no compute queue");
    queue_family_ = chosen;
    timestamp_valid_bits_ = families[chosen].timestampValidBits;
    info_.timestamps = timestamp_valid_bits_ > 0;

    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = queue_family_;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    VKC_CHECK(nullptr, instance_.vkCreateDevice(physical_, &device_info, nullptr, &device_));
    try {
        table_.load(device_, instance_.vkGetDeviceProcAddr);
    } catch (...) {
        reinterpret_cast<PFN_vkDestroyDevice>(instance_.vkGetDeviceProcAddr(device_, "vkDestroyDevice"))(device_,
                                                                                                         nullptr);
        throw;
    }
    table_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pool_info.queueFamilyIndex = queue_family_;
    const VkResult result = table_.vkCreateCommandPool(device_, &pool_info, nullptr, &command_pool_);
    if (result != VK_SUCCESS) {  // the destructor does not run for a half-made object
        table_.vkDestroyDevice(device_, nullptr);
        VKC_CHECK(nullptr, result);
    }
    note_created(2);  // the device and its command pool
    streams_ = std::make_unique<StreamPool>(*this);
}

Device::~Device() {
    if (device_) {
        // Best effort: a lost device may refuse, and a destructor must not throw.
        table_.vkDeviceWaitIdle(device_);
        streams_.reset();
        if (command_pool_) table_.vkDestroyCommandPool(device_, command_pool_, nullptr);
        table_.vkDestroyDevice(device_, nullptr);
    }
}

void Device::throw_if_lost() const {
    if (lost_.load())
        throw Error(ErrorCategory::DeviceLost, "device '" + info_.name + "' was lost earlier; create a new Context",
                    static_cast<int32_t>(VK_ERROR_DEVICE_LOST));
}

void Device::cap_workgroups(uint32_t cap) {
    workgroup_cap_ = cap;
}

uint32_t Device::max_workgroups(int dimension) const {
    const uint32_t limit = info_.max_workgroup_count[size_t(dimension)];
    return workgroup_cap_ ? std::min(workgroup_cap_, limit) : limit;
}

void Device::lower_binding_limits(uint64_t bytes) {
    auto& limits = properties_.limits;
    limits.maxStorageBufferRange = static_cast<uint32_t>(std::min<uint64_t>(limits.maxStorageBufferRange, bytes));
    limits.maxTexelBufferElements = static_cast<uint32_t>(std::min<uint64_t>(limits.maxTexelBufferElements, bytes / 4));
    info_.max_storage_buffer_range = limits.maxStorageBufferRange;
    info_.max_texel_buffer_elements = limits.maxTexelBufferElements;
}

uint32_t Device::find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                                  VkMemoryPropertyFlags preferred) const {
    uint32_t fallback = UINT32_MAX;
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
        if (!(type_bits & (1u << i))) continue;
        const VkMemoryPropertyFlags flags = memory_.memoryTypes[i].propertyFlags;
        if ((flags & required) != required) continue;
        if ((flags & preferred) == preferred) return i;
        if (fallback == UINT32_MAX) fallback = i;
    }
    return fallback;
}

}  // namespace vkconv::detail
