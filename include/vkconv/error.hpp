// vkconv::Error — the one exception type of the library.
//
// Every failure a caller can act on is thrown as vkconv::Error with a category, so a training loop can
// tell "my shapes are wrong" from "the GPU ran out of memory" from "the device is gone" without parsing
// messages. Vulkan failures carry the call, its VkResult (as an int, so this header needs no Vulkan
// headers), and the file and line of the call site.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "vkconv/export.hpp"

namespace vkconv {
VKCONV_API_BEGIN

enum class ErrorCategory {
    InvalidArgument,    // bad shapes, mismatched tensors, bad options: the caller's input is wrong
    Unsupported,        // valid request the device or this version cannot do (no loader, too large, ...)
    OutOfDeviceMemory,  // the driver or the pool's memory limit refused an allocation
    DeviceLost,         // VK_ERROR_DEVICE_LOST; sticky: every later call on that context fails the same way
    VulkanFailure,      // any other failing VkResult
};

const char* to_string(ErrorCategory category) noexcept;

class Error : public std::runtime_error {
public:
    Error(ErrorCategory category, const std::string& message, int32_t vk_result = 0);

    ErrorCategory category() const noexcept { return category_; }
    // The VkResult of the failing Vulkan call, or 0 (VK_SUCCESS) when the error did not come from one.
    int32_t vk_result() const noexcept { return vk_result_; }

private:
    ErrorCategory category_;
    int32_t vk_result_;
};

VKCONV_API_END
}  // namespace vkconv
