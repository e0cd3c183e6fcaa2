// Instance creation and the validation-layer message path.
#include "vulkan/instance.hpp"

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "vulkan/vk_check.hpp"

namespace vkconv::detail {
namespace {

bool has_layer(const char* name) {
    uint32_t count = 0;
    if (loader().vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS) return false;
    std::vector<VkLayerProperties> layers(count);
    if (loader().vkEnumerateInstanceLayerProperties(&count, layers.data()) < 0) return false;
    for (const auto& layer : layers)
        if (std::strcmp(layer.layerName, name) == 0) return true;
    return false;
}

bool has_instance_extension(const char* layer, const char* name) {
    uint32_t count = 0;
    if (loader().vkEnumerateInstanceExtensionProperties(layer, &count, nullptr) != VK_SUCCESS) return false;
    std::vector<VkExtensionProperties> extensions(count);
    if (loader().vkEnumerateInstanceExtensionProperties(layer, &count, extensions.data()) < 0) return false;
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

// The instance's layers, extensions and flags: validation when it is asked for and installed, and
// portability enumeration where the loader offers it.
struct InstanceSetup {
    std::vector<const char*> layers;
    std::vector<const char*> extensions;
    VkInstanceCreateFlags flags = 0;
    bool validation = false;
};

InstanceSetup choose_layers_and_extensions(const Instance& instance, bool want_validation) {
    InstanceSetup setup;
    const char* validation_layer = "VK_LAYER_KHRONOS_validation";
    if (want_validation) {
        if (has_layer(validation_layer) &&
            (has_instance_extension(nullptr, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
             has_instance_extension(validation_layer, VK_EXT_DEBUG_UTILS_EXTENSION_NAME))) {
            setup.layers.push_back(validation_layer);
            setup.extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
            setup.validation = true;
        } else {
            instance.report(MessageSeverity::Warning,
                            "validation was requested but VK_LAYER_KHRONOS_validation is not installed "
                            "(Debian: vulkan-validationlayers); running without it");
        }
    }
    // Portability drivers (MoltenVK) are only listed when the application says it can handle them.
    if (has_instance_extension(nullptr, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        setup.extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
        setup.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    return setup;
}

// Warnings and errors of every kind, to `on_message` (user data: the callback it calls).
VkDebugUtilsMessengerCreateInfoEXT make_messenger_info(MessageCallback* on_message) {
    VkDebugUtilsMessengerCreateInfoEXT messenger_info{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    messenger_info.messageSeverity =
        VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                 VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    messenger_info.pfnUserCallback = on_debug_message;
    messenger_info.pUserData = on_message;
    return messenger_info;
}

VkInstance create_instance(const InstanceSetup& setup, const VkDebugUtilsMessengerCreateInfoEXT& messenger_info) {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vkconv";
    app.pEngineName = "vkconv";
    app.apiVersion = VK_API_VERSION_1_2;
    if (loader().api_version < VK_API_VERSION_1_2) app.apiVersion = VK_API_VERSION_1_1;

    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.flags = setup.flags;
    info.pApplicationInfo = &app;
    info.enabledLayerCount = static_cast<uint32_t>(setup.layers.size());
    info.ppEnabledLayerNames = setup.layers.data();
    info.enabledExtensionCount = static_cast<uint32_t>(setup.extensions.size());
    info.ppEnabledExtensionNames = setup.extensions.data();
    // Chained so that instance creation and destruction are validated too. Only validation messages:
    // the loader reports a missing driver through this path as well, and that is our exception to throw.
    VkDebugUtilsMessengerCreateInfoEXT creation_messenger = messenger_info;
    creation_messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
    if (setup.validation) info.pNext = &creation_messenger;

    VkInstance instance = VK_NULL_HANDLE;
    VkResult result = loader().vkCreateInstance(&info, nullptr, &instance);
    if (result == VK_ERROR_INCOMPATIBLE_DRIVER)
        throw Error(ErrorCategory::Unsupported,
                    "no Vulkan driver is installed (vkCreateInstance returned "
                    "VK_ERROR_INCOMPATIBLE_DRIVER)",
                    static_cast<int32_t>(result));
    VKC_CHECK(nullptr, result);
    return instance;
}

// The debug-utils entry points of `instance` (null where it lacks them).
struct MessengerFunctions {
    PFN_vkCreateDebugUtilsMessengerEXT create = nullptr;
    PFN_vkDestroyDebugUtilsMessengerEXT destroy = nullptr;
};

MessengerFunctions messenger_functions(VkInstance instance) {
    MessengerFunctions functions;
    functions.create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        loader().vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    functions.destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        loader().vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    return functions;
}

// On failure the instance is destroyed before the error is thrown (the destructor will not run).
VkDebugUtilsMessengerEXT make_messenger(VkInstance instance, const MessengerFunctions& functions,
                                        const VkDebugUtilsMessengerCreateInfoEXT& messenger_info,
                                        PFN_vkDestroyInstance destroy_instance) {
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    const VkResult result = functions.create && functions.destroy
                                ? functions.create(instance, &messenger_info, nullptr, &messenger)
                                : VK_ERROR_EXTENSION_NOT_PRESENT;
    if (result != VK_SUCCESS) {
        destroy_instance(instance, nullptr);
        VKC_CHECK(nullptr, result);
    }
    return messenger;
}

}  // namespace

namespace {

std::unique_ptr<MessageCallback> message_callback(MessageCallback on_message) {
    return std::make_unique<MessageCallback>(
        on_message ? std::move(on_message) : [](MessageSeverity severity, std::string_view text) {
            const char* label = severity == MessageSeverity::Error ? "error" : "warning";
            std::fprintf(stderr, "vkconv: validation %s: %.*s\n", label, static_cast<int>(text.size()), text.data());
        });
}

}  // namespace

Instance::Instance(VkInstance external, PFN_vkGetInstanceProcAddr get_instance_proc_addr, MessageCallback on_message)
    : instance_(external), owned_(false) {
    on_message_ = message_callback(std::move(on_message));
    vk_.load(instance_, get_instance_proc_addr);
}

Instance::Instance(bool want_validation, MessageCallback on_message) {
    loader();  // opens libvulkan.so.1, or throws before anything else is made
    on_message_ = message_callback(std::move(on_message));

    const InstanceSetup setup = choose_layers_and_extensions(*this, want_validation);
    validation_ = setup.validation;
    const VkDebugUtilsMessengerCreateInfoEXT messenger_info = make_messenger_info(on_message_.get());
    instance_ = create_instance(setup, messenger_info);
    try {
        vk_.load(instance_, loader().vkGetInstanceProcAddr);
    } catch (...) {
        reinterpret_cast<PFN_vkDestroyInstance>(loader().vkGetInstanceProcAddr(instance_, "vkDestroyInstance"))(
            instance_, nullptr);
        throw;
    }
    if (validation_) {
        const MessengerFunctions functions = messenger_functions(instance_);
        destroy_messenger_ = functions.destroy;
        messenger_ = make_messenger(instance_, functions, messenger_info, vk_.vkDestroyInstance);
    }
}

Instance::~Instance() {
    if (!owned_) return;
    if (messenger_) destroy_messenger_(instance_, messenger_, nullptr);
    if (instance_) vk_.vkDestroyInstance(instance_, nullptr);
}

std::vector<VkPhysicalDevice> Instance::physical_devices() const {
    uint32_t count = 0;
    VKC_CHECK(nullptr, vk_.vkEnumeratePhysicalDevices(instance_, &count, nullptr));
    std::vector<VkPhysicalDevice> devices(count);
    VKC_CHECK(nullptr, vk_.vkEnumeratePhysicalDevices(instance_, &count, devices.data()));
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
