// What a Recording (vkconv/recording.hpp) holds while its passes are recorded and until its work
// completed: the command stream (vkconv's command buffer or the application's), the tensors it was given,
// and its passes' workspace, kept from the pool and reused by each later pass of the recording.
#pragma once

#include <memory>
#include <vector>

#include "context/operands.hpp"
#include "context/tensor_storage.hpp"
#include "vulkan/command_stream.hpp"

namespace vkconv::detail {

struct RecordingState {
    std::shared_ptr<ContextImpl> context;
    std::unique_ptr<CommandStream> stream;
    bool submitted = false;
    bool broken = false;  // a pass failed part-way through its recording: the stream holds part of it
    uint32_t passes = 0;
    uint64_t timeline_value = 0;                 // what the submission signals on the device's timeline (0: none)
    VkSemaphore sync_timeline = VK_NULL_HANDLE;  // submission_sync's answers, set once submitted
    VkFence sync_fence = VK_NULL_HANDLE;
    std::vector<SemaphoreWait> waits;                  // the application's semaphores the submission waits for
    std::vector<std::shared_ptr<TensorStorage>> kept;  // every tensor a pass was given

    // Workspace held for the recording's passes. A pass takes idle ones (the smallest that fits each slot)
    // and allocates only what none fits; after its recording they are idle again for the next pass (the
    // stream's barriers order the reuse).
    struct Held {
        PoolAllocation allocation;
        bool busy = false;
    };
    std::vector<Held> workspace;

    ~RecordingState();
    // A pass's workspace slots (floats each, 0 = none) from the held allocations and the pool.
    std::vector<Operand> take_workspace(const std::vector<uint64_t>& slots);
    void idle_workspace();
    void keep(const Tensor* tensor);
    uint64_t workspace_bytes() const;
    // Gives back the stream, workspace and tensors (the work completed, or never ran). The context's lock
    // must be held.
    void release() noexcept;
};

// The state of a recording that can take another pass: Error(InvalidArgument) for a moved-from or
// already submitted one.
RecordingState& recording_state(const Recording& recording);

}  // namespace vkconv::detail
