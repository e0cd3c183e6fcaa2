#include "vulkan/vk_check.hpp"

#include <cstring>
#include <string>

namespace vkconv::detail {

const char* vk_result_name(VkResult result) noexcept {
    switch (result) {
#define VKC_NAME(r) \
    case r:         \
        return #r;
        VKC_NAME(VK_SUCCESS)
        VKC_NAME(VK_NOT_READY)
        VKC_NAME(VK_TIMEOUT)
        VKC_NAME(VK_INCOMPLETE)
        VKC_NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
        VKC_NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        VKC_NAME(VK_ERROR_INITIALIZATION_FAILED)
        VKC_NAME(VK_ERROR_DEVICE_LOST)
        VKC_NAME(VK_ERROR_MEMORY_MAP_FAILED)
        VKC_NAME(VK_ERROR_LAYER_NOT_PRESENT)
        VKC_NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
        VKC_NAME(VK_ERROR_FEATURE_NOT_PRESENT)
        VKC_NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
        VKC_NAME(VK_ERROR_TOO_MANY_OBJECTS)
        VKC_NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
        VKC_NAME(VK_ERROR_FRAGMENTED_POOL)
        VKC_NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
        VKC_NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        VKC_NAME(VK_ERROR_FRAGMENTATION)
        VKC_NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
        VKC_NAME(VK_PIPELINE_COMPILE_REQUIRED)
        VKC_NAME(VK_ERROR_UNKNOWN)
#undef VKC_NAME
        default:
            return "VkResult(unknown)";
    }
}

void throw_vk_error(std::atomic<bool>* device_lost_flag, VkResult result, const char* call, const char* file,
                    int line) {
    const char* base = std::strrchr(file, '/');
    std::string where = std::string(base ? base + 1 : file) + ":" + std::to_string(line);
    std::string message = std::string(call) + " failed with " + vk_result_name(result) + " (" + where + ")";
    ErrorCategory category = ErrorCategory::VulkanFailure;
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY ||
        result == VK_ERROR_OUT_OF_POOL_MEMORY || result == VK_ERROR_FRAGMENTED_POOL ||
        result == VK_ERROR_FRAGMENTATION) {
        category = ErrorCategory::OutOfDeviceMemory;
    } else if (result == VK_ERROR_DEVICE_LOST) {
        category = ErrorCategory::DeviceLost;
        if (device_lost_flag) device_lost_flag->store(true);
    }
    throw Error(category, message, static_cast<int32_t>(result));
}

}  // namespace vkconv::detail
