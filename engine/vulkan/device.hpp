// The logical device: one compute queue, its function table (vulkan/vk_api.hpp), limits. Either vkconv's
// own (made and destroyed here) or the application's (ExternalDevice: used, never destroyed).
#pragma once

#include "vulkan/vk_api.hpp"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "vkconv/device.hpp"
#include "vulkan/device_model.hpp"
#include "vulkan/stream_pool.hpp"

namespace vkconv::detail {

class Device;

// What one recorded dispatch asks of the device, as a test's auditor sees it (Device::dispatch_auditor):
// the shader, the workgroup grid, invocations per workgroup, push-constant bytes and each binding's
// buffer range and descriptor type.
struct DispatchAudit {
    struct Binding {
        VkBuffer buffer = VK_NULL_HANDLE;
        uint64_t offset = 0, size = 0;
        VkDescriptorType type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        VkFormat texel_format = VK_FORMAT_UNDEFINED;  // texel-buffer descriptors: the view's format
    };
    std::string shader;
    uint32_t groups[3] = {1, 1, 1};
    uint32_t invocations = 1;
    uint32_t push_constant_bytes = 0;
    uint64_t shared_memory_bytes = 0;  // as the pipeline's SPIR-V declares it (0: unknown)
    std::vector<Binding> bindings;
};

// A fault a test plants in the dispatches of some shaders (Device::planted_fault), to show that a check which
// trusts a result (find's and tune's verification) rejects a wrong one. Each is repeatable: every run of the
// same work goes wrong the same way. Set only while no call runs on the device (it is read unlocked at every
// dispatch); Scramble copies within the written buffers, so they must allow transfers (pool buffers do).
struct PlantedFault {
    enum class Kind {
        Skip,      // the dispatch is not recorded: what it should write keeps what it held
        Scramble,  // after the dispatch, the first half of each range it writes is copied over the last half
    };
    std::string shaders;  // a shader's name, or "prefix*" for every shader whose name starts so; empty: none
    Kind kind = Kind::Scramble;
    bool hits(const std::string& shader) const {
        if (shaders.empty() || shaders.back() != '*') return shader == shaders && !shaders.empty();
        return shader.rfind(std::string_view(shaders).substr(0, shaders.size() - 1), 0) == 0;
    }
};

// A device's key for what vkconv keeps about it in files (measured choices, tuning winners): its name, PCI
// ids, driver version, binding limits as this context sees them, and pipeline-cache UUID, so a driver
// update (or a context with lowered limits) starts afresh. No tab or newline in it.
std::string device_key_of(const Device& device);

// "" when a kernel that binds `needed` storage buffers fits the device's maxPerStageDescriptorStorageBuffers
// (4 on some devices); otherwise the reason, naming `kernel`, the count and the limit.
std::string storage_buffer_shortfall(const Device& device, const std::string& kernel, uint32_t needed);

// The application's device and the queue vkconv submits to (vkconv/interop.hpp's ExternalDevice, as the
// context passes it on; error messages name ExternalDevice's fields).
struct ExternalQueue {
    VkDevice device = VK_NULL_HANDLE;
    uint32_t queue_family = 0, queue_index = 0;
    bool timeline_semaphores = false;
    std::mutex* queue_mutex = nullptr;  // the application's lock around the queue, or null
};

class Device {
public:
    // `instance` (the functions of the instance `physical` belongs to) must outlive the device.
    Device(const InstanceFunctions& instance, VkPhysicalDevice physical, const DeviceModel& model);
    // The application's device and queue; its requirements checked (Error(Unsupported) naming a missing one).
    Device(const InstanceFunctions& instance, VkPhysicalDevice physical, const DeviceModel& model,
           const ExternalQueue& external);
    // A device that exists only as a description: plans are made and dispatch lists recorded for it
    // (command_stream.hpp's planning stream), nothing else; it has no Vulkan handle.
    explicit Device(const DeviceModel& model);
    ~Device();
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    VkPhysicalDevice physical() const { return physical_; }
    VkDevice handle() const { return device_; }
    const DeviceFunctions& vk() const { return table_; }
    // The functions of the instance and its physical devices (format properties, memory budget).
    const InstanceFunctions& instance_vk() const { return instance_; }
    VkQueue queue() const { return queue_; }
    uint32_t queue_family() const { return queue_family_; }
    // The pool of the queue family's command buffers (resettable, transient), made with the device.
    VkCommandPool command_pool() const { return command_pool_; }
    // Vulkan requires the command pool's use to be externally synchronised: streams take this lock.
    std::mutex& command_pool_mutex() { return command_pool_mutex_; }
    // The queue, likewise: submissions take this lock (the application's, where it gave one).
    std::mutex& queue_mutex() { return external_queue_mutex_ ? *external_queue_mutex_ : queue_mutex_; }
    bool owned() const { return owned_; }
    bool modelled() const { return modelled_; }
    const DeviceModel& model() const { return model_; }
    // The timeline semaphore submissions signal (VK_NULL_HANDLE without the feature), and the next value.
    VkSemaphore timeline() const { return timeline_; }
    uint64_t next_timeline_value() { return ++timeline_value_; }
    // The highest value a submission that reached the queue signals (called under the queue lock).
    void note_timeline_submitted(uint64_t value) { timeline_submitted_ = value; }
    // Buffers of the application wrapped as tensors (counted per wrapping tensor): never viewed as texels.
    void note_foreign_buffer(VkBuffer buffer) { ++foreign_[buffer]; }
    void forget_foreign_buffer(VkBuffer buffer) noexcept;
    bool foreign_buffer(VkBuffer buffer) const { return !foreign_.empty() && foreign_.count(buffer) != 0; }
    // Command-buffer resources and texel views, recycled between streams (vulkan/stream_pool.hpp).
    StreamPool& streams() { return *streams_; }
    // Every Vulkan object vkconv has created and destroyed on this device (tests hold steady-state passes to
    // no creation, and a long run to no more live objects than it settled at).
    void note_created(uint64_t count = 1) { objects_created_ += count; }
    void note_destroyed(uint64_t count = 1) noexcept { objects_destroyed_ += count; }
    uint64_t objects_created() const { return objects_created_.load(); }
    uint64_t objects_destroyed() const { return objects_destroyed_.load(); }

