// Instance creation and the validation-layer message path.
#include "vulkan/instance.hpp"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "vulkan/vk_check.hpp"

namespace vkconv::detail {
namespace {

void open_loader() {
    static std::once_flag once;
    static VkResult result = VK_SUCCESS;
    std::call_once(once, [] { result = volkInitialize(); });
    if (result != VK_SUCCESS) {
        throw Error(ErrorCategory::Unsupported,
                    "no Vulkan loader found (libvulkan.so.1 could not be opened): install a Vulkan driver "
                    "and loader, e.g. the Debian packages libvulkan1 and mesa-vulkan-drivers",
                    static_cast<int32_t>(result));
    }
}

bool has_layer(const char* name) {
    uint32_t count = 0;
    if (vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
    std::vector<VkLayerProperties> layers(count);
    if (vkEnumerateInstanceLayerProperties(&count, layers.data()) < 0) return false;
    for (const auto& layer : layers)
        if (std::strcmp(layer.layerName, name) == 0) return true;
    return false;
}

bool has_instance_extension(const char* layer, const char* name) {
    uint32_t count = 0;
    if (vkEnumerateInstanceExtensionProperties(layer, &count, nullptr) != VK_SUCCESS) return false;
    std::vector<VkExtensionProperties> extensions(count);
    if (vkEnumerateInstanceExtensionProperties(layer, &count, extensions.data()) < 0) return false;
    for (const auto& extension : extensions)
        if (std::strcmp(extension.extensionName, name) == 0) return true;
    return false;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                VkDebugUtilsMessageTypeFlagsEXT,
                                                const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
    MessageSeverity level = MessageSeverity::Verbose;
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)
        level = MessageSeverity::Error;
    else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT)
        level = MessageSeverity::Warning;
    else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT)
        level = MessageSeverity::Info;
    // The callback runs inside a Vulkan call: an exception must not cross the C boundary.
    try {
        (*static_cast<MessageCallback*>(user))(level, data && data->pMessage ? data->pMessage : "");
    } catch (...) {
    }
    return VK_FALSE;
}

}  // namespace

Instance::Instance(bool want_validation, MessageCallback on_message) {
    open_loader();
    on_message_ = std::make_unique<MessageCallback>(
        on_message ? std::move(on_message) : [](MessageSeverity severity, std::string_view text) {
            const char* label = severity == MessageSeverity::Error ? "error" : "warning";
            std::fprintf(stderr, "vkconv: validation %s: %.*s\n", label, static_cast<int>(text.size()), text.data());
        });

    std::vector<const char*> layers;
    std::vector<const char*> extensions;
    const char* validation_layer = "VK_LAYER_KHRONOS_validation";
    if (want_validation) {
        if (has_layer(validation_layer) &&
            (has_instance_extension(nullptr, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
             has_instance_extension(validation_layer, VK_EXT_DEBUG_UTILS_EXTENSION_NAME))) {
            layers.push_back(validation_layer);
            extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
            validation_ = true;
        } else {
            report(MessageSeverity::Warning,
                   "validation was requested but VK_LAYER_KHRONOS_validation is not installed "
                   "(Debian: vulkan-validationlayers); running without it");
        }
    }
    VkInstanceCreateFlags flags = 0;
    // Portability drivers (MoltenVK) are only listed when the application says it can handle them.
    if (has_instance_extension(nullptr, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }

    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vkconv";
    app.pEngineName = "vkconv";
    app.apiVersion = VK_API_VERSION_1_2;
    if (volkGetInstanceVersion() < VK_API_VERSION_1_2) app.apiVersion = VK_API_VERSION_1_1;

    VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger_info.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger_info.pfnUserCallback = on_debug_message;
    messenger_info.pUserData = on_message_.get();

    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.flags = flags;
    info.pApplicationInfo = &app;
    info.enabledLayerCount = static_cast<uint32_t>(layers.size());
    info.ppEnabledLayerNames = layers.data();
    info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    info.ppEnabledExtensionNames = extensions.data();
    // Chained so that instance creation and destruction are validated too. Only validation messages:
    // the loader reports a missing driver through this path as well, and that is our exception to throw.
    VkDebugUtilsMessengerCreateInfoEXT creation_messenger = messenger_info;
    creation_messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    if (validation_) info.pNext = &creation_messenger;

    VkResult result = vkCreateInstance(&info, nullptr, &instance_);
    if (result == VK_ERROR_INCOMPATIBLE_DRIVER)
        throw Error(ErrorCategory::Unsupported,
                    "no Vulkan driver is installed (vkCreateInstance returned "
                    "VK_ERROR_INCOMPATIBLE_DRIVER)",
                    static_cast<int32_t>(result));
    VKC_CHECK(nullptr, result);
    // Core instance functions loaded this way are the loader's trampolines, valid for every instance, so
    // several contexts can share volk's globals. Extension functions are per instance: keep our own.
    volkLoadInstanceOnly(instance_);
    if (validation_) {
        auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
        destroy_messenger_ = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
        result = create && destroy_messenger_ ? create(instance_, &messenger_info, nullptr, &messenger_)
                                              : VK_ERROR_EXTENSION_NOT_PRESENT;
        if (result != VK_SUCCESS) {
            vkDestroyInstance(instance_, nullptr);
            VKC_CHECK(nullptr, result);
        }
    }
}

Instance::~Instance() {
    if (messenger_) destroy_messenger_(instance_, messenger_, nullptr);
    if (instance_) vkDestroyInstance(instance_, nullptr);
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
    uint32_t count = 0;
    VKC_CHECK(nullptr, vkEnumeratePhysicalDevices(instance_, &count, nullptr));
    std::vector<VkPhysicalDevice> devices(count);
    VKC_CHECK(nullptr, vkEnumeratePhysicalDevices(instance_, &count, devices.data()));
    devices.resize(count);
    return devices;
}

void Instance::report(MessageSeverity severity, std::string_view text) const {
    try {
        (*on_message_)(severity, text);
    } catch (...) {
    }
}

}  // namespace vkconv::detail
