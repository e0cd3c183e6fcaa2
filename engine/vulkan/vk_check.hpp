// The one error boundary at Vulkan call sites.
//
// VKC_CHECK(ctx_or_null, vkCall(...)) turns a failing VkResult into vkconv::Error naming the call, the
// result, file and line. Out-of-memory results become OutOfDeviceMemory; VK_ERROR_DEVICE_LOST marks the
// context lost (sticky) and becomes DeviceLost. Pass nullptr where no context exists yet (instance setup).
#pragma once

#include "vulkan/vk_api.hpp"

#include <atomic>

#include "vkconv/error.hpp"

namespace vkconv::detail {

const char* vk_result_name(VkResult result) noexcept;

[[noreturn]] void throw_vk_error(std::atomic<bool>* device_lost_flag, VkResult result, const char* call,
                                 const char* file, int line);

inline void vk_check(std::atomic<bool>* device_lost_flag, VkResult result, const char* call, const char* file,
                     int line) {
    if (result < 0) throw_vk_error(device_lost_flag, result, call, file, line);
}

}  // namespace vkconv::detail

#define VKC_CHECK(lost_flag, call) ::vkconv::detail::vk_check((lost_flag), (call), #call, __FILE__, __LINE__)
// The same for a result already in hand, naming the call it came from.
#define VKC_CHECK_RESULT(lost_flag, result, call_name) \
    ::vkconv::detail::vk_check((lost_flag), (result), call_name, __FILE__, __LINE__)
