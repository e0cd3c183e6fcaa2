// A device's model from the device itself: its properties, and its compute units from the vendor
// extension that counts them.
#include "vulkan/device_model.hpp"

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace vkconv::detail {
namespace {

bool queue_has_timestamps(const InstanceFunctions& vk, VkPhysicalDevice device) {
    uint32_t count = 0;
    vk.vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vk.vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
    for (const auto& family : families)
        if (family.queueFlags & VK_QUEUE_COMPUTE_BIT) return family.timestampValidBits > 0;
    return false;
}

std::vector<std::string> device_extensions(const InstanceFunctions& vk, VkPhysicalDevice device) {
    uint32_t count = 0;
    if (vk.vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr) != VK_SUCCESS) return {};
    std::vector<VkExtensionProperties> props(count);
    if (vk.vkEnumerateDeviceExtensionProperties(device, nullptr, &count, props.data()) != VK_SUCCESS) return {};
    std::vector<std::string> names;
    for (const auto& p : props) names.emplace_back(p.extensionName);
    return names;
}

bool has(const std::vector<std::string>& extensions, const char* name) {
    for (const auto& e : extensions)
        if (e == name) return true;
    return false;
}

bool buffer_feature(const InstanceFunctions& vk, VkPhysicalDevice device, VkFormatFeatureFlags feature,
                    std::initializer_list<VkFormat> formats = {VK_FORMAT_R32_SFLOAT, VK_FORMAT_R32G32B32A32_SFLOAT}) {
    for (VkFormat format : formats) {
        VkFormatProperties props{};
        vk.vkGetPhysicalDeviceFormatProperties(device, format, &props);
        if ((props.bufferFeatures & feature) != feature) return false;
    }
    return true;
}

}  // namespace

const char* device_type_name(VkPhysicalDeviceType type) {
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

std::string api_version_string(uint32_t v) {
    return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
           std::to_string(VK_API_VERSION_PATCH(v));
}

void fill_limits(DeviceInfo& info, const VkPhysicalDeviceLimits& limits) {
    info.shared_memory_bytes = limits.maxComputeSharedMemorySize;
    info.max_storage_buffer_range = limits.maxStorageBufferRange;
    info.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; ++i) info.max_workgroup_count[i] = limits.maxComputeWorkGroupCount[i];
    info.max_push_constants_bytes = limits.maxPushConstantsSize;
    info.max_texel_buffer_elements = limits.maxTexelBufferElements;
}

void set_buffer_limits(DeviceModel& model, uint64_t max_buffer_size, uint64_t max_memory_allocation_size) {
    if (!max_buffer_size && !max_memory_allocation_size)
        max_buffer_size = max_memory_allocation_size = DeviceModel::kMinimumAllocationBytes;
    model.max_buffer_size = max_buffer_size ? max_buffer_size : max_memory_allocation_size;
    model.max_memory_allocation_size = max_memory_allocation_size ? max_memory_allocation_size : max_buffer_size;
    model.info.max_buffer_bytes = model.max_single_buffer_bytes();
    // No binding reaches past one buffer: planning may then treat a binding's limit as a page's too.
    VkPhysicalDeviceLimits& limits = model.properties.limits;
    limits.maxStorageBufferRange =
        static_cast<uint32_t>(std::min<uint64_t>(limits.maxStorageBufferRange, model.max_single_buffer_bytes()));
    limits.maxTexelBufferElements =
        static_cast<uint32_t>(std::min<uint64_t>(limits.maxTexelBufferElements, model.max_single_buffer_bytes() / 4));
    model.info.max_storage_buffer_range = limits.maxStorageBufferRange;
    model.info.max_texel_buffer_elements = limits.maxTexelBufferElements;
}

uint32_t fallback_compute_units(VkPhysicalDeviceType type) {
    switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_CPU: {
            // lavapipe runs one thread per host CPU unless LP_NUM_THREADS says otherwise.
            if (const char* threads = std::getenv("LP_NUM_THREADS"))
                if (int n = std::atoi(threads); n > 0) return static_cast<uint32_t>(n);
            const unsigned n = std::thread::hardware_concurrency();
            return n ? n : 1;
        }
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
            return 64;
        default:
            return 16;
    }
}

