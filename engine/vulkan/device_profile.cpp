// A device's model from a Vulkan Profiles JSON document (the format `vulkaninfo --json` writes and device
// databases export): the properties structures of every capability block, merged in order; what a
// profile leaves out takes the specification's required minimum (Vulkan 1.3, "Required Limits").
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>

#include "vkconv/error.hpp"
#include "vulkan/device_model.hpp"

namespace vkconv::detail {

extern const std::pair<std::string_view, std::string_view> kShippedProfiles[];  // generated from profiles/
extern const size_t kShippedProfileCount;

namespace {

using nlohmann::json;

// The limits every Vulkan device reaches at least.
VkPhysicalDeviceLimits required_minimum_limits() {
    VkPhysicalDeviceLimits limits{};
    limits.maxComputeSharedMemorySize = 16384;
    for (int i = 0; i < 3; ++i) limits.maxComputeWorkGroupCount[i] = 65535;
    limits.maxComputeWorkGroupInvocations = 128;
    limits.maxComputeWorkGroupSize[0] = 128, limits.maxComputeWorkGroupSize[1] = 128;
    limits.maxComputeWorkGroupSize[2] = 64;
    limits.maxStorageBufferRange = 1u << 27;
    limits.maxUniformBufferRange = 16384;
    limits.maxTexelBufferElements = 65536;
    limits.maxPushConstantsSize = 128;
    limits.maxBoundDescriptorSets = 4;
    limits.maxPerStageDescriptorStorageBuffers = 4;
    limits.maxPerStageDescriptorUniformBuffers = 12;
    limits.maxPerStageResources = 128;
    limits.maxDescriptorSetStorageBuffers = 24;
    limits.maxMemoryAllocationCount = 4096;
    limits.minStorageBufferOffsetAlignment = 256;  // the largest alignment the spec allows
    limits.minTexelBufferOffsetAlignment = 256;
    limits.minUniformBufferOffsetAlignment = 256;
    limits.nonCoherentAtomSize = 256;
    limits.timestampPeriod = 1.0f;
    return limits;
}

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
    throw Error(ErrorCategory::InvalidArgument, "device profile " + origin + ": " + what);
}

template <typename T>
T number(const json& value, const std::string& origin, const std::string& field) {
    if (value.is_boolean() && std::is_same_v<T, uint32_t>) return value.get<bool>() ? 1 : 0;
    if (!value.is_number()) fail(origin, field + " is not a number");
    if constexpr (std::is_floating_point_v<T>) {
        return value.get<T>();
    } else {
        if (value.is_number_float() || (value.is_number_integer() && value.get<int64_t>() < 0))
            fail(origin, field + " is not a non-negative integer");
        const uint64_t v = value.get<uint64_t>();
        if (v > std::numeric_limits<T>::max()) fail(origin, field + " = " + std::to_string(v) + " is out of range");
        return static_cast<T>(v);
    }
}

void read_limits(const json& limits, VkPhysicalDeviceLimits& out, const std::string& origin) {
    if (!limits.is_object()) fail(origin, "VkPhysicalDeviceProperties.limits is not an object");
    auto u32 = [&](const char* name, uint32_t& field) {
        if (auto it = limits.find(name); it != limits.end()) field = number<uint32_t>(*it, origin, name);
    };
    auto u64 = [&](const char* name, uint64_t& field) {
        if (auto it = limits.find(name); it != limits.end()) field = number<uint64_t>(*it, origin, name);
    };
    auto u32x3 = [&](const char* name, uint32_t (&field)[3]) {
        auto it = limits.find(name);
        if (it == limits.end()) return;
        if (!it->is_array() || it->size() != 3) fail(origin, std::string(name) + " is not an array of 3 numbers");
        for (size_t i = 0; i < 3; ++i) field[i] = number<uint32_t>((*it)[i], origin, name);
    };
    u32("maxComputeSharedMemorySize", out.maxComputeSharedMemorySize);
    u32x3("maxComputeWorkGroupCount", out.maxComputeWorkGroupCount);
    u32("maxComputeWorkGroupInvocations", out.maxComputeWorkGroupInvocations);
    u32x3("maxComputeWorkGroupSize", out.maxComputeWorkGroupSize);
    u32("maxStorageBufferRange", out.maxStorageBufferRange);
    u32("maxUniformBufferRange", out.maxUniformBufferRange);
    u32("maxTexelBufferElements", out.maxTexelBufferElements);
    u32("maxPushConstantsSize", out.maxPushConstantsSize);
    u32("maxBoundDescriptorSets", out.maxBoundDescriptorSets);
    u32("maxPerStageDescriptorStorageBuffers", out.maxPerStageDescriptorStorageBuffers);
    u32("maxPerStageDescriptorUniformBuffers", out.maxPerStageDescriptorUniformBuffers);
    u32("maxPerStageResources", out.maxPerStageResources);
    u32("maxDescriptorSetStorageBuffers", out.maxDescriptorSetStorageBuffers);
    u32("maxMemoryAllocationCount", out.maxMemoryAllocationCount);
    u64("minStorageBufferOffsetAlignment", out.minStorageBufferOffsetAlignment);
    u64("minTexelBufferOffsetAlignment", out.minTexelBufferOffsetAlignment);
    u64("minUniformBufferOffsetAlignment", out.minUniformBufferOffsetAlignment);
    u64("nonCoherentAtomSize", out.nonCoherentAtomSize);
    if (auto it = limits.find("timestampComputeAndGraphics"); it != limits.end())
        out.timestampComputeAndGraphics = number<uint32_t>(*it, origin, "timestampComputeAndGraphics");
    if (auto it = limits.find("timestampPeriod"); it != limits.end())
        out.timestampPeriod = number<float>(*it, origin, "timestampPeriod");
}

// A profile's limits must be those of a Vulkan device: no maximum below the specification's minimum and no
// alignment above its maximum (a planner divides by these, and loops in steps of them).
void check_limits(const VkPhysicalDeviceLimits& limits, const std::string& origin) {
    const VkPhysicalDeviceLimits least = required_minimum_limits();
    auto at_least = [&](const char* name, uint64_t value, uint64_t minimum) {
        if (value < minimum)
            fail(origin, std::string(name) + " = " + std::to_string(value) +
                             " is below the Vulkan specification's required minimum of " + std::to_string(minimum));
    };
    auto alignment = [&](const char* name, uint64_t value) {
        if (value == 0 || value > 256 || (value & (value - 1)) != 0)
            fail(origin, std::string(name) + " = " + std::to_string(value) +
                             " is not a power of two of at most 256, as the Vulkan specification requires");
    };
    at_least("maxComputeSharedMemorySize", limits.maxComputeSharedMemorySize, least.maxComputeSharedMemorySize);
    for (int i = 0; i < 3; ++i) {
        at_least("maxComputeWorkGroupCount", limits.maxComputeWorkGroupCount[i], least.maxComputeWorkGroupCount[i]);
        at_least("maxComputeWorkGroupSize", limits.maxComputeWorkGroupSize[i], least.maxComputeWorkGroupSize[i]);
    }
    at_least("maxComputeWorkGroupInvocations", limits.maxComputeWorkGroupInvocations,
             least.maxComputeWorkGroupInvocations);
    at_least("maxStorageBufferRange", limits.maxStorageBufferRange, least.maxStorageBufferRange);
    at_least("maxUniformBufferRange", limits.maxUniformBufferRange, least.maxUniformBufferRange);
    at_least("maxTexelBufferElements", limits.maxTexelBufferElements, least.maxTexelBufferElements);
    at_least("maxPushConstantsSize", limits.maxPushConstantsSize, least.maxPushConstantsSize);
    at_least("maxBoundDescriptorSets", limits.maxBoundDescriptorSets, least.maxBoundDescriptorSets);
    at_least("maxPerStageDescriptorStorageBuffers", limits.maxPerStageDescriptorStorageBuffers,
             least.maxPerStageDescriptorStorageBuffers);
    alignment("minStorageBufferOffsetAlignment", limits.minStorageBufferOffsetAlignment);
    alignment("minTexelBufferOffsetAlignment", limits.minTexelBufferOffsetAlignment);
    alignment("minUniformBufferOffsetAlignment", limits.minUniformBufferOffsetAlignment);
}

VkPhysicalDeviceType device_type(const json& value, const std::string& origin) {
    if (value.is_number_integer()) return static_cast<VkPhysicalDeviceType>(number<uint32_t>(value, origin, "deviceType"));
    const std::string name = value.is_string() ? value.get<std::string>() : "";
    for (auto [text, type] : {std::pair{"VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU", VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU},
                              std::pair{"VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU", VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU},
                              std::pair{"VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU", VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU},
                              std::pair{"VK_PHYSICAL_DEVICE_TYPE_CPU", VK_PHYSICAL_DEVICE_TYPE_CPU},
                              std::pair{"VK_PHYSICAL_DEVICE_TYPE_OTHER", VK_PHYSICAL_DEVICE_TYPE_OTHER}})
        if (name == text) return type;
    fail(origin, "deviceType '" + value.dump() + "' is no VkPhysicalDeviceType");
}

uint32_t api_version(const json& value, const std::string& origin) {
    if (value.is_number()) return number<uint32_t>(value, origin, "apiVersion");
    if (value.is_string()) {  // "1.3.277"
        unsigned major = 0, minor = 0, patch = 0;
        if (std::sscanf(value.get<std::string>().c_str(), "%u.%u.%u", &major, &minor, &patch) >= 2)
            return VK_MAKE_API_VERSION(0, major, minor, patch);
    }
    fail(origin, "apiVersion '" + value.dump() + "' is neither a number nor \"major.minor.patch\"");
}

// Whether the profile's formats give both float formats the buffer feature (required by the spec, so a
// profile without a formats section has it).
bool buffer_feature(const json& formats, const char* feature,
                    std::initializer_list<const char*> names = {"VK_FORMAT_R32_SFLOAT", "VK_FORMAT_R32G32B32A32_SFLOAT"}) {
    if (!formats.is_object()) return true;
    for (const char* format : names) {
        auto it = formats.find(format);
        if (it == formats.end()) return false;
        const json props = it->value("VkFormatProperties", json::object());
        const json features = props.value("bufferFeatures", json::array());
        if (!features.is_array() || std::find(features.begin(), features.end(), feature) == features.end())
            return false;
    }
    return true;
}

const json* object_at(const json& parent, const char* name) {
    auto it = parent.find(name);
    return it != parent.end() && it->is_object() ? &*it : nullptr;
}

DeviceModel model_of(const json& document, const std::string& origin);

}  // namespace

