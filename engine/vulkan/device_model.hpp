// What the planner knows of a device: its limits, its compute units, its subgroup size, the texel formats
// it can read. Queried from a physical device, or read from a Vulkan Profiles JSON file (the format
// `vulkaninfo --json` writes) to plan for a device that is not here. A Device made from a model alone
// (Device(const DeviceModel&)) plans and records dispatch lists, and never touches Vulkan.
#pragma once

#include "vulkan/vk_api.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vkconv/device.hpp"

namespace vkconv::detail {

struct DeviceModel {
    DeviceInfo info;                          // name, type, driver, subgroup, compute units ...
    VkPhysicalDeviceProperties properties{};  // limits, vendor, API version
    // R32_SFLOAT and R32G32B32A32_SFLOAT both usable as storage / uniform texel buffers.
    bool storage_texel_buffers = true;
    bool uniform_texel_buffers = true;
    // R16_UINT, R16G16B16A16_UINT and R32G32B32A32_UINT as uniform texel buffers: 16-bit elements read
    // through texel views (the last 8 a fetch).
    bool uniform_texel_16bit = true;
    // Whether the optional features in `info` (storage_16bit) are known: a device's always, a profile's
    // where it has a "features" section. Imposing a profile that says nothing of them leaves the device's.
    bool features_described = true;
    // The largest VkBuffer (maxBufferSize, Vulkan 1.3 / VK_KHR_maintenance4) and the largest VkDeviceMemory
    // (maxMemoryAllocationSize, 1.1 / VK_KHR_maintenance3). Where a device reports neither, the
    // specification's minimum for maxMemoryAllocationSize, 2^30 bytes (docs/device_model.md); where it
    // reports one, the other takes that figure.
    uint64_t max_buffer_size = kMinimumAllocationBytes;
    uint64_t max_memory_allocation_size = kMinimumAllocationBytes;
    static constexpr uint64_t kMinimumAllocationBytes = 1ull << 30;
    // The largest device-local memory heap in bytes (0: not described, as in a profile without memory
    // properties). Imposed on a device, it caps what its pool may hold.
    uint64_t device_local_heap_bytes = 0;
    // The most bytes one VkBuffer with its own VkDeviceMemory may hold on this device.
    uint64_t max_single_buffer_bytes() const { return std::min(max_buffer_size, max_memory_allocation_size); }
};

// The model of a physical device, from its properties (and the vendor extensions that count its cores).
DeviceModel query_device_model(const InstanceFunctions& vk, VkPhysicalDevice device, uint32_t index);

// Shared by the query and the profile reader: the type's name as DeviceInfo gives it, "1.3.230", and the
// DeviceInfo fields that repeat limits.
const char* device_type_name(VkPhysicalDeviceType type);
std::string api_version_string(uint32_t version);
void fill_limits(DeviceInfo& info, const VkPhysicalDeviceLimits& limits);

// Sets the model's buffer limits from what the device or profile reports (0: not reported), with the
// fallbacks DeviceModel describes.
void set_buffer_limits(DeviceModel& model, uint64_t max_buffer_size, uint64_t max_memory_allocation_size);
// Compute units where the vendor does not report them: the documented fallback (docs/device_model.md).
uint32_t fallback_compute_units(VkPhysicalDeviceType type);

// The model a Vulkan Profiles JSON document describes; `origin` names it in errors. Limits a profile
// leaves out take the specification's required minimum. Error(InvalidArgument) for text that is no such
// document.
DeviceModel device_model_from_profile(std::string_view json, const std::string& origin);

// A shipped profile by name ("nvidia-h100", ...), else a file by path. Error(InvalidArgument) naming the
// shipped profiles when neither exists.
DeviceModel load_device_model(const std::string& name_or_path);

// The names of the profiles shipped in the library.
std::vector<std::string> shipped_profile_names();

}  // namespace vkconv::detail
