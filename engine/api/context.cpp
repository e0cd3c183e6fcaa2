// Context: options and environment, device choice, and the objects every pass shares.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "context/access.hpp"
#include "context/context_impl.hpp"
#include "gemm/gemm_config.hpp"
#include "gemm/tuning.hpp"
#include "memory/staging.hpp"
#include "select/find_cache.hpp"
#include "vkconv/interop.hpp"
#include "vkconv/pool.hpp"
#include "vkconv/testing.hpp"
#include "vulkan/vk_check.hpp"

namespace vkconv {
namespace detail {
namespace {

bool validation_from_environment() {
    const char* value = std::getenv("VKCONV_VALIDATION");
    return value && *value && std::strcmp(value, "0") != 0;
}

}  // namespace

ContextImpl::ContextImpl(const ContextOptions& opts, const LoweredLimits& lowered) : options(opts) {
    const bool want_validation = options.validation.value_or(validation_from_environment());
    instance = std::make_unique<Instance>(want_validation, options.on_message);

    const auto physical = instance->physical_devices();
    std::vector<DeviceModel> models;
    std::vector<DeviceInfo> infos;
    for (uint32_t i = 0; i < physical.size(); ++i) {
        models.push_back(query_device_model(instance->vk(), physical[i], i));
        infos.push_back(models.back().info);
    }
    std::string selector = options.device;
    if (selector.empty())
        if (const char* env = std::getenv("VKCONV_DEVICE")) selector = env;
    const uint32_t chosen = select_device(infos, selector);
    device = std::make_unique<Device>(instance->vk(), physical[chosen], models[chosen]);
    finish_setup(lowered);
}

ContextImpl::ContextImpl(const ExternalDevice& external, const ContextOptions& opts) : options(opts) {
    auto null = [](const char* what) {
        return Error(ErrorCategory::InvalidArgument, std::string("ExternalDevice::") + what + " is null");
    };
    if (!external.get_instance_proc_addr) throw null("get_instance_proc_addr");
    if (!external.instance) throw null("instance");
    if (!external.physical_device) throw null("physical_device");
    if (!external.device) throw null("device");
    instance = std::make_unique<Instance>(external.instance, external.get_instance_proc_addr, options.on_message);
    if (options.validation.value_or(false))
        instance->report(MessageSeverity::Warning,
                         "ContextOptions::validation does not apply to the application's device: its instance "
                         "has the layers the application enabled");
    // The physical device must be one of the instance's; its position is the index DeviceInfo reports.
    const auto physical = instance->physical_devices();
    const auto found = std::find(physical.begin(), physical.end(), external.physical_device);
    if (found == physical.end())
        throw Error(ErrorCategory::InvalidArgument,
                    "ExternalDevice::physical_device is not one of the instance's physical devices");
    const auto index = static_cast<uint32_t>(found - physical.begin());
    const ExternalQueue queue{external.device, external.queue_family, external.queue_index,
                              external.timeline_semaphores, external.queue_mutex};
    device = std::make_unique<Device>(instance->vk(), external.physical_device,
                                      query_device_model(instance->vk(), external.physical_device, index), queue);
    finish_setup({});
}

ContextImpl::ContextImpl(const DeviceModel& model) {
    device = std::make_unique<Device>(model);
    find_cache = std::make_unique<FindCache>(*device, std::string());
    pool = std::make_unique<BufferPool>(*device, options.pool_block_bytes, options.device_memory_limit,
                                        options.pool_min_block_bytes);
    pipelines = std::make_unique<PipelineCache>(*device);
    tuning = std::make_unique<Tuning>();
}

void ContextImpl::finish_setup(const LoweredLimits& lowered) {
    std::string imposed = options.device_limits;
    if (imposed.empty())
        if (const char* env = std::getenv("VKCONV_DEVICE_LIMITS")) imposed = env;
    if (!imposed.empty()) device->impose_limits(load_device_model(imposed));
    if (options.max_buffer_bytes) {
        if (options.max_buffer_bytes < 4096)
            throw Error(ErrorCategory::InvalidArgument, "ContextOptions::max_buffer_bytes of " +
                                                            std::to_string(options.max_buffer_bytes) +
                                                            " is below 4096 bytes (0: the device's own)");
        device->lower_buffer_limits(options.max_buffer_bytes);
    }
    if (lowered.max_storage_buffer_range) device->lower_binding_limits(lowered.max_storage_buffer_range);
    device->cap_workgroups(lowered.max_workgroups_per_dispatch);
    // Read before any handle that only the destructor frees: a malformed file must not leak them.
    find_cache = std::make_unique<FindCache>(*device, options.find_cache_path);
    if (options.auto_choice)
        auto_choice = *options.auto_choice;
    else if (const char* env = std::getenv("VKCONV_AUTO_CHOICE"); env && *env)
        auto_choice = parse_auto_choice(env);
    pool = std::make_unique<BufferPool>(*device, options.pool_block_bytes, options.device_memory_limit,
                                        options.pool_min_block_bytes);
    std::string pipeline_file = options.pipeline_cache_path;
    if (pipeline_file.empty())
        if (const char* env = std::getenv("VKCONV_PIPELINE_CACHE")) pipeline_file = env;
    pipelines = std::make_unique<PipelineCache>(
        *device, pipeline_file,
        [inst = instance.get()](MessageSeverity severity, std::string_view text) { inst->report(severity, text); });
    staging = std::make_unique<Staging>(*device, *pool);
    std::string tuning_file = options.tuning_path;
    if (tuning_file.empty())
        if (const char* env = std::getenv("VKCONV_TUNING")) tuning_file = env;
    if (tuning_file.empty() && !pipeline_file.empty()) tuning_file = pipeline_file + ".tuning";
    std::string warning;
    tuning = std::make_unique<Tuning>(device_key_of(*device), tuning_file, warning);
    if (!warning.empty()) instance->report(MessageSeverity::Warning, warning);
}

}  // namespace detail

Context::Context(const ContextOptions& options) : impl_(std::make_shared<detail::ContextImpl>(options)) {}
Context::Context(const ExternalDevice& device, const ContextOptions& options)
    : impl_(std::make_shared<detail::ContextImpl>(device, options)) {}
Context testing::make_context(const ContextOptions& options, uint32_t max_workgroups_per_dispatch,
                              uint64_t max_storage_buffer_range) {
    const detail::LoweredLimits limits{max_workgroups_per_dispatch, max_storage_buffer_range};
    return detail::Access::context(std::make_shared<detail::ContextImpl>(options, limits));
}

void testing::inject_device_loss(Context& context, uint64_t nth) {
    detail::impl_of(context).device->inject_device_loss(nth);
}

uint64_t testing::device_calls(const Context& context) {
    return detail::impl_of(context).device->fault_points_passed();
}

uint64_t testing::vulkan_objects_created(const Context& context) {
    return detail::impl_of(context).device->objects_created();
}

uint64_t testing::vulkan_objects_alive(const Context& context) {
    const detail::Device& device = *detail::impl_of(context).device;
    return device.objects_created() - device.objects_destroyed();
}

void testing::inject_allocation_failures(Context& context, uint64_t nth, uint64_t count) {
    detail::impl_of(context).pool->inject_allocation_failures(nth, count);
}

}  // namespace vkconv