DeviceModel device_model_from_profile(std::string_view text, const std::string& origin) {
    json document;
    try {
        document = json::parse(text);
    } catch (const json::exception& e) {
        fail(origin, std::string("not valid JSON (") + e.what() + ")");
    }
    try {
        return model_of(document, origin);
    } catch (const json::exception& e) {  // a field of the wrong type where a structure was read
        fail(origin, e.what());
    }
}

namespace {

// Every capability block's properties, extensions and formats, later blocks overriding earlier ones.
struct Capabilities {
    json properties = json::object(), extensions = json::object(), features = json::object(), formats;
    bool has_features = false;  // some block has a "features" section (even an empty one: none of them)
};

Capabilities merged_capabilities(const json& document, const std::string& origin) {
    if (!document.is_object()) fail(origin, "not a JSON object");
    const json* capabilities = object_at(document, "capabilities");
    if (!capabilities) fail(origin, "no \"capabilities\" object (not a Vulkan Profiles document)");
    Capabilities merged;
    for (const auto& [name, block] : capabilities->items()) {
        if (!block.is_object()) fail(origin, "capability block '" + name + "' is not an object");
        const json* device = object_at(block, "device");
        const json& source = device ? *device : block;  // vulkaninfo nests one level less than the schema
        if (const json* p = object_at(source, "properties"))
            for (const auto& [key, value] : p->items()) merged.properties[key] = value;
        if (const json* e = object_at(source, "extensions"))
            for (const auto& [key, value] : e->items()) merged.extensions[key] = value;
        if (const json* f = object_at(source, "features")) {
            merged.has_features = true;
            for (const auto& [key, value] : f->items()) merged.features[key] = value;
        }
        if (const json* f = object_at(source, "formats")) merged.formats = *f;
    }
    return merged;
}

// VkPhysicalDeviceProperties from the profile over the specification's minimum limits (checked); returns
// the profile's device name, empty where it has none.
std::string read_core_properties(const json& properties, VkPhysicalDeviceProperties& props,
                                 const std::string& origin) {
    props.limits = required_minimum_limits();
    props.apiVersion = VK_API_VERSION_1_1;
    props.deviceType = VK_PHYSICAL_DEVICE_TYPE_OTHER;
    std::string name;
    if (const json* core = object_at(properties, "VkPhysicalDeviceProperties")) {
        if (auto it = core->find("apiVersion"); it != core->end()) props.apiVersion = api_version(*it, origin);
        if (auto it = core->find("driverVersion"); it != core->end())
            props.driverVersion = number<uint32_t>(*it, origin, "driverVersion");
        if (auto it = core->find("vendorID"); it != core->end())
            props.vendorID = number<uint32_t>(*it, origin, "vendorID");
        if (auto it = core->find("deviceID"); it != core->end())
            props.deviceID = number<uint32_t>(*it, origin, "deviceID");
        if (auto it = core->find("deviceType"); it != core->end()) props.deviceType = device_type(*it, origin);
        if (auto it = core->find("deviceName"); it != core->end() && it->is_string()) name = it->get<std::string>();
        if (auto it = core->find("limits"); it != core->end()) read_limits(*it, props.limits, origin);
    }
    check_limits(props.limits, origin);
    return name;
}

// The device's name: the profile's deviceName, else the first profile's label (or key), else the origin.
std::string device_name(const json& document, std::string name, const std::string& origin) {
    if (name.empty())
        if (const json* profiles = object_at(document, "profiles"))
            for (const auto& [key, profile] : profiles->items())
                if (name.empty()) name = profile.is_object() ? profile.value("label", key) : key;
    if (name.empty()) name = origin;
    return name;
}

// The DeviceInfo fields read from the core properties and the subgroup and driver structures.
void fill_device_info(DeviceInfo& info, const VkPhysicalDeviceProperties& props, const json& properties,
                      const std::string& origin) {
    info.type = device_type_name(props.deviceType);
    info.api_version = api_version_string(props.apiVersion);
    fill_limits(info, props.limits);
    info.subgroup_size = 1;  // the spec's minimum
    for (const char* structure : {"VkPhysicalDeviceVulkan11Properties", "VkPhysicalDeviceSubgroupProperties"})
        if (const json* s = object_at(properties, structure))
            if (auto it = s->find("subgroupSize"); it != s->end()) info.subgroup_size = number<uint32_t>(*it, origin, "subgroupSize");
    for (const char* structure : {"VkPhysicalDeviceVulkan12Properties", "VkPhysicalDeviceDriverProperties"})
        if (const json* s = object_at(properties, structure)) {
            const std::string driver = s->value("driverName", std::string());
            const std::string driver_info = s->value("driverInfo", std::string());
            if (!driver.empty()) info.driver = driver + (driver_info.empty() ? "" : " " + driver_info);
        }
    if (info.driver.empty()) info.driver = "version " + std::to_string(props.driverVersion);
    info.timestamps = props.limits.timestampComputeAndGraphics;
    info.fp16 = false;  // planning never depends on it
}

// Compute units: the vendor structure that counts them, else vkconv's own entry, else the fallback.
void read_compute_units(DeviceInfo& info, VkPhysicalDeviceType type, const json& document, const json& properties,
                        const std::string& origin) {
    auto count = [&](const char* structure, const char* field) -> uint32_t {
        if (const json* s = object_at(properties, structure))
            if (auto it = s->find(field); it != s->end()) return number<uint32_t>(*it, origin, field);
        return 0;
    };
    const uint32_t engines = count("VkPhysicalDeviceShaderCorePropertiesAMD", "shaderEngineCount");
    const uint32_t amd = engines * count("VkPhysicalDeviceShaderCorePropertiesAMD", "shaderArraysPerEngineCount") *
                         count("VkPhysicalDeviceShaderCorePropertiesAMD", "computeUnitsPerShaderArray");
    const std::pair<uint32_t, std::string> sources[] = {
        {count("VkPhysicalDeviceShaderSMBuiltinsPropertiesNV", "shaderSMCount"), "VK_NV_shader_sm_builtins"},
        {count("VkPhysicalDeviceShaderCoreProperties2AMD", "activeComputeUnitCount"), "VK_AMD_shader_core_properties2"},
        {amd, "VK_AMD_shader_core_properties"},
        {count("VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM", "shaderCoreCount"), "VK_ARM_shader_core_builtins"},
    };
    for (const auto& [units, source] : sources)
        if (units && !info.compute_units) info.compute_units = units, info.compute_units_source = source;
    if (!info.compute_units)
        if (const json* own = object_at(document, "vkconv"))
            if (auto it = own->find("compute_units"); it != own->end()) {
                info.compute_units = number<uint32_t>(*it, origin, "vkconv.compute_units");
                info.compute_units_source = "profile: " + own->value("compute_units_source", std::string("vkconv"));
            }
    if (!info.compute_units) {
        info.compute_units = fallback_compute_units(type);
        info.compute_units_source =
            type == VK_PHYSICAL_DEVICE_TYPE_CPU ? "fallback: host threads" : "fallback by device type";
    }
    if (info.compute_units == 0) fail(origin, "0 compute units");
}

// The buffer limits: Vulkan 1.3's and 1.1's property structures or the maintenance extensions' own.
void read_buffer_limits(DeviceModel& model, const json& properties, const std::string& origin) {
    auto size = [&](std::initializer_list<const char*> structures, const char* field) -> uint64_t {
        for (const char* structure : structures)
            if (const json* s = object_at(properties, structure))
                if (auto it = s->find(field); it != s->end()) return number<uint64_t>(*it, origin, field);
        return 0;
    };
    set_buffer_limits(model,
                      size({"VkPhysicalDeviceMaintenance4Properties", "VkPhysicalDeviceMaintenance4PropertiesKHR",
                            "VkPhysicalDeviceVulkan13Properties"},
                           "maxBufferSize"),
                      size({"VkPhysicalDeviceMaintenance3Properties", "VkPhysicalDeviceMaintenance3PropertiesKHR",
                            "VkPhysicalDeviceVulkan11Properties"},
                           "maxMemoryAllocationSize"));
}

// The largest device-local heap (VkPhysicalDeviceMemoryProperties, as vulkaninfo writes it: heaps with
// a size and flags by name or value), or the largest heap where none is marked device-local.
void read_device_local_heap(DeviceModel& model, const json& properties, const std::string& origin) {
    const json* memory = object_at(properties, "VkPhysicalDeviceMemoryProperties");
    if (!memory) return;
    uint64_t local = 0, any = 0;
    if (auto heaps = memory->find("memoryHeaps"); heaps != memory->end() && heaps->is_array())
        for (const json& heap : *heaps) {
            if (!heap.is_object() || !heap.contains("size")) fail(origin, "a memory heap without a size");
            const uint64_t size = number<uint64_t>(heap.at("size"), origin, "memoryHeaps size");
            const json flags = heap.value("flags", json());
            const bool device_local =
                (flags.is_number_unsigned() && (flags.get<uint64_t>() & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) ||
                (flags.is_array() &&
                 std::find(flags.begin(), flags.end(), "VK_MEMORY_HEAP_DEVICE_LOCAL_BIT") != flags.end());
            any = std::max(any, size);
            if (device_local) local = std::max(local, size);
        }
    model.device_local_heap_bytes = local ? local : any;
}

// Whether the profile's features give storageBuffer16BitAccess (absent: a device that may lack it).
bool storage_16bit_in(const json& features) {
    for (const char* structure : {"VkPhysicalDevice16BitStorageFeatures", "VkPhysicalDevice16BitStorageFeaturesKHR",
                                  "VkPhysicalDeviceVulkan11Features"})
        if (const json* s = object_at(features, structure))
            if (auto it = s->find("storageBuffer16BitAccess"); it != s->end() && it->is_boolean() && it->get<bool>())
                return true;
    return false;
}

DeviceModel model_of(const json& document, const std::string& origin) {
    const Capabilities capabilities = merged_capabilities(document, origin);
    const json& properties = capabilities.properties;
    DeviceModel model;
    VkPhysicalDeviceProperties& props = model.properties;
    const std::string name = device_name(document, read_core_properties(properties, props, origin), origin);
    std::snprintf(props.deviceName, sizeof props.deviceName, "%s", name.c_str());
    model.info.name = name;
    fill_device_info(model.info, props, properties, origin);
    model.info.storage_16bit = storage_16bit_in(capabilities.features);
    model.features_described = capabilities.has_features;
    read_compute_units(model.info, props.deviceType, document, properties, origin);
    read_buffer_limits(model, properties, origin);
    read_device_local_heap(model, properties, origin);
    // Unlike the limits check_limits holds to the specification, these may be lower than its minimum: a
    // profile imposed on a device for tests makes tensors of a few MiB too large for one buffer that way.
    model.storage_texel_buffers = buffer_feature(capabilities.formats, "VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT");
    model.uniform_texel_buffers = buffer_feature(capabilities.formats, "VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT");
    model.uniform_texel_16bit = buffer_feature(capabilities.formats, "VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT",
                                               {"VK_FORMAT_R16_UINT", "VK_FORMAT_R16G16B16A16_UINT",
                                                "VK_FORMAT_R32G32B32A32_UINT"});
    return model;
}

}  // namespace

std::vector<std::string> shipped_profile_names() {
    std::vector<std::string> names;
    for (size_t i = 0; i < kShippedProfileCount; ++i) names.emplace_back(kShippedProfiles[i].first);
    return names;
}

DeviceModel load_device_model(const std::string& name_or_path) {
    for (size_t i = 0; i < kShippedProfileCount; ++i)
        if (kShippedProfiles[i].first == name_or_path)
            return device_model_from_profile(kShippedProfiles[i].second, "'" + name_or_path + "'");
    std::ifstream file(name_or_path, std::ios::binary);
    if (!file) {
        std::string names;
        for (const auto& n : shipped_profile_names()) names += (names.empty() ? "" : ", ") + n;
        throw Error(ErrorCategory::InvalidArgument, "device profile '" + name_or_path +
                                                        "' is neither a shipped profile (" + names +
                                                        ") nor a readable file");
    }
    std::stringstream text;
    text << file.rdbuf();
    return device_model_from_profile(text.str(), "'" + name_or_path + "'");
}

}  // namespace vkconv::detail