    // Where a lost device really shows itself: queue submissions, fence waits and memory mappings. Each such
    // call first asks `fault_at`, which counts it and returns VK_ERROR_DEVICE_LOST instead of VK_SUCCESS
    // for the one a test chose (inject_device_loss); the caller then skips the driver call and fails
    // through its ordinary error path, exactly as if the driver had returned it.
    enum class FaultPoint { Submission, FenceWait, Mapping };
    VkResult fault_at(FaultPoint point) noexcept;
    uint64_t fault_points_passed() const { return fault_points_.load(); }
    // The nth fault point from now (1 = the next) returns VK_ERROR_DEVICE_LOST; 0 disarms.
    void inject_device_loss(uint64_t nth) { lose_at_ = nth ? fault_points_.load() + nth : 0; }
    const VkPhysicalDeviceLimits& limits() const { return model_.properties.limits; }
    const VkPhysicalDeviceProperties& properties() const { return model_.properties; }
    // Tests: called for every dispatch a (non-planning) command stream records, before it is recorded, so a
    // test checks what the engine asks of the device independently of the planner that chose it.
    std::function<void(const DispatchAudit&)> dispatch_auditor;
    // Tests: the dispatches a (non-planning) command stream records go wrong as this says.
    PlantedFault planted_fault;
    // The limits of another device (a Vulkan Profiles model) imposed on this one: each size limit lowered
    // to the smaller of the two, each offset alignment raised to the larger, the buffer and allocation
    // sizes lowered (ContextOptions::device_limits). Planning, the pool and the tests then see only these.
    void impose_limits(const DeviceModel& imposed);
    // The name of the imposed model ("" when none).
    const std::string& imposed_limits() const { return imposed_; }
    // The device-local heap an imposed model caps the pool at (0: none imposed).
    uint64_t imposed_heap_bytes() const { return imposed_heap_ ? model_.device_local_heap_bytes : 0; }
    // ContextOptions::max_buffer_bytes: the largest buffer and allocation at most `bytes` (and no binding
    // past them).
    void lower_buffer_limits(uint64_t bytes);
    // Tests: report at most `bytes` as maxStorageBufferRange and bytes / 4 texels as maxTexelBufferElements.
    void lower_binding_limits(uint64_t bytes);
    // Workgroups per dimension one dispatch may use: the device limit, or a lower cap (0 = none; tests use
    // a cap to make the splitting large problems need happen on small ones).
    uint32_t max_workgroups(int dimension) const;
    void cap_workgroups(uint32_t cap);
    const VkPhysicalDeviceMemoryProperties& memory() const { return memory_; }
    const DeviceInfo& info() const { return model_.info; }
    uint32_t timestamp_valid_bits() const { return timestamp_valid_bits_; }

    // Sticky device loss: set by any call that returns VK_ERROR_DEVICE_LOST.
    std::atomic<bool>* lost_flag() { return &lost_; }
    bool lost() const { return lost_.load(); }
    void throw_if_lost() const;

    // A memory type allowed by `type_bits` that has all of `required` (and, if possible, `preferred`).
    // Returns UINT32_MAX when none has `required`.
    uint32_t find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags required,
                              VkMemoryPropertyFlags preferred) const;

private:
    // After the handle exists: the function table, the queue, the command pool and stream pool.
    void finish_setup();
    void make_timeline();
    void wait_for_timeline() noexcept;

    const InstanceFunctions& instance_;
    VkPhysicalDevice physical_;
    VkDevice device_ = VK_NULL_HANDLE;
    DeviceFunctions table_{};
    VkQueue queue_ = VK_NULL_HANDLE;
    uint32_t queue_family_ = 0;
    VkCommandPool command_pool_ = VK_NULL_HANDLE;
    std::mutex command_pool_mutex_, queue_mutex_;
    std::mutex* external_queue_mutex_ = nullptr;
    bool owned_ = true;
    bool modelled_ = false;
    uint32_t queue_index_ = 0;
    VkSemaphore timeline_ = VK_NULL_HANDLE;
    uint64_t timeline_value_ = 0;
    uint64_t timeline_submitted_ = 0;
    std::map<VkBuffer, uint32_t> foreign_;
    std::unique_ptr<StreamPool> streams_;
    std::atomic<uint64_t> objects_created_{0}, objects_destroyed_{0};
    std::atomic<uint64_t> fault_points_{0}, lose_at_{0};
    uint32_t workgroup_cap_ = 0;
    std::string imposed_;
    bool imposed_heap_ = false;
    uint32_t timestamp_valid_bits_ = 0;
    VkPhysicalDeviceMemoryProperties memory_{};
    DeviceModel model_;
    std::atomic<bool> lost_{false};
};

}  // namespace vkconv::detail
