// What vkconv tells about a physical device, and how a device is chosen.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <string>

#include "vulkan/instance.hpp"
#include "vulkan/vk_check.hpp"

namespace vkconv {

std::string DeviceInfo::summary() const {
    auto mib = [](uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; };
    return "[" + std::to_string(index) + "] " + name + " (" + type + "), driver " + driver + ", Vulkan " + api_version +
           ", subgroup " + std::to_string(subgroup_size) + ", shared memory " +
           std::to_string(shared_memory_bytes / 1024) + " KiB, maxStorageBufferRange " + mib(max_storage_buffer_range) +
           ", fp16 " + (fp16 ? "yes" : "no");
}

namespace detail {
namespace {

const char* type_name(VkPhysicalDeviceType type) {
    switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            return "discrete GPU";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
            return "integrated GPU";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
            return "virtual GPU";
        case VK_PHYSICAL_DEVICE_TYPE_CPU:
            return "CPU";
        default:
            return "other";
    }
}

int type_rank(const std::string& type) {
    if (type == "discrete GPU") return 0;
    if (type == "integrated GPU") return 1;
    if (type == "virtual GPU") return 2;
    if (type == "CPU") return 3;
    return 4;
}

std::string version_string(uint32_t v) {
    return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
           std::to_string(VK_API_VERSION_PATCH(v));
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

bool queue_has_timestamps(const InstanceFunctions& vk, VkPhysicalDevice device) {
    uint32_t count = 0;
    vk.vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vk.vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
    for (const auto& family : families)
        if (family.queueFlags & VK_QUEUE_COMPUTE_BIT) return family.timestampValidBits > 0;
    return false;
}

}  // namespace

DeviceInfo describe_device(const InstanceFunctions& vk, VkPhysicalDevice device, uint32_t index) {
    VkPhysicalDeviceProperties props{};
    vk.vkGetPhysicalDeviceProperties(device, &props);
    const bool has_1_2 = props.apiVersion >= VK_API_VERSION_1_2;

    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    props2.pNext = &subgroup;
    if (has_1_2) subgroup.pNext = &driver;
    vk.vkGetPhysicalDeviceProperties2(device, &props2);

    VkPhysicalDeviceVulkan12Features features12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    if (has_1_2) features2.pNext = &features12;
    vk.vkGetPhysicalDeviceFeatures2(device, &features2);

    DeviceInfo info;
    info.index = index;
    info.name = props.deviceName;
    info.type = type_name(props.deviceType);
    if (has_1_2 && driver.driverName[0]) {
        info.driver = driver.driverName;
        if (driver.driverInfo[0]) info.driver += std::string(" ") + driver.driverInfo;
    } else {
        info.driver = "version " + std::to_string(props.driverVersion);
    }
    info.api_version = version_string(props.apiVersion);
    info.subgroup_size = subgroup.subgroupSize;
    const auto& limits = props.limits;
    info.shared_memory_bytes = limits.maxComputeSharedMemorySize;
    info.max_storage_buffer_range = limits.maxStorageBufferRange;
    info.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; ++i) info.max_workgroup_count[i] = limits.maxComputeWorkGroupCount[i];
    info.max_push_constants_bytes = limits.maxPushConstantsSize;
    info.max_texel_buffer_elements = limits.maxTexelBufferElements;
    info.fp16 = has_1_2 && features12.shaderFloat16;
    info.timestamps = limits.timestampComputeAndGraphics || queue_has_timestamps(vk, device);
    return info;
}

uint32_t select_device(const std::vector<DeviceInfo>& devices, std::string_view selector) {
    if (devices.empty())
        throw Error(ErrorCategory::Unsupported,
                    "no Vulkan device found: the loader lists no physical device (check VK_DRIVER_FILES / "
                    "VK_ICD_FILENAMES, or install mesa-vulkan-drivers for the lavapipe CPU device)");
    auto listing = [&] {
        std::string out;
        for (const auto& d : devices) out += "\n  " + std::to_string(d.index) + ": " + d.name;
        return out;
    };
    if (selector.empty()) {
        const auto best = std::min_element(devices.begin(), devices.end(), [](const auto& a, const auto& b) {
            return type_rank(a.type) < type_rank(b.type);
        });
        return static_cast<uint32_t>(best - devices.begin());
    }
    uint32_t index = 0;
    const auto [end, ec] = std::from_chars(selector.data(), selector.data() + selector.size(), index);
    if (ec == std::errc() && end == selector.data() + selector.size()) {
        if (index >= devices.size())
            throw Error(ErrorCategory::InvalidArgument,
                        "device index " + std::string(selector) + " is out of range; devices:" + listing());
        return index;
    }
    const std::string wanted = lower(selector);
    for (uint32_t i = 0; i < devices.size(); ++i)
        if (lower(devices[i].name).find(wanted) != std::string::npos) return i;
    throw Error(ErrorCategory::InvalidArgument,
                "no device name contains '" + std::string(selector) + "'; devices:" + listing());
}

}  // namespace detail
}  // namespace vkconv
