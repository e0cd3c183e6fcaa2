// Recording and Submission (vkconv/recording.hpp), and the interop calls around them (vkconv/interop.hpp).
#include "vkconv/recording.hpp"

#include <algorithm>
#include <string>

#include "context/recording_state.hpp"
#include "vkconv/interop.hpp"
#include "vulkan/vk_check.hpp"

namespace vkconv {
namespace detail {

RecordingState::~RecordingState() {
    const auto lock = serialise(*context);
    release();
}

std::vector<Operand> RecordingState::take_workspace(const std::vector<uint64_t>& slots) {
    BufferPool& pool = *context->pool;
    std::vector<Operand> operands(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) {
        if (!slots[i]) continue;
        const uint64_t bytes = pool.round(slots[i] * 4);
        Held* best = nullptr;
        for (Held& held : workspace)
            if (!held.busy && held.allocation.size >= bytes && (!best || held.allocation.size < best->allocation.size))
                best = &held;
        if (!best) {
            PoolAllocation allocation;
            try {
                allocation = pool.allocate(bytes);
                workspace.push_back({allocation});
            } catch (...) {
                pool.release(allocation);  // (nothing when the allocation itself failed)
                idle_workspace();          // the slots taken so far are this failed pass's
                throw;
            }
            best = &workspace.back();
        }
        best->busy = true;
        operands[i].allocation = best->allocation;
        operands[i].allocation.size = bytes;  // the slot: the front of the held allocation
        operands[i].floats = slots[i];
    }
    return operands;
}

void RecordingState::idle_workspace() {
    for (Held& held : workspace) held.busy = false;
}

void RecordingState::keep(const Tensor* tensor) {
    if (tensor && !tensor->empty()) kept.push_back(storage_of(*tensor));
}

uint64_t RecordingState::workspace_bytes() const {
    uint64_t bytes = 0;
    for (const Held& held : workspace) bytes += held.allocation.size;
    return bytes;
}

void RecordingState::release() noexcept {
    stream.reset();  // recycled as settled where it completed, never ran, or was the application's
    for (Held& held : workspace) context->pool->release(held.allocation);
    workspace.clear();
    kept.clear();  // may free pool tensors: the context's lock is held (recursive)
}

RecordingState& recording_state(const Recording& recording) {
    const auto& state = Access::state(recording);
    if (!state)
        throw Error(ErrorCategory::InvalidArgument,
                    "the recording was already submitted (or moved from): start a new Recording");
    if (state->broken)
        throw Error(ErrorCategory::InvalidArgument,
                    "a pass failed part-way through being recorded into this recording, which holds part of it: "
                    "discard it (and reset an application's command buffer it recorded into)");
    return *state;
}

namespace {

std::shared_ptr<RecordingState> make_recording(const Context& context, VkCommandBuffer external) {
    ContextImpl& impl = impl_of(context);
    const auto lock = serialise(impl);
    impl.device->throw_if_lost();
    auto state = std::make_shared<RecordingState>();
    state->context = Access::impl(context);
    state->stream = external ? std::make_unique<CommandStream>(*impl.device, external)
                             : std::make_unique<CommandStream>(*impl.device);
    return state;
}

}  // namespace
}  // namespace detail

namespace detail {
namespace {

// An application's command buffer whose recording goes without complete(): taken as complete (the
// contract says so), with a warning, since the command buffer may in fact still be pending.
void warn_if_incomplete(const std::shared_ptr<RecordingState>& state) noexcept {
    if (state && state->stream && state->stream->external() && !state->broken)
        state->context->instance->report(MessageSeverity::Warning,
                                         "a recording into the application's command buffer was destroyed without "
                                         "complete(): vkconv takes the command buffer as finished and releases its "
                                         "workspace and descriptor sets; call complete() after it finished");
}

}  // namespace
}  // namespace detail

Recording::Recording(Context& context) : state_(detail::make_recording(context, VK_NULL_HANDLE)) {}
Recording::~Recording() {
    detail::warn_if_incomplete(state_);  // then the state's destructor gives everything back
}
Recording::Recording(Recording&&) noexcept = default;
Recording& Recording::operator=(Recording&& other) noexcept {
    if (this != &other) {
        detail::warn_if_incomplete(state_);
        state_ = std::move(other.state_);
    }
    return *this;
}

Submission Recording::submit() {
    detail::RecordingState& state = detail::recording_state(*this);
    if (state.stream->external())
        throw Error(ErrorCategory::InvalidArgument,
                    "this recording is into the application's command buffer: the application submits it");
    {
        const auto lock = detail::serialise(*state.context);
        try {
            state.timeline_value = state.stream->submit(state.waits);
        } catch (...) {
            state.broken = true;  // not submitted, and the stream cannot be submitted again
            throw;
        }
        state.submitted = true;
        // What submission_sync reports, fixed from now on: read without the context's lock, so an
        // application holding its queue mutex may ask while another thread's vkconv call waits for it.
        state.sync_timeline = state.context->device->timeline();
        state.sync_fence = state.stream->fence();
    }
    Submission submission;
    submission.state_ = std::move(state_);
    return submission;
}

void Recording::complete() {
    if (!state_) throw Error(ErrorCategory::InvalidArgument, "complete() on a completed or moved-from recording");
    if (!state_->stream->external())
        throw Error(ErrorCategory::InvalidArgument,
                    "complete() is for recordings into the application's command buffer; submit() this one");
    state_.reset();  // the state's destructor releases, under the context's lock
}

uint32_t Recording::passes() const {
    return detail::recording_state(*this).passes;
}

uint64_t Recording::workspace_bytes() const {
    const detail::RecordingState& state = detail::recording_state(*this);
    const auto lock = detail::serialise(*state.context);
    return state.workspace_bytes();
}

bool Recording::external() const {
    return detail::recording_state(*this).stream->external();
}

Submission::~Submission() {
    try {
        wait();
    } catch (...) {  // a lost device: the state's release waits no further
    }
}
Submission::Submission(Submission&&) noexcept = default;
Submission& Submission::operator=(Submission&& other) noexcept {
    if (this != &other) {
        try {
            wait();
        } catch (...) {
        }
        state_ = std::move(other.state_);
    }
    return *this;
}

void Submission::wait() {
    if (!state_) return;
    // The wait holds no lock: other threads' calls on the context go on meanwhile. Only this Submission
    // touches its stream, so its fence is not shared.
    std::shared_ptr<detail::RecordingState> state = std::move(state_);
    state->stream->wait();
    // Released by the state's destructor (under the context's lock) as the last reference goes.
}

bool Submission::done() const {
    return !state_ || state_->stream->done();
}

Recording record_into(Context& context, VkCommandBuffer commands) {
    if (!commands) throw Error(ErrorCategory::InvalidArgument, "record_into: the command buffer is null");
    return detail::Access::recording(detail::make_recording(context, commands));
}

void wait_semaphore(Recording& recording, VkSemaphore semaphore, uint64_t value, VkPipelineStageFlags stages) {
    detail::RecordingState& state = detail::recording_state(recording);
    if (!semaphore) throw Error(ErrorCategory::InvalidArgument, "wait_semaphore: the semaphore is null");
    if (state.stream->external())
        throw Error(ErrorCategory::InvalidArgument,
                    "wait_semaphore: the recording is into the application's command buffer, which the "
                    "application submits with its own waits");
    if (!stages) throw Error(ErrorCategory::InvalidArgument, "wait_semaphore: no pipeline stage to wait before");
    if (value && state.context->device->properties().apiVersion < VK_API_VERSION_1_2)
        throw Error(
            ErrorCategory::InvalidArgument,
            "wait_semaphore: a timeline value needs a Vulkan 1.2 device; this one waits on binary semaphores only");
    state.waits.push_back({semaphore, value, stages});
}

SubmissionSync submission_sync(const Submission& submission) {
    SubmissionSync sync;
    const auto& state = detail::Access::state(submission);
    if (!state) return sync;
    sync.timeline = state->sync_timeline;
    sync.value = state->timeline_value;
    sync.fence = state->sync_fence;
    return sync;
}

ContextHandles context_handles(const Context& context) {
    detail::ContextImpl& impl = detail::impl_of(context);
    ContextHandles handles;
    handles.instance = impl.instance->handle();
    handles.physical_device = impl.device->physical();
    handles.device = impl.device->handle();
    handles.queue = impl.device->queue();
    handles.queue_family = impl.device->queue_family();
    return handles;
}

}  // namespace vkconv
