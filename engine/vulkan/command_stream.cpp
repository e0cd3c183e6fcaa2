#include "vulkan/command_stream.hpp"

#include <array>
#include <vector>

#include "vulkan/vk_check.hpp"

namespace vkconv::detail {
namespace {

bool overlaps(const BufferRange& a, const BufferRange& b) {
    return a.buffer == b.buffer && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

}  // namespace

CommandStream::CommandStream(Device& device) : device_(device), vk_(device.vk()) {
    device_.throw_if_lost();
    resources_ = device_.streams().acquire();
    commands_ = resources_->commands;
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    const VkResult result = vk_.vkBeginCommandBuffer(commands_, &begin);
    if (result != VK_SUCCESS) {
        release();
        VKC_CHECK(device_.lost_flag(), result);
    }
    begin_barrier();
}

CommandStream::CommandStream(Device& device, VkCommandBuffer external)
    : device_(device), vk_(device.vk()), external_(true) {
    device_.throw_if_lost();
    resources_ = device_.streams().acquire();  // for its descriptor pools; its command buffer stays unused
    commands_ = external;
    begin_barrier();
}

CommandStream::CommandStream(Device& device, std::vector<PlannedDispatch>& plan, std::vector<GemmShape>* gemms)
    : device_(device), vk_(device.vk()), recording_(false), plan_(&plan), gemms_(gemms) {}

void CommandStream::begin_barrier() {
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                            VK_ACCESS_TRANSFER_WRITE_BIT;
    const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    vk_.vkCmdPipelineBarrier(commands_, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
}

CommandStream::~CommandStream() {
    release();
}

void CommandStream::release() noexcept {
    if (plan_) return;
    // Settled: never submitted, or submitted and waited for (an application's command buffer: released when
    // the application reported it complete). Otherwise the GPU may still use them.
    device_.streams().recycle(std::move(resources_), external_ || !submitted_ || completed_);
    commands_ = VK_NULL_HANDLE;
}

void CommandStream::access(std::span<const Access> accesses) {
    bool hazard = false;
    for (const Access& next : accesses)
        for (const Access& earlier : pending_)
            if ((next.written || earlier.written) && overlaps(next.range, earlier.range)) hazard = true;
    if (hazard) {
        VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT |
                                VK_ACCESS_TRANSFER_READ_BIT;
        barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                                VK_ACCESS_TRANSFER_WRITE_BIT;
        const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
        vk_.vkCmdPipelineBarrier(commands_, stages, stages, 0, 1, &barrier, 0, nullptr, 0, nullptr);
        pending_.clear();
    }
    pending_.insert(pending_.end(), accesses.begin(), accesses.end());
}

void CommandStream::copy(const BufferRange& source, const BufferRange& destination) {
    if (plan_) return;
    const std::array<Access, 2> accesses{Access{source, false}, Access{destination, true}};
    access(accesses);
    VkBufferCopy region{source.offset, destination.offset, source.size};
    vk_.vkCmdCopyBuffer(commands_, source.buffer, destination.buffer, 1, &region);
}

VkDescriptorSet CommandStream::allocate_set(VkDescriptorSetLayout layout) {
    return device_.streams().allocate_set(*resources_, layout);
}

void CommandStream::dispatch(const Pipeline& pipeline, std::span<const Binding> bindings, const void* push_constants,
                             uint32_t groups_x, uint32_t groups_y, uint32_t groups_z) {
    if (bindings.size() != pipeline.desc.bindings.size())
        throw Error(ErrorCategory::VulkanFailure, "internal: shader '" + pipeline.desc.shader + "' takes " +
                                                      std::to_string(pipeline.desc.bindings.size()) +
                                                      " bindings, got " + std::to_string(bindings.size()));
    const uint64_t max_range = device_.limits().maxStorageBufferRange;
    if (plan_) {
        for (size_t i = 0; i < bindings.size(); ++i)
            if (pipeline.desc.bindings[i] == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER && bindings[i].range.size > max_range)
                throw Error(ErrorCategory::Unsupported, "internal: a planned binding of " +
                                                            std::to_string(bindings[i].range.size) +
                                                            " bytes exceeds maxStorageBufferRange");
        plan_->push_back({pipeline.desc.shader, uint64_t{groups_x} * groups_y * groups_z, pipeline.invocations,
                          work_serial_, work_flops_});
        work_flops_ = work_serial_ = 0;
        ++dispatches_;
        return;
    }
    work_flops_ = work_serial_ = 0;
    const bool faulty = device_.planted_fault.hits(pipeline.desc.shader);
    if (faulty && device_.planted_fault.kind == PlantedFault::Kind::Skip) return;
    if (device_.dispatch_auditor) {
        DispatchAudit audit{pipeline.desc.shader, {groups_x, groups_y, groups_z}, pipeline.invocations,
                            pipeline.desc.push_constant_bytes, pipeline.shared_bytes, {}};
        for (size_t i = 0; i < bindings.size(); ++i)
            audit.bindings.push_back({bindings[i].range.buffer, bindings[i].range.offset, bindings[i].range.size,
                                      pipeline.desc.bindings[i], bindings[i].texel_format});
        device_.dispatch_auditor(audit);
    }
    std::vector<Access> accesses;
    std::vector<VkDescriptorBufferInfo> infos(bindings.size());
    std::vector<VkBufferView> views(bindings.size(), VK_NULL_HANDLE);
    std::vector<VkWriteDescriptorSet> writes(bindings.size());
    VkDescriptorSet set = allocate_set(pipeline.set_layout);
    for (size_t i = 0; i < bindings.size(); ++i) {
        const BufferRange& r = bindings[i].range;
        const VkDescriptorType type = pipeline.desc.bindings[i];
        writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[i].dstSet = set;
        writes[i].dstBinding = static_cast<uint32_t>(i);
        writes[i].descriptorCount = 1;
        writes[i].descriptorType = type;
        if (type == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER || type == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER) {
            views[i] = make_view(r, bindings[i].texel_format);
            writes[i].pTexelBufferView = &views[i];
        } else {
            if (r.size > max_range)
                throw Error(ErrorCategory::Unsupported, "a binding of " + std::to_string(r.size) +
                                                            " bytes exceeds the device's maxStorageBufferRange (" +
                                                            std::to_string(max_range) + ")");
            infos[i] = {r.buffer, r.offset, r.size};
            writes[i].pBufferInfo = &infos[i];
        }
        accesses.push_back({r, bindings[i].written});
    }
    vk_.vkUpdateDescriptorSets(device_.handle(), static_cast<uint32_t>(writes.size()), writes.data(), 0, nullptr);
    access(accesses);
    vk_.vkCmdBindPipeline(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
    vk_.vkCmdBindDescriptorSets(commands_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1, &set, 0, nullptr);
    if (pipeline.desc.push_constant_bytes)
        vk_.vkCmdPushConstants(commands_, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                               pipeline.desc.push_constant_bytes, push_constants);
    vk_.vkCmdDispatch(commands_, groups_x, groups_y, groups_z);
    ++dispatches_;
    if (faulty) scramble_writes(bindings);
}

void CommandStream::scramble_writes(std::span<const Binding> bindings) {
    for (const Binding& binding : bindings) {
        const BufferRange& r = binding.range;
        const uint64_t half = r.size / 8 * 4;  // whole floats; the two halves never overlap
        if (binding.written && half) copy({r.buffer, r.offset, half}, {r.buffer, r.offset + r.size - half, half});
    }
}

VkBufferView CommandStream::make_view(const BufferRange& range, VkFormat format) {
    const uint64_t texel = format == VK_FORMAT_R32G32B32A32_SFLOAT || format == VK_FORMAT_R32G32B32A32_UINT ? 16
                           : format == VK_FORMAT_R16G16B16A16_UINT ? 8
                           : format == VK_FORMAT_R16_UINT          ? 2
                                                                   : 4;
    // Rounded up: a range shorter than one rgba32f texel still gets a view (never read, but bound). Pool
    // allocations are whole multiples of an alignment >= 16 bytes, so the last texel stays inside one.
    const uint64_t texels = (range.size + texel - 1) / texel;
    if (texels == 0 || texels > device_.limits().maxTexelBufferElements)
        throw Error(ErrorCategory::Unsupported, "a texel-buffer view of " + std::to_string(texels) +
                                                    " texels is outside the device's maxTexelBufferElements (" +
                                                    std::to_string(device_.limits().maxTexelBufferElements) + ")");
    return device_.streams().view(range.buffer, range.offset, texels * texel, format);
}

void CommandStream::begin_timing() {
    if (plan_ || !device_.info().timestamps) return;
    timestamps_ = device_.streams().timestamps(*resources_);
    vk_.vkCmdResetQueryPool(commands_, timestamps_, 0, 2);
    vk_.vkCmdWriteTimestamp(commands_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, timestamps_, 0);
}

void CommandStream::end_timing() {
    if (timestamps_) vk_.vkCmdWriteTimestamp(commands_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timestamps_, 1);
}

void CommandStream::submit_and_wait() {
    submit();
    wait();
}

uint64_t CommandStream::submit(std::span<const SemaphoreWait> waits) {
    Device& device = device_;
    device.throw_if_lost();
    if (!recording_ || external_ || plan_) throw Error(ErrorCategory::VulkanFailure, "internal: command stream submitted twice");
    recording_ = false;
    // Make transfer and shader writes visible to the host reads that follow the fence.
    VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vk_.vkCmdPipelineBarrier(commands_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                             VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
    VKC_CHECK(device.lost_flag(), vk_.vkEndCommandBuffer(commands_));
    std::vector<VkSemaphore> wait_semaphores;
    std::vector<uint64_t> wait_values;
    std::vector<VkPipelineStageFlags> wait_stages;
    for (const SemaphoreWait& w : waits) {
        wait_semaphores.push_back(w.semaphore);
        wait_values.push_back(w.value);
        wait_stages.push_back(w.stages);
    }
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.waitSemaphoreCount = static_cast<uint32_t>(wait_semaphores.size());
    submit.pWaitSemaphores = wait_semaphores.data();
    submit.pWaitDstStageMask = wait_stages.data();
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands_;
    VkFence fence = resources_->fence;
    uint64_t signal_value = 0;
    const VkSemaphore timeline = device.timeline();
    VkTimelineSemaphoreSubmitInfo timeline_info{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    {
        // vkQueueSubmit needs the queue externally synchronised: one submission at a time per device. The
        // timeline value is taken under the same lock, so values rise in submission order.
        std::lock_guard lock(device.queue_mutex());
        if (timeline) {
            signal_value = device.next_timeline_value();
            submit.signalSemaphoreCount = 1;
            submit.pSignalSemaphores = &timeline;
            timeline_info.waitSemaphoreValueCount = static_cast<uint32_t>(wait_values.size());
            timeline_info.pWaitSemaphoreValues = wait_values.data();
            timeline_info.signalSemaphoreValueCount = 1;
            timeline_info.pSignalSemaphoreValues = &signal_value;
            submit.pNext = &timeline_info;
        } else if (!waits.empty() && device.properties().apiVersion >= VK_API_VERSION_1_2) {
            // The application's timeline semaphores need their values even where vkconv signals none of
            // its own (binary ones ignore theirs). Before 1.2 only binary semaphores can be waited on.
            timeline_info.waitSemaphoreValueCount = static_cast<uint32_t>(wait_values.size());
            timeline_info.pWaitSemaphoreValues = wait_values.data();
            submit.pNext = &timeline_info;
        }
        VkResult result = device.fault_at(Device::FaultPoint::Submission);
        if (result == VK_SUCCESS) result = vk_.vkQueueSubmit(device.queue(), 1, &submit, fence);
        VKC_CHECK_RESULT(device.lost_flag(), result, "vkQueueSubmit");
        if (timeline) device.note_timeline_submitted(signal_value);
    }
    submitted_ = true;
    return signal_value;
}

VkFence CommandStream::fence() const {
    return resources_ ? resources_->fence : VK_NULL_HANDLE;
}

bool CommandStream::done() const {
    if (!submitted_ || completed_) return true;
    device_.throw_if_lost();
    // VK_NOT_READY while it runs; a lost device is an error here too, or a caller polling done() would
    // poll for ever.
    VkResult result = device_.fault_at(Device::FaultPoint::FenceWait);
    if (result == VK_SUCCESS) result = vk_.vkGetFenceStatus(device_.handle(), resources_->fence);
    VKC_CHECK_RESULT(device_.lost_flag(), result, "vkGetFenceStatus");
    return result == VK_SUCCESS;
}

void CommandStream::wait() {
    Device& device = device_;
    if (!submitted_ || completed_) return;
    // After a loss nothing is waited for here: the stream's release waits for its fence, best effort.
    device.throw_if_lost();
    VkFence fence = resources_->fence;
    VkResult result = device.fault_at(Device::FaultPoint::FenceWait);
    if (result == VK_SUCCESS) result = vk_.vkWaitForFences(device.handle(), 1, &fence, VK_TRUE, UINT64_MAX);
    VKC_CHECK_RESULT(device.lost_flag(), result, "vkWaitForFences");
    completed_ = true;
    if (timestamps_) {
        std::array<uint64_t, 2> ticks{};
        VKC_CHECK(device.lost_flag(),
                  vk_.vkGetQueryPoolResults(device.handle(), timestamps_, 0, 2, sizeof(ticks), ticks.data(),
                                            sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
        const uint32_t bits = device.timestamp_valid_bits();
        const uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
        const uint64_t elapsed = ((ticks[1] & mask) - (ticks[0] & mask)) & mask;
        gpu_ms_ = static_cast<double>(elapsed) * device.limits().timestampPeriod * 1e-6;
    }
}

}  // namespace vkconv::detail
