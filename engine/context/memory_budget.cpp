// Context::auto_workspace_limit: a workspace limit derived from the device-local heap's budget.
#include "vulkan/vk_api.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "context/context_impl.hpp"
#include "vkconv/context.hpp"

namespace vkconv {
namespace {

bool supports_memory_budget(const detail::InstanceFunctions& vk, VkPhysicalDevice physical) {
    uint32_t count = 0;
    if (vk.vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, nullptr) != VK_SUCCESS) return false;
    std::vector<VkExtensionProperties> extensions(count);
    if (vk.vkEnumerateDeviceExtensionProperties(physical, nullptr, &count, extensions.data()) != VK_SUCCESS)
        return false;
    return std::any_of(extensions.begin(), extensions.end(), [](const VkExtensionProperties& e) {
        return std::strcmp(e.extensionName, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME) == 0;
    });
}

}  // namespace

uint64_t Context::auto_workspace_limit() const {
    const auto lock = detail::serialise(*this);
    const detail::Device& device = *detail::impl_of(*this).device;
    const VkPhysicalDeviceMemoryProperties& memory = device.memory();
    // The heap behind the memory type the pool allocates from (device-local where there is one).
    const uint32_t type = device.find_memory_type(~0u, 0, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (type == UINT32_MAX) return 0;
    const uint32_t heap = memory.memoryTypes[type].heapIndex;
    const uint64_t heap_size = memory.memoryHeaps[heap].size;
    uint64_t available = heap_size / 2;  // without a usable budget: half the heap, the rest left to others
    if (supports_memory_budget(device.instance_vk(), device.physical()) &&
        device.instance_vk().vkGetPhysicalDeviceMemoryProperties2) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
        VkPhysicalDeviceMemoryProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
        properties.pNext = &budget;
        device.instance_vk().vkGetPhysicalDeviceMemoryProperties2(device.physical(), &properties);
        const uint64_t heap_budget = budget.heapBudget[heap], usage = budget.heapUsage[heap];
        // Some drivers report 0 or more than the heap holds: such a budget is ignored.
        if (heap_budget > 0 && heap_budget <= heap_size && usage <= heap_budget) available = heap_budget - usage;
    }
    // Half of what is available goes to workspace; the other half is left for the operands.
    return available / 2;
}

}  // namespace vkconv
