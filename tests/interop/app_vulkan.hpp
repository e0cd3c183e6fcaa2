// The Vulkan an application brings: its own instance (validation on, messages counted as the suite's are),
// device, queue, buffers and command buffers, made with the system loader it links (Vulkan::Vulkan), as
// an ordinary application does. The interop tests hand these to vkconv.
#pragma once

#include <vulkan/vulkan.h>

#include <memory>
#include <span>
#include <vector>

#include "vkconv/interop.hpp"

namespace vkt {

class AppVulkan {
public:
    // nullptr (and the case marked skipped) without a Vulkan device.
    static std::unique_ptr<AppVulkan> create();
    ~AppVulkan();
    AppVulkan(const AppVulkan&) = delete;
    AppVulkan& operator=(const AppVulkan&) = delete;

    vkconv::ExternalDevice external() const;
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    uint32_t family = 0;
    VkQueue queue = VK_NULL_HANDLE;
    bool timeline = false;  // the device was made with timeline semaphores

    struct Buffer {
        VkBuffer buffer = VK_NULL_HANDLE;
        VkDeviceMemory memory = VK_NULL_HANDLE;
        VkDeviceSize size = 0;
        VkBufferUsageFlags usage = 0;
        void* mapped = nullptr;  // host-visible buffers only
    };
    // Device-local (or, with `host`, host-visible coherent and mapped) memory of its own.
    Buffer make_buffer(VkDeviceSize size, VkBufferUsageFlags usage, bool host = false);
    void destroy(Buffer& buffer);
    vkconv::ExternalBuffer range(const Buffer& buffer, VkDeviceSize offset, VkDeviceSize size) const {
        return {buffer.buffer, offset, size, buffer.usage};
    }

    // A primary command buffer of `family` (from the application's own pool), and one-shot submission.
    VkCommandBuffer begin_commands();
    void submit_and_wait(VkCommandBuffer commands);
    // Host values into / out of a device buffer range through the application's own staging buffer.
    void upload(const Buffer& buffer, VkDeviceSize offset, std::span<const float> values);
    std::vector<float> download(const Buffer& buffer, VkDeviceSize offset, size_t count);

private:
    AppVulkan() = default;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    VkPhysicalDeviceMemoryProperties memory_{};
};

}  // namespace vkt
