// The Vulkan instance: loader start-up (vulkan/vk_api.hpp), optional validation layer, device enumeration;
// or the application's instance, used through the entry point it hands over.
#pragma once

#include "vulkan/vk_api.hpp"

#include <memory>
#include <string_view>
#include <vector>

#include "vkconv/device.hpp"

namespace vkconv::detail {

class Instance {
public:
    // Opens the loader (once per process) and creates an instance. With `want_validation` and the layer
    // installed, VK_LAYER_KHRONOS_validation is enabled and its messages go to `on_message`.
    Instance(bool want_validation, MessageCallback on_message);
    // The application's instance, reached through its vkGetInstanceProcAddr; never destroyed here.
    Instance(VkInstance external, PFN_vkGetInstanceProcAddr get_instance_proc_addr, MessageCallback on_message);
    ~Instance();
    Instance(const Instance&) = delete;
    Instance& operator=(const Instance&) = delete;

    VkInstance handle() const { return instance_; }
    const InstanceFunctions& vk() const { return vk_; }
    bool validation_enabled() const { return validation_; }
    std::vector<VkPhysicalDevice> physical_devices() const;
    void report(MessageSeverity severity, std::string_view text) const;

private:
    VkInstance instance_ = VK_NULL_HANDLE;
    InstanceFunctions vk_;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
    bool validation_ = false;
    bool owned_ = true;
    std::unique_ptr<MessageCallback> on_message_;  // stable address for the messenger's user data
};

DeviceInfo describe_device(const InstanceFunctions& vk, VkPhysicalDevice device, uint32_t index);

// Index into `devices` chosen by `selector` (an index or a case-insensitive name substring; empty picks the
// best type: discrete > integrated > virtual > CPU). Throws InvalidArgument naming the selector and the
// devices when nothing matches, Unsupported when the list is empty.
uint32_t select_device(const std::vector<DeviceInfo>& devices, std::string_view selector);

}  // namespace vkconv::detail
