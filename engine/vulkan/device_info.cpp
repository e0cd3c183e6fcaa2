// What vkconv tells about a physical device, and how a device is chosen.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <string>

#include "vulkan/device_model.hpp"
#include "vulkan/instance.hpp"
#include "vulkan/vk_check.hpp"

namespace vkconv {

std::vector<DeviceInfo> list_devices() {
    detail::Instance instance(false, {});
    const auto physical = instance.physical_devices();
    std::vector<DeviceInfo> infos;
    for (uint32_t i = 0; i < physical.size(); ++i)
        infos.push_back(detail::describe_device(instance.vk(), physical[i], i));
    return infos;
}

std::string DeviceInfo::summary() const {
    auto mib = [](uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; };
    return "[" + std::to_string(index) + "] " + name + " (" + type + "), driver " + driver + ", Vulkan " + api_version +
           ", subgroup " + std::to_string(subgroup_size) +
           ", " + std::to_string(compute_units) + " compute units (" + compute_units_source + ")" + ", shared memory " +
           std::to_string(shared_memory_bytes / 1024) + " KiB, maxStorageBufferRange " + mib(max_storage_buffer_range) +
           ", largest buffer " + mib(max_buffer_bytes) + ", fp16 " + (fp16 ? "yes" : "no") +
           ", 16-bit storage " + (storage_16bit ? "yes" : "no") +
           (imposed_limits.empty() ? "" : ", limits of " + imposed_limits + " imposed");
}

namespace detail {
namespace {

int type_rank(const std::string& type) {
    if (type == "discrete GPU") return 0;
    if (type == "integrated GPU") return 1;
    if (type == "virtual GPU") return 2;
    if (type == "CPU") return 3;
    return 4;
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

}  // namespace

DeviceInfo describe_device(const InstanceFunctions& vk, VkPhysicalDevice device, uint32_t index) {
    return query_device_model(vk, device, index).info;
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
