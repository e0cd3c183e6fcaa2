#include "vulkan/device.hpp"

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "vulkan/vk_check.hpp"

namespace vkconv::detail {

namespace {

// Whether the physical device and the instance both reach Vulkan 1.2 and the device has timeline semaphores.
bool supports_timeline(const InstanceFunctions& vk, VkPhysicalDevice physical, uint32_t api_version) {
    if (api_version < VK_API_VERSION_1_2) return false;
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &timeline;
    vk.vkGetPhysicalDeviceFeatures2(physical, &features);
    return timeline.timelineSemaphore == VK_TRUE;
}

const InstanceFunctions& no_instance() {
    static const InstanceFunctions none{};
    return none;
}

}  // namespace

Device::Device(const DeviceModel& model)
    : instance_(no_instance()), physical_(VK_NULL_HANDLE), modelled_(true), model_(model) {}

Device::Device(const InstanceFunctions& instance, VkPhysicalDevice physical, const DeviceModel& model)
    : instance_(instance), physical_(physical), model_(model) {
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
        throw Error(ErrorCategory::Unsupported, "device '" + model_.info.name + "' has no compute queue");
    queue_family_ = chosen;
    timestamp_valid_bits_ = families[chosen].timestampValidBits;
    model_.info.timestamps = timestamp_valid_bits_ > 0;

    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = queue_family_;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    // Where the device has them: timeline semaphores (asynchronous submissions signal one the application
    // can wait on) and 16-bit storage (for shaders that read and write 16-bit tensors). Nothing else is enabled:
    // vkconv needs no feature beyond Vulkan 1.1's core.
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    timeline.timelineSemaphore = VK_TRUE;
    const bool use_timeline =
        supports_timeline(instance_, physical_, std::min(model_.properties.apiVersion, loader().api_version));
    VkPhysicalDevice16BitStorageFeatures storage{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    storage.storageBuffer16BitAccess = VK_TRUE;
    if (use_timeline) device_info.pNext = &timeline;
    if (model_.info.storage_16bit) {
        storage.pNext = use_timeline ? &timeline : nullptr;
        device_info.pNext = &storage;
    }
    VKC_CHECK(nullptr, instance_.vkCreateDevice(physical_, &device_info, nullptr, &device_));
    note_created();
    try {
        finish_setup();
        if (use_timeline) make_timeline();
    } catch (...) {
        streams_.reset();
        if (command_pool_) table_.vkDestroyCommandPool(device_, command_pool_, nullptr);
        reinterpret_cast<PFN_vkDestroyDevice>(instance_.vkGetDeviceProcAddr(device_, "vkDestroyDevice"))(device_,
                                                                                                         nullptr);
        throw;
    }
}

Device::Device(const InstanceFunctions& instance, VkPhysicalDevice physical, const DeviceModel& model,
               const ExternalQueue& external)
    : instance_(instance), physical_(physical), model_(model) {
    owned_ = false;
    external_queue_mutex_ = external.queue_mutex;
    model_.info.storage_16bit = false;  // what the application enabled is not known
    instance_.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
    if (model_.properties.apiVersion < VK_API_VERSION_1_1)
        throw Error(ErrorCategory::Unsupported, "the application's device '" + model_.info.name + "' is Vulkan " +
                                                    model_.info.api_version + "; vkconv needs Vulkan 1.1");
    uint32_t count = 0;
    instance_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    instance_.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &count, families.data());
    if (external.queue_family >= count)
        throw Error(ErrorCategory::InvalidArgument,
                    "ExternalDevice::queue_family " + std::to_string(external.queue_family) +
                        " is out of range (the device has " + std::to_string(count) + " queue families)");
    const VkQueueFamilyProperties& family = families[external.queue_family];
    if (!(family.queueFlags & VK_QUEUE_COMPUTE_BIT))
        throw Error(ErrorCategory::Unsupported, "queue family " + std::to_string(external.queue_family) +
                                                    " of the application's device has no VK_QUEUE_COMPUTE_BIT");
    if (external.queue_index >= family.queueCount)
        throw Error(ErrorCategory::InvalidArgument,
                    "ExternalDevice::queue_index " + std::to_string(external.queue_index) +
                        " is out of range (queue family " + std::to_string(external.queue_family) + " has " +
                        std::to_string(family.queueCount) + " queues)");
    if (external.timeline_semaphores &&
        !supports_timeline(instance_, physical_, std::min(model_.properties.apiVersion, VK_API_VERSION_1_2)))
        throw Error(ErrorCategory::Unsupported,
                    "ExternalDevice::timeline_semaphores is set but the device has no Vulkan 1.2 timeline semaphores");
    queue_family_ = external.queue_family;
    queue_index_ = external.queue_index;
    timestamp_valid_bits_ = family.timestampValidBits;
    model_.info.timestamps = timestamp_valid_bits_ > 0;
    device_ = external.device;
    try {
        finish_setup();
        if (external.timeline_semaphores) {
            if (!table_.vkWaitSemaphores || !table_.vkGetSemaphoreCounterValue)
                throw Error(ErrorCategory::Unsupported,
                            "ExternalDevice::timeline_semaphores is set but the device does not provide "
                            "vkWaitSemaphores (was it created with Vulkan 1.2 and the timelineSemaphore feature?)");
            make_timeline();
        }
    } catch (...) {
        streams_.reset();
        if (command_pool_) table_.vkDestroyCommandPool(device_, command_pool_, nullptr);
        device_ = VK_NULL_HANDLE;
        throw;
    }
}

void Device::finish_setup() {
    table_.load(device_, instance_.vkGetDeviceProcAddr);
    table_.vkGetDeviceQueue(device_, queue_family_, queue_index_, &queue_);
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pool_info.queueFamilyIndex = queue_family_;
    VKC_CHECK(nullptr, table_.vkCreateCommandPool(device_, &pool_info, nullptr, &command_pool_));
    note_created();
    streams_ = std::make_unique<StreamPool>(*this);
}

void Device::make_timeline() {
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    type.initialValue = 0;
    VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    info.pNext = &type;
    VKC_CHECK(nullptr, table_.vkCreateSemaphore(device_, &info, nullptr, &timeline_));
    note_created();
}

Device::~Device() {
    if (device_) {
        // vkconv's own device: wait for everything (best effort: a lost device may refuse, and a destructor
        // must not throw). The application's: nothing of vkconv's is in flight (submissions and recordings
        // keep the context alive), and its other queues are not vkconv's to wait for.
        if (owned_) table_.vkDeviceWaitIdle(device_);
        wait_for_timeline();
        streams_.reset();
        if (timeline_) table_.vkDestroySemaphore(device_, timeline_, nullptr), note_destroyed();
        if (command_pool_) table_.vkDestroyCommandPool(device_, command_pool_, nullptr), note_destroyed();
        if (owned_) table_.vkDestroyDevice(device_, nullptr), note_destroyed();
    }
}

// Every submission's fence has been waited for, but a fence may signal before the driver is done with the
// submission's timeline signal: Mesa's emulated timelines (lavapipe) add the signalled point to the semaphore on
// a submit thread after the work ran, and a semaphore destroyed in between leaks that point. Waiting on the
// timeline itself for its last value returns only once the value is in place. Best effort, as above.
void Device::wait_for_timeline() noexcept {
    if (!timeline_ || timeline_submitted_ == 0 || lost_.load() || !table_.vkWaitSemaphores) return;
    VkSemaphoreWaitInfo wait{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    wait.semaphoreCount = 1;
    wait.pSemaphores = &timeline_;
    wait.pValues = &timeline_submitted_;
    table_.vkWaitSemaphores(device_, &wait, UINT64_MAX);
}

void Device::forget_foreign_buffer(VkBuffer buffer) noexcept {
    auto it = foreign_.find(buffer);
    if (it != foreign_.end() && --it->second == 0) foreign_.erase(it);
}

VkResult Device::fault_at(FaultPoint) noexcept {
    const uint64_t passed = ++fault_points_;
    return passed == lose_at_.load() ? VK_ERROR_DEVICE_LOST : VK_SUCCESS;
}

void Device::throw_if_lost() const {
    if (lost_.load())
        throw Error(ErrorCategory::DeviceLost, "device '" + model_.info.name + "' was lost earlier; create a new Context",
                    static_cast<int32_t>(VK_ERROR_DEVICE_LOST));
}

void Device::cap_workgroups(uint32_t cap) {
    workgroup_cap_ = cap;
}

uint32_t Device::max_workgroups(int dimension) const {
    const uint32_t limit = model_.info.max_workgroup_count[size_t(dimension)];
    return workgroup_cap_ ? std::min(workgroup_cap_, limit) : limit;
}

void Device::lower_binding_limits(uint64_t bytes) {
    auto& limits = model_.properties.limits;
    limits.maxStorageBufferRange = static_cast<uint32_t>(std::min<uint64_t>(limits.maxStorageBufferRange, bytes));
    limits.maxTexelBufferElements = static_cast<uint32_t>(std::min<uint64_t>(limits.maxTexelBufferElements, bytes / 4));
    model_.info.max_storage_buffer_range = limits.maxStorageBufferRange;
    model_.info.max_texel_buffer_elements = limits.maxTexelBufferElements;
}

void Device::lower_buffer_limits(uint64_t bytes) {
    model_.max_buffer_size = std::min(model_.max_buffer_size, bytes);
    model_.max_memory_allocation_size = std::min(model_.max_memory_allocation_size, bytes);
    model_.info.max_buffer_bytes = model_.max_single_buffer_bytes();
    lower_binding_limits(model_.max_single_buffer_bytes());
}

void Device::impose_limits(const DeviceModel& imposed) {
    VkPhysicalDeviceLimits& limits = model_.properties.limits;
    const VkPhysicalDeviceLimits& other = imposed.properties.limits;
    // Compared in 64 bits: a 64-bit size (a buffer of 80 GiB) must not wrap when it lowers a 32-bit limit.
    auto lower = [](auto& field, auto value) {
        using Field = std::remove_reference_t<decltype(field)>;
        field = static_cast<Field>(std::min<uint64_t>(field, static_cast<uint64_t>(value)));
    };
    auto raise = [](auto& field, auto value) {
        using Field = std::remove_reference_t<decltype(field)>;
        field = static_cast<Field>(std::max<uint64_t>(field, static_cast<uint64_t>(value)));
    };
    lower(limits.maxStorageBufferRange, other.maxStorageBufferRange);
    lower(limits.maxTexelBufferElements, other.maxTexelBufferElements);
    lower(limits.maxComputeSharedMemorySize, other.maxComputeSharedMemorySize);
    lower(limits.maxComputeWorkGroupInvocations, other.maxComputeWorkGroupInvocations);
    for (int i = 0; i < 3; ++i) {
        lower(limits.maxComputeWorkGroupSize[i], other.maxComputeWorkGroupSize[i]);
        lower(limits.maxComputeWorkGroupCount[i], other.maxComputeWorkGroupCount[i]);
    }
    lower(limits.maxPushConstantsSize, other.maxPushConstantsSize);
    lower(limits.maxPerStageDescriptorStorageBuffers, other.maxPerStageDescriptorStorageBuffers);
    lower(limits.maxDescriptorSetStorageBuffers, other.maxDescriptorSetStorageBuffers);
    lower(limits.maxBoundDescriptorSets, other.maxBoundDescriptorSets);
    raise(limits.minStorageBufferOffsetAlignment, other.minStorageBufferOffsetAlignment);
    raise(limits.minTexelBufferOffsetAlignment, other.minTexelBufferOffsetAlignment);
    lower(model_.max_buffer_size, imposed.max_buffer_size);
    if (imposed.features_described) model_.info.storage_16bit = model_.info.storage_16bit && imposed.info.storage_16bit;
    lower(model_.max_memory_allocation_size, imposed.max_memory_allocation_size);
    // No binding reaches past a buffer: the binding limits follow a lowered buffer size.
    lower(limits.maxStorageBufferRange, model_.max_single_buffer_bytes());
    lower(limits.maxTexelBufferElements, model_.max_single_buffer_bytes() / 4);
    // A heap the profile describes caps the device-local heaps (what the pool may hold, what
    // auto_workspace_limit sees).
    if (imposed.device_local_heap_bytes) {
        for (uint32_t i = 0; i < memory_.memoryHeapCount; ++i)
            if (memory_.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
                lower(memory_.memoryHeaps[i].size, imposed.device_local_heap_bytes);
        model_.device_local_heap_bytes = model_.device_local_heap_bytes
                                             ? std::min(model_.device_local_heap_bytes, imposed.device_local_heap_bytes)
                                             : imposed.device_local_heap_bytes;
        imposed_heap_ = true;
    }
    fill_limits(model_.info, limits);
    model_.info.max_buffer_bytes = model_.max_single_buffer_bytes();
    model_.info.imposed_limits = imposed_ = imposed.info.name;
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

std::string storage_buffer_shortfall(const Device& device, const std::string& kernel, uint32_t needed) {
    const uint32_t allowed = device.limits().maxPerStageDescriptorStorageBuffers;
    if (needed <= allowed) return "";
    return kernel + " binds " + std::to_string(needed) + " storage buffers, and the device allows " +
           std::to_string(allowed) + " per shader stage (maxPerStageDescriptorStorageBuffers)";
}

std::string device_key_of(const Device& device) {
    const VkPhysicalDeviceProperties& props = device.properties();
    char ids[256];
    // The limits as this context sees them (ContextOptions can lower them): choices depend on them.
    const VkPhysicalDeviceLimits& l = props.limits;
    std::snprintf(ids, sizeof ids,
                  " [%04x:%04x driver %u range %u texels %u shared %u invocations %u push %u align %llu buffer %llu] ",
                  props.vendorID, props.deviceID, props.driverVersion, l.maxStorageBufferRange,
                  l.maxTexelBufferElements, l.maxComputeSharedMemorySize, l.maxComputeWorkGroupInvocations,
                  l.maxPushConstantsSize, static_cast<unsigned long long>(l.minStorageBufferOffsetAlignment),
                  static_cast<unsigned long long>(device.model().max_single_buffer_bytes()));
    std::string key = std::string(props.deviceName) + ids;
    for (uint8_t byte : props.pipelineCacheUUID) {
        char hex[3];
        std::snprintf(hex, sizeof hex, "%02x", byte);
        key += hex;
    }
    for (char& c : key)
        if (c == '\t' || c == '\n') c = ' ';
    return key;
}

}  // namespace vkconv::detail
