// vkconv::Recording — passes recorded now and run later, many in one submission.
//
// A pass given a Recording instead of a Context as its Target (below) records its dispatches and returns at
// once: nothing runs until the recording is submitted on vkconv's queue (submit(), which returns a
// Submission to wait on) or, for a recording into the application's own command buffer (record_into,
// interop.hpp), until the application submits that command buffer itself. A training step of many passes is then one submission:
//
//     vkconv::Recording step(context);
//     vkconv::forward(step, problem, x, w, &b, y);
//     vkconv::layer_backward(step, problem, x, w, dy, dx, dw, &db);
//     vkconv::Submission done = step.submit();
//     ...                      // the host is free; other submissions queue behind this one
//     done.wait();
//
// Order: passes run in the order they were recorded, each seeing what the earlier ones wrote (vkconv puts
// the barriers between them), and submissions on one context run in submission order. Blocking calls
// (passes on the Context, upload, download) also queue behind every earlier submission.
//
// Lifetime: the recording keeps every tensor it was given alive, and holds its passes' workspace from the
// pool, until the work completed: Submission::wait, or for an application's command buffer
// Recording::complete. Until then the tensors must not be written or read by anything else. A pass reuses
// the workspace the recording already holds wherever it fits, so passes of one layer shape share one
// workspace; passes whose needs grow one after another hold the sum, since the commands recorded earlier
// still use what they were given. PassOptions::workspace, sized to the largest pass, bounds it: a pass
// given it uses that memory and holds none of the pool's.
//
// Stats: a recorded pass's RunStats have every figure a blocking call gives except time: gpu_ms is 0,
// gpu_timed false, and wall_ms is the host time spent recording. peak_bytes is the pool's peak while
// recording (the workspace the recording holds included).
//
// Threads: each call holds the context's lock, as a blocking call does; one Recording is used by one
// thread at a time. A recording runs no GPU work of its own: Algorithm::Auto in it runs a stored
// measurement or the heuristic's choice, even under AutoChoice::Measure (call find_algorithms beforehand,
// or give the context a find cache file, to record measured choices).
#pragma once

#include <cstdint>
#include <memory>

#include "vkconv/context.hpp"
#include "vkconv/export.hpp"

namespace vkconv {

namespace detail {
struct RecordingState;
struct Access;  // the engine's way in to what the API hides
}  // namespace detail

VKCONV_API_BEGIN

// Work submitted on vkconv's queue. Destroying a Submission waits for its work, so tensors and workspace
// are never released under the GPU.
class Submission {
public:
    Submission() = default;
    ~Submission();
    Submission(Submission&&) noexcept;
    Submission& operator=(Submission&&) noexcept;

    // Blocks until the work completed, then releases what it held. Error(DeviceLost) when the device was
    // lost meanwhile. Waiting again (or on an empty Submission) returns at once.
    void wait();
    // True once the work completed (never blocks). Error(DeviceLost) when the device was lost meanwhile.
    bool done() const;
    bool empty() const { return !state_; }

private:
    friend class Recording;
    friend struct detail::Access;
    std::shared_ptr<detail::RecordingState> state_;
};

class Recording {
public:
    // Records into a command buffer of vkconv's own; submit() runs it.
    explicit Recording(Context& context);
    // Destroying a recording that was never submitted discards it (nothing ran); one into the application's
    // command buffer is taken as complete (see complete()), with a warning through ContextOptions::on_message.
    ~Recording();
    Recording(Recording&&) noexcept;
    Recording& operator=(Recording&&) noexcept;

    // Ends recording and submits on vkconv's queue. The recording is then spent (a later pass on it, or a
    // second submit, is Error(InvalidArgument)). For an application's command buffer: Error(InvalidArgument),
    // the application submits it.
    Submission submit();
    // For a recording into the application's command buffer: that command buffer finished executing, or
    // will never run (it was reset or freed). Releases the tensors and workspace the recording held. The
    // command buffer must not be submitted after this.
    void complete();

    uint32_t passes() const;           // passes recorded so far (a layer step counts one)
    uint64_t workspace_bytes() const;  // pool bytes the recording holds for its passes' workspaces now
    bool external() const;             // records into the application's command buffer

private:
    friend struct detail::Access;
    explicit Recording(std::shared_ptr<detail::RecordingState> state) : state_(std::move(state)) {}
    std::shared_ptr<detail::RecordingState> state_;
};

// Where a pass runs: on a context, now (the call returns when the GPU finished), or into a recording, to run
// when it is submitted. Every pass takes one as its first argument; a Context or a Recording converts to it:
//     vkconv::forward(context, problem, x, w, &b, y);  // runs now
//     vkconv::forward(step, problem, x, w, &b, y);     // recorded into `step`
class Target {
public:
    Target(Context& context) noexcept : context_(&context) {}        // NOLINT: converts by design
    Target(Recording& recording) noexcept : recording_(&recording) {}  // NOLINT: converts by design

    Context* context() const noexcept { return context_; }        // null for a recording
    Recording* recording() const noexcept { return recording_; }  // null for a context

private:
    Context* context_ = nullptr;
    Recording* recording_ = nullptr;
};

VKCONV_API_END
}  // namespace vkconv
