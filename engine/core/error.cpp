// vkconv::Error and category names.
#include "vkconv/error.hpp"

namespace vkconv {

const char* to_string(ErrorCategory category) noexcept {
    switch (category) {
        case ErrorCategory::InvalidArgument:
            return "invalid argument";
        case ErrorCategory::Unsupported:
            return "unsupported";
        case ErrorCategory::OutOfDeviceMemory:
            return "out of device memory";
        case ErrorCategory::DeviceLost:
            return "device lost";
        case ErrorCategory::VulkanFailure:
            return "Vulkan failure";
    }
    return "unknown";
}

Error::Error(ErrorCategory category, const std::string& message, int32_t vk_result)
    : std::runtime_error(message), category_(category), vk_result_(vk_result) {}

}  // namespace vkconv
