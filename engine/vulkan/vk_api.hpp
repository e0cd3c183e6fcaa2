// vkconv's own Vulkan function tables. The loader (libvulkan.so.1) is opened at run time and every entry
// point is fetched through vkGetInstanceProcAddr and vkGetDeviceProcAddr into these tables, so the library
// defines no `vk*` symbol: an application that links the loader itself (and calls Vulkan directly) links
// vkconv beside it without a clash. Each list names exactly the functions vkconv calls.
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

namespace vkconv::detail {

// Functions the loader answers without an instance.
#define VKCONV_LOADER_FUNCTIONS(X)            \
    X(vkCreateInstance)                       \
    X(vkEnumerateInstanceExtensionProperties) \
    X(vkEnumerateInstanceLayerProperties)

// Functions of an instance and its physical devices.
#define VKCONV_INSTANCE_FUNCTIONS(X)            \
    X(vkDestroyInstance)                        \
    X(vkEnumeratePhysicalDevices)               \
    X(vkGetPhysicalDeviceProperties)            \
    X(vkGetPhysicalDeviceProperties2)           \
    X(vkGetPhysicalDeviceFeatures2)             \
    X(vkGetPhysicalDeviceMemoryProperties)      \
    X(vkGetPhysicalDeviceMemoryProperties2)     \
    X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkGetPhysicalDeviceFormatProperties)      \
    X(vkEnumerateDeviceExtensionProperties)     \
    X(vkCreateDevice)                           \
    X(vkGetDeviceProcAddr)

// Functions of a device.
#define VKCONV_DEVICE_FUNCTIONS(X)    \
    X(vkAllocateCommandBuffers)       \
    X(vkAllocateDescriptorSets)       \
    X(vkAllocateMemory)               \
    X(vkBeginCommandBuffer)           \
    X(vkBindBufferMemory)             \
    X(vkCmdBindDescriptorSets)        \
    X(vkCmdBindPipeline)              \
    X(vkCmdCopyBuffer)                \
    X(vkCmdDispatch)                  \
    X(vkCmdPipelineBarrier)           \
    X(vkCmdPushConstants)             \
    X(vkCmdResetQueryPool)            \
    X(vkCmdWriteTimestamp)            \
    X(vkCreateBuffer)                 \
    X(vkCreateBufferView)             \
    X(vkCreateCommandPool)            \
    X(vkCreateComputePipelines)       \
    X(vkCreateDescriptorPool)         \
    X(vkCreateDescriptorSetLayout)    \
    X(vkCreateFence)                  \
    X(vkCreatePipelineCache)          \
    X(vkCreatePipelineLayout)         \
    X(vkCreateQueryPool)              \
    X(vkCreateSemaphore)              \
    X(vkCreateShaderModule)           \
    X(vkDestroyBuffer)                \
    X(vkDestroyBufferView)            \
    X(vkDestroyCommandPool)           \
    X(vkDestroyDescriptorPool)        \
    X(vkDestroyDescriptorSetLayout)   \
    X(vkDestroyDevice)                \
    X(vkDestroyFence)                 \
    X(vkDestroyPipeline)              \
    X(vkDestroyPipelineCache)         \
    X(vkDestroyPipelineLayout)        \
    X(vkDestroyQueryPool)             \
    X(vkDestroySemaphore)             \
    X(vkDestroyShaderModule)          \
    X(vkDeviceWaitIdle)               \
    X(vkEndCommandBuffer)             \
    X(vkFlushMappedMemoryRanges)      \
    X(vkFreeCommandBuffers)           \
    X(vkFreeMemory)                   \
    X(vkGetBufferMemoryRequirements)  \
    X(vkGetDeviceQueue)               \
    X(vkGetFenceStatus)               \
    X(vkGetPipelineCacheData)         \
    X(vkGetQueryPoolResults)          \
    X(vkInvalidateMappedMemoryRanges) \
    X(vkMapMemory)                    \
    X(vkQueueSubmit)                  \
    X(vkResetCommandBuffer)           \
    X(vkResetDescriptorPool)          \
    X(vkResetFences)                  \
    X(vkUnmapMemory)                  \
    X(vkUpdateDescriptorSets)         \
    X(vkWaitForFences)

// Functions of a device that only some devices have (null where absent): timeline semaphores (core in 1.2,
// used only where the feature is enabled).
#define VKCONV_OPTIONAL_DEVICE_FUNCTIONS(X) \
    X(vkWaitSemaphores)                     \
    X(vkGetSemaphoreCounterValue)

#define VKCONV_DECLARE_FUNCTION(name) PFN_##name name = nullptr;

struct LoaderFunctions {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
    VKCONV_LOADER_FUNCTIONS(VKCONV_DECLARE_FUNCTION)
    uint32_t api_version = VK_API_VERSION_1_0;  // vkEnumerateInstanceVersion's answer (1.0 without it)
};

struct InstanceFunctions {
    VKCONV_INSTANCE_FUNCTIONS(VKCONV_DECLARE_FUNCTION)
    // Every function of the list, fetched for `instance`; Error(Unsupported) naming one the loader lacks.
    void load(VkInstance instance, PFN_vkGetInstanceProcAddr get);
};

struct DeviceFunctions {
    VKCONV_DEVICE_FUNCTIONS(VKCONV_DECLARE_FUNCTION)
    VKCONV_OPTIONAL_DEVICE_FUNCTIONS(VKCONV_DECLARE_FUNCTION)
    void load(VkDevice device, PFN_vkGetDeviceProcAddr get);
};

#undef VKCONV_DECLARE_FUNCTION

// The loader, opened once per process (dlopen of libvulkan.so.1): Error(Unsupported) naming the packages to
// install where there is none.
const LoaderFunctions& loader();

}  // namespace vkconv::detail
