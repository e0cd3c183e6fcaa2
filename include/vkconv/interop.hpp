// Using vkconv inside a Vulkan application: its device, its buffers, its command buffers.
//
// This header needs the Vulkan headers (Debian: libvulkan-dev); vkconv.hpp does not include it. Nothing
// here makes vkconv call the application's loader symbols: every entry point comes through the
// vkGetInstanceProcAddr the application hands over.
//
// Ownership: vkconv never destroys an object it did not create. The application keeps its instance,
// device, queue and buffers alive until the Context, and every Tensor wrapping one of its buffers, is gone.
//
// Barriers when recording into the application's command buffer (record_into):
//  - Before: the application makes its earlier writes to the tensors' buffers available and visible to
//    the compute-shader stage (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT) and the transfer
//    stage (VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT), and orders its earlier reads of
//    the outputs before those stages. vkconv's first command is a barrier from compute and transfer
//    writes, so earlier compute or transfer work in the same command buffer needs nothing more.
//  - Between vkconv's passes: vkconv records the barriers itself.
//  - After: vkconv's last writes are shader writes in VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT and transfer
//    writes in VK_PIPELINE_STAGE_TRANSFER_BIT; the application's barrier before it uses an output takes
//    those as its source stages and VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT as source
//    access.
//  - The command buffer must come from a pool of the context's queue family (or one with compute) and be
//    in the recording state; vkconv changes its bound compute pipeline, descriptor sets and push
//    constants (rebind yours after it). Buffers with VK_SHARING_MODE_EXCLUSIVE owned by another queue
//    family need the application's ownership transfer first.
//  - The workspace and descriptor sets the recording holds are released by Recording::complete(), which
//    the application calls once the command buffer finished (after its fence or semaphore signalled).
#pragma once

#include <vulkan/vulkan_core.h>

#include <cstdint>
#include <mutex>

#include "vkconv/context.hpp"
#include "vkconv/export.hpp"
#include "vkconv/recording.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv {
VKCONV_API_BEGIN

// The application's Vulkan objects a Context is made from (Context(const ExternalDevice&, options)).
// Requirements, checked when the context is made (Error(Unsupported) naming what is missing,
// Error(InvalidArgument) for a null handle or an index out of range): the instance's Vulkan 1.1 functions,
// a physical device of 1.1 or later, a queue family with compute. vkconv enables nothing itself (no
// feature or extension is required); timeline semaphores are used when the application says it enabled them.
struct ExternalDevice {
    PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;  // the loader's (or volk's) entry point
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical_device = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    uint32_t queue_family = 0;  // the queue vkconv submits to: a family with VK_QUEUE_COMPUTE_BIT
    uint32_t queue_index = 0;
    // The device was created with the timelineSemaphore feature (Vulkan 1.2): submissions then also signal
    // a timeline semaphore the application can wait on (submission_sync).
    bool timeline_semaphores = false;
    // Vulkan requires a queue's submissions to be externally synchronised. If the application submits to
    // the same queue from other threads, the mutex it guards the queue with: vkconv holds it around each of
    // its submissions. Null: vkconv guards the queue with its own lock, and the application must not
    // submit to it while a vkconv call runs. Two contexts on one queue need the same mutex. vkconv takes a
    // context's lock before this mutex: call no vkconv function while holding it (submission_sync excepted).
    std::mutex* queue_mutex = nullptr;
};

// A range of the application's VkBuffer to wrap as a Tensor.
struct ExternalBuffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceSize offset = 0;  // a multiple of 4 (the tensor is float32)
    VkDeviceSize size = 0;    // bytes of the range; at least the shape's bytes
    // The usage the buffer was created with. Required: VK_BUFFER_USAGE_STORAGE_BUFFER_BIT (passes bind it),
    // VK_BUFFER_USAGE_TRANSFER_SRC_BIT and VK_BUFFER_USAGE_TRANSFER_DST_BIT (passes copy within their
    // outputs and workspace; upload and download copy to and from it).
    VkBufferUsageFlags usage = 0;
};

// A Tensor over the application's buffer range, without a copy. The pool neither owns nor frees it, and
// pool counters leave it out; a pass counts it in RunStats::operand_bytes as any operand. Views
// (Tensor::images) work as on pool tensors. vkconv reads such buffers as storage buffers (never through
// texel views, whose usage and size rules it cannot check). The buffer must outlive the tensor and its
// copies. Error(InvalidArgument) names a null buffer, an offset off 4 bytes, a range smaller than the
// shape, or a missing usage bit.
Tensor wrap_buffer(Context& context, const ExternalBuffer& buffer, const Shape& shape);

// A Recording into the application's command buffer (see the barrier rules above). Passes recorded into it
// are run when the application submits the command buffer; it calls Recording::complete() once that
// finished.
Recording record_into(Context& context, VkCommandBuffer commands);

// Makes the recording's submission wait for the application's semaphore (binary: value ignored; timeline,
// on a Vulkan 1.2 device: until it reaches `value`) before `stages`. Only for recordings vkconv submits.
// submission_sync takes no lock: it may be called while holding ExternalDevice::queue_mutex.
void wait_semaphore(Recording& recording, VkSemaphore semaphore, uint64_t value = 0,
                    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);

// What a submission signals, for the application to wait on in its own submissions (same device): the
// context's timeline semaphore and the value this submission sets it to (VK_NULL_HANDLE and 0 without
// timeline semaphores), and the fence it signals (valid until the Submission is waited on or destroyed).
struct SubmissionSync {
    VkSemaphore timeline = VK_NULL_HANDLE;
    uint64_t value = 0;
    VkFence fence = VK_NULL_HANDLE;
};
SubmissionSync submission_sync(const Submission& submission);

// The context's Vulkan objects, for an application that shares them (all VK_NULL_HANDLE-free once made).
struct ContextHandles {
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice physical_device = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    uint32_t queue_family = 0;
};
ContextHandles context_handles(const Context& context);

VKCONV_API_END
}  // namespace vkconv
