#include "interop/app_vulkan.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "gpu.hpp"

namespace vkt {
namespace {

void check(VkResult result, const char* what) {
    if (result != VK_SUCCESS) throw std::runtime_error(std::string("application Vulkan call failed: ") + what);
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
    static const vkconv::MessageCallback count = test_options().on_message;
    count(severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? vkconv::MessageSeverity::Error
                                                                   : vkconv::MessageSeverity::Warning,
          data && data->pMessage ? data->pMessage : "");
    return VK_FALSE;
}

bool has_layer(const char* name) {
    uint32_t count = 0;
    vkEnumerateInstanceLayerProperties(&count, nullptr);
    std::vector<VkLayerProperties> layers(count);
    vkEnumerateInstanceLayerProperties(&count, layers.data());
    for (const auto& layer : layers)
        if (std::strcmp(layer.layerName, name) == 0) return true;
    return false;
}

}  // namespace

std::unique_ptr<AppVulkan> AppVulkan::create() {
    std::unique_ptr<AppVulkan> app(new AppVulkan);
    uint32_t loader_version = VK_API_VERSION_1_0;
    vkEnumerateInstanceVersion(&loader_version);
    VkApplicationInfo info{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    info.pApplicationName = "vkconv interop tests";
    info.apiVersion = loader_version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1;
    const char* layer = "VK_LAYER_KHRONOS_validation";
    const char* extension = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    const bool validation = has_layer(layer);
    if (!validation && !validation_opted_out())
        FAIL("VK_LAYER_KHRONOS_validation is not installed (Debian: vulkan-validationlayers)");
    VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    instance_info.pApplicationInfo = &info;
    instance_info.enabledLayerCount = validation ? 1 : 0;
    instance_info.ppEnabledLayerNames = &layer;
    instance_info.enabledExtensionCount = validation ? 1 : 0;
    instance_info.ppEnabledExtensionNames = &extension;
    if (vkCreateInstance(&instance_info, nullptr, &app->instance) != VK_SUCCESS) {
        mark_skipped("no Vulkan driver");
        return nullptr;
    }
    if (validation) {
        VkDebugUtilsMessengerCreateInfoEXT messenger{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
        messenger.messageSeverity =
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
        messenger.pfnUserCallback = on_message;
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(app->instance, "vkCreateDebugUtilsMessengerEXT"));
        check(create(app->instance, &messenger, nullptr, &app->messenger_), "vkCreateDebugUtilsMessengerEXT");
    }
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(app->instance, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(app->instance, &count, devices.data());
    if (devices.empty()) {
        mark_skipped("no Vulkan device");
        return nullptr;
    }
    app->physical = devices[0];  // the tests' environment leaves one driver
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(app->physical, &families, nullptr);
    std::vector<VkQueueFamilyProperties> props(families);
    vkGetPhysicalDeviceQueueFamilyProperties(app->physical, &families, props.data());
    app->family = UINT32_MAX;
    for (uint32_t i = 0; i < families && app->family == UINT32_MAX; ++i)
        if (props[i].queueFlags & VK_QUEUE_COMPUTE_BIT) app->family = i;
    REQUIRE(app->family != UINT32_MAX);

    VkPhysicalDeviceProperties properties{};
    vkGetPhysicalDeviceProperties(app->physical, &properties);
    vkGetPhysicalDeviceMemoryProperties(app->physical, &app->memory_);
    VkPhysicalDeviceTimelineSemaphoreFeatures timeline{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
    if (info.apiVersion >= VK_API_VERSION_1_2 && properties.apiVersion >= VK_API_VERSION_1_2) {
        VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
        features.pNext = &timeline;
        vkGetPhysicalDeviceFeatures2(app->physical, &features);
        app->timeline = timeline.timelineSemaphore == VK_TRUE;
    }
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue.queueFamilyIndex = app->family;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue;
    timeline.pNext = nullptr;
    if (app->timeline) device_info.pNext = &timeline;
    check(vkCreateDevice(app->physical, &device_info, nullptr, &app->device), "vkCreateDevice");
    vkGetDeviceQueue(app->device, app->family, 0, &app->queue);
    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = app->family;
    check(vkCreateCommandPool(app->device, &pool, nullptr, &app->pool_), "vkCreateCommandPool");
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    check(vkCreateFence(app->device, &fence, nullptr, &app->fence_), "vkCreateFence");
    return app;
}

AppVulkan::~AppVulkan() {
    if (device) {
        vkDeviceWaitIdle(device);
        if (fence_) vkDestroyFence(device, fence_, nullptr);
        if (pool_) vkDestroyCommandPool(device, pool_, nullptr);
        vkDestroyDevice(device, nullptr);
    }
    if (messenger_) {
        auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
        destroy(instance, messenger_, nullptr);
    }
    if (instance) vkDestroyInstance(instance, nullptr);
}

vkconv::ExternalDevice AppVulkan::external() const {
    vkconv::ExternalDevice e;
    e.get_instance_proc_addr = vkGetInstanceProcAddr;
    e.instance = instance;
    e.physical_device = physical;
    e.device = device;
    e.queue_family = family;
    e.queue_index = 0;
    e.timeline_semaphores = timeline;
    return e;
}

AppVulkan::Buffer AppVulkan::make_buffer(VkDeviceSize size, VkBufferUsageFlags usage, bool host) {
    Buffer b;
    b.size = size;
    b.usage = usage;
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = size;
    info.usage = usage;
    check(vkCreateBuffer(device, &info, nullptr, &b.buffer), "vkCreateBuffer");
    VkMemoryRequirements requirements{};
    vkGetBufferMemoryRequirements(device, b.buffer, &requirements);
    const VkMemoryPropertyFlags wanted =
        host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
             : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < memory_.memoryTypeCount && type == UINT32_MAX; ++i)
        if ((requirements.memoryTypeBits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & wanted) == wanted)
            type = i;
    REQUIRE(type != UINT32_MAX);
    VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = requirements.size;
    alloc.memoryTypeIndex = type;
    check(vkAllocateMemory(device, &alloc, nullptr, &b.memory), "vkAllocateMemory");
    check(vkBindBufferMemory(device, b.buffer, b.memory, 0), "vkBindBufferMemory");
    if (host) check(vkMapMemory(device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
    return b;
}

void AppVulkan::destroy(Buffer& b) {
    if (b.buffer) vkDestroyBuffer(device, b.buffer, nullptr);
    if (b.memory) vkFreeMemory(device, b.memory, nullptr);
    b = {};
}

VkCommandBuffer AppVulkan::begin_commands() {
    VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    alloc.commandPool = pool_;
    alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    alloc.commandBufferCount = 1;
    VkCommandBuffer commands = VK_NULL_HANDLE;
    check(vkAllocateCommandBuffers(device, &alloc, &commands), "vkAllocateCommandBuffers");
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
    return commands;
}

void AppVulkan::submit_and_wait(VkCommandBuffer commands) {
    check(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands;
    check(vkQueueSubmit(queue, 1, &submit, fence_), "vkQueueSubmit");
    check(vkWaitForFences(device, 1, &fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    check(vkResetFences(device, 1, &fence_), "vkResetFences");
    vkFreeCommandBuffers(device, pool_, 1, &commands);
}

void AppVulkan::upload(const Buffer& buffer, VkDeviceSize offset, std::span<const float> values) {
    Buffer staging = make_buffer(values.size_bytes(), VK_BUFFER_USAGE_TRANSFER_SRC_BIT, true);
    std::memcpy(staging.mapped, values.data(), values.size_bytes());
    VkCommandBuffer commands = begin_commands();
    const VkBufferCopy region{0, offset, values.size_bytes()};
    vkCmdCopyBuffer(commands, staging.buffer, buffer.buffer, 1, &region);
    submit_and_wait(commands);
    destroy(staging);
}

std::vector<float> AppVulkan::download(const Buffer& buffer, VkDeviceSize offset, size_t count) {
    Buffer staging = make_buffer(count * sizeof(float), VK_BUFFER_USAGE_TRANSFER_DST_BIT, true);
    VkCommandBuffer commands = begin_commands();
    // vkconv's writes (compute shader or transfer, interop.hpp) before this copy reads them.
    VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    before.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    before.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
    vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, nullptr, 0, nullptr);
    const VkBufferCopy region{offset, 0, count * sizeof(float)};
    vkCmdCopyBuffer(commands, buffer.buffer, staging.buffer, 1, &region);
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0,
                         nullptr, 0, nullptr);
    submit_and_wait(commands);
    std::vector<float> values(count);
    std::memcpy(values.data(), staging.mapped, count * sizeof(float));
    destroy(staging);
    return values;
}

}  // namespace vkt