namespace {

// The structures chained to VkPhysicalDeviceProperties2, and which of them the device filled: subgroup and
// driver, the buffer limits, then whichever core-count structure the device has.
struct ChainedProperties {
    bool has_1_2 = false, has_maintenance3 = false, has_maintenance4 = false;
    bool has_nv = false, has_amd = false, has_amd2 = false, has_arm = false;
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceShaderCorePropertiesAMD amd{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    VkPhysicalDeviceShaderCoreProperties2AMD amd2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
    VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM arm{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_BUILTINS_PROPERTIES_ARM};
    VkPhysicalDeviceMaintenance3Properties maintenance3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceMaintenance4Properties maintenance4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
};

// Fills `chained` with one vkGetPhysicalDeviceProperties2, chaining only the structures the device's
// version or extensions provide. (Filled in place: the chain points into it.)
void query_chained_properties(const InstanceFunctions& vk, VkPhysicalDevice device, uint32_t api_version,
                              const std::vector<std::string>& extensions, ChainedProperties& chained) {
    chained.has_1_2 = api_version >= VK_API_VERSION_1_2;
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    void** next = &props2.pNext;
    auto chain = [&](auto& structure) {
        *next = &structure;
        next = &structure.pNext;
    };
    chain(chained.subgroup);
    if (chained.has_1_2) chain(chained.driver);
    chained.has_maintenance3 = api_version >= VK_API_VERSION_1_1 || has(extensions, VK_KHR_MAINTENANCE_3_EXTENSION_NAME);
    chained.has_maintenance4 = api_version >= VK_API_VERSION_1_3 || has(extensions, VK_KHR_MAINTENANCE_4_EXTENSION_NAME);
    if (chained.has_maintenance3) chain(chained.maintenance3);
    if (chained.has_maintenance4) chain(chained.maintenance4);
    chained.has_nv = has(extensions, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
    chained.has_amd = has(extensions, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
    chained.has_amd2 = has(extensions, VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME);
    chained.has_arm = has(extensions, VK_ARM_SHADER_CORE_BUILTINS_EXTENSION_NAME);
    if (chained.has_nv) chain(chained.nv);
    if (chained.has_amd) chain(chained.amd);
    if (chained.has_amd2) chain(chained.amd2);
    if (chained.has_arm) chain(chained.arm);
    vk.vkGetPhysicalDeviceProperties2(device, &props2);
}

// Whether the device has shaderFloat16 (a Vulkan 1.2 feature; false before 1.2).
bool has_float16(const InstanceFunctions& vk, VkPhysicalDevice device, bool has_1_2) {
    VkPhysicalDeviceVulkan12Features features12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    if (has_1_2) features2.pNext = &features12;
    vk.vkGetPhysicalDeviceFeatures2(device, &features2);
    return has_1_2 && features12.shaderFloat16;
}

// Whether the device has storageBuffer16BitAccess (Vulkan 1.1's 16-bit storage features).
bool has_storage_16bit(const InstanceFunctions& vk, VkPhysicalDevice device, uint32_t api_version) {
    if (api_version < VK_API_VERSION_1_1) return false;
    VkPhysicalDevice16BitStorageFeatures storage{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceFeatures2 features2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features2.pNext = &storage;
    vk.vkGetPhysicalDeviceFeatures2(device, &features2);
    return storage.storageBuffer16BitAccess == VK_TRUE;
}

// Compute units: the first core-count structure the device filled, else the fallback by device type.
void set_compute_units(DeviceInfo& info, const ChainedProperties& c, VkPhysicalDeviceType type) {
    if (c.has_nv && c.nv.shaderSMCount) {
        info.compute_units = c.nv.shaderSMCount, info.compute_units_source = VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME;
    } else if (c.has_amd2 && c.amd2.activeComputeUnitCount) {
        info.compute_units = c.amd2.activeComputeUnitCount;
        info.compute_units_source = VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME;
    } else if (c.has_amd && c.amd.shaderEngineCount) {
        info.compute_units =
            c.amd.shaderEngineCount * c.amd.shaderArraysPerEngineCount * c.amd.computeUnitsPerShaderArray;
        info.compute_units_source = VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME;
    } else if (c.has_arm && c.arm.shaderCoreCount) {
        info.compute_units = c.arm.shaderCoreCount;
        info.compute_units_source = VK_ARM_SHADER_CORE_BUILTINS_EXTENSION_NAME;
    } else {
        info.compute_units = fallback_compute_units(type);
        info.compute_units_source =
            type == VK_PHYSICAL_DEVICE_TYPE_CPU ? "fallback: host threads" : "fallback by device type";
    }
}

// The driver's name and info (Vulkan 1.2's driver properties), else its version number.
std::string driver_description(const ChainedProperties& c, uint32_t driver_version) {
    if (c.has_1_2 && c.driver.driverName[0]) {
        std::string driver = c.driver.driverName;
        if (c.driver.driverInfo[0]) driver += std::string(" ") + c.driver.driverInfo;
        return driver;
    }
    return "version " + std::to_string(driver_version);
}

}  // namespace

DeviceModel query_device_model(const InstanceFunctions& vk, VkPhysicalDevice device, uint32_t index) {
    DeviceModel model;
    VkPhysicalDeviceProperties& props = model.properties;
    vk.vkGetPhysicalDeviceProperties(device, &props);
    const std::vector<std::string> extensions = device_extensions(vk, device);
    ChainedProperties chained;
    query_chained_properties(vk, device, props.apiVersion, extensions, chained);
    const bool fp16 = has_float16(vk, device, chained.has_1_2);

    DeviceInfo& info = model.info;
    info.index = index;
    info.name = props.deviceName;
    info.type = device_type_name(props.deviceType);
    info.driver = driver_description(chained, props.driverVersion);
    info.api_version = api_version_string(props.apiVersion);
    info.subgroup_size = chained.subgroup.subgroupSize;
    fill_limits(info, props.limits);
    info.fp16 = fp16;
    info.storage_16bit = has_storage_16bit(vk, device, props.apiVersion);
    info.timestamps = props.limits.timestampComputeAndGraphics || queue_has_timestamps(vk, device);
    set_compute_units(info, chained, props.deviceType);

    set_buffer_limits(model, chained.has_maintenance4 ? chained.maintenance4.maxBufferSize : 0,
                      chained.has_maintenance3 ? chained.maintenance3.maxMemoryAllocationSize : 0);
    model.storage_texel_buffers = buffer_feature(vk, device, VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT);
    model.uniform_texel_buffers = buffer_feature(vk, device, VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT);
    model.uniform_texel_16bit = buffer_feature(vk, device, VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT,
                                               {VK_FORMAT_R16_UINT, VK_FORMAT_R16G16B16A16_UINT,
                                                VK_FORMAT_R32G32B32A32_UINT});
    return model;
}

}  // namespace vkconv::detail
