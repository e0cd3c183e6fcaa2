#include "vulkan/vk_api.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "vkconv/error.hpp"

namespace vkconv::detail {
namespace {

template <typename Get, typename Handle>
PFN_vkVoidFunction fetch(Get get, Handle handle, const char* name) {
    const PFN_vkVoidFunction function = get(handle, name);
    if (!function)
        throw Error(ErrorCategory::Unsupported,
                    std::string("the Vulkan loader or driver does not provide ") + name + " (Vulkan 1.1 is required)");
    return function;
}

LoaderFunctions open_loader() {
    void* library = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) library = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
    if (!library)
        throw Error(ErrorCategory::Unsupported,
                    "no Vulkan loader found (libvulkan.so.1 could not be opened): install a Vulkan driver and loader, "
                    "e.g. the Debian packages libvulkan1 and mesa-vulkan-drivers");
    // Kept open for the life of the process: contexts may come and go, and a loader unloaded under a live
    // driver is not worth the risk.
    LoaderFunctions f;
    f.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(library, "vkGetInstanceProcAddr"));
    if (!f.vkGetInstanceProcAddr)
        throw Error(ErrorCategory::Unsupported, "the Vulkan loader libvulkan.so.1 has no vkGetInstanceProcAddr");
#define VKCONV_LOAD(name) \
    f.name = reinterpret_cast<PFN_##name>(fetch(f.vkGetInstanceProcAddr, VkInstance{VK_NULL_HANDLE}, #name));
    VKCONV_LOADER_FUNCTIONS(VKCONV_LOAD)
#undef VKCONV_LOAD
    // A 1.0 loader has no vkEnumerateInstanceVersion.
    if (auto version = reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
            f.vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkEnumerateInstanceVersion")))
        if (version(&f.api_version) != VK_SUCCESS) f.api_version = VK_API_VERSION_1_0;
    return f;
}

}  // namespace

const LoaderFunctions& loader() {
    // Not a namespace-scope object: no static-initialisation order, and a failed open is retried by the
    // next call (the exception leaves the once_flag unset).
    static std::once_flag once;
    static LoaderFunctions functions;
    std::call_once(once, [] { functions = open_loader(); });
    return functions;
}

void InstanceFunctions::load(VkInstance instance, PFN_vkGetInstanceProcAddr get) {
#define VKCONV_LOAD(name) name = reinterpret_cast<PFN_##name>(fetch(get, instance, #name));
    VKCONV_INSTANCE_FUNCTIONS(VKCONV_LOAD)
#undef VKCONV_LOAD
}

void DeviceFunctions::load(VkDevice device, PFN_vkGetDeviceProcAddr get) {
#define VKCONV_LOAD(name) name = reinterpret_cast<PFN_##name>(fetch(get, device, #name));
    VKCONV_DEVICE_FUNCTIONS(VKCONV_LOAD)
#undef VKCONV_LOAD
#define VKCONV_LOAD_OPTIONAL(name) name = reinterpret_cast<PFN_##name>(get(device, #name));
    VKCONV_OPTIONAL_DEVICE_FUNCTIONS(VKCONV_LOAD_OPTIONAL)
#undef VKCONV_LOAD_OPTIONAL
}

}  // namespace vkconv::detail
