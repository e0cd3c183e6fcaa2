// What every convolution pass does around its dispatches: turn user tensors into operands (checking
// context, shape and role), hold its workspace, and run its recording with GPU timing and the pool's
// peak measured.
#pragma once

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "context/operands.hpp"
#include "vkconv/context.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv::detail {

// The tensor as an operand of `role` ("input", "grad_output", ...), after checking it is non-empty,
// belongs to `context` and has the `expected` shape and element type (Error(InvalidArgument) naming the role
// otherwise).
Operand tensor_operand(ContextImpl& context, const Tensor& tensor, std::string_view role, const Shape& expected,
                       DataType type = DataType::F32);

// Error(InvalidArgument) when `output` shares memory with one of `inputs` (null entries are skipped).
void check_not_aliased(const Tensor& output, std::string_view role, std::initializer_list<const Tensor*> inputs);

// Bytes the pool holds for these operands (empty ones skipped, bytes shared by several operands, as one
// tensor passed twice or a tensor and a view of it, counted once).
inline uint64_t operand_bytes(std::span<const Operand* const> operands) {
    std::vector<BufferRange> ranges;
    for (const Operand* op : operands) {
        if (!op || !*op) continue;
        // From the operand's element 0 (a view off the alignment binds from below it); each page of a paged one.
        if (op->paged())
            for (const OperandPage& page : *op->pages)
                ranges.push_back({page.allocation.buffer, page.allocation.offset + page.first * op->element_bytes,
                                  page.allocation.size - page.first * op->element_bytes});
        else
            ranges.push_back(
                {op->allocation.buffer, op->allocation.offset + op->first * op->element_bytes,
                 op->allocation.size - op->first * op->element_bytes});
    }
    std::sort(ranges.begin(), ranges.end(), [](const BufferRange& a, const BufferRange& b) {
        return a.buffer != b.buffer ? a.buffer < b.buffer : a.offset < b.offset;
    });
    uint64_t bytes = 0, covered_to = 0;
    VkBuffer buffer = VK_NULL_HANDLE;
    for (const BufferRange& r : ranges) {
        if (r.buffer != buffer) buffer = r.buffer, covered_to = 0;
        const uint64_t end = r.offset + r.size;
        if (end > covered_to) bytes += end - std::max(r.offset, covered_to), covered_to = end;
    }
    return bytes;
}
inline uint64_t operand_bytes(std::initializer_list<const Operand*> operands) {
    return operand_bytes(std::span<const Operand* const>(operands.begin(), operands.size()));
}

struct RecordingState;

// Where a pass goes: run now and waited for, or recorded into a Recording; and whose memory its workspace is.
struct PassTarget {
    RecordingState* recording = nullptr;  // null: submit and wait
    const Tensor* workspace = nullptr;    // the caller's workspace (PassOptions::workspace), or the pool's
};

// The bytes a caller's workspace tensor offers from its first byte on the pool alignment (at least 1).
// Error(InvalidArgument) for an empty workspace tensor or one of another context.
uint64_t usable_workspace_bytes(ContextImpl& context, const Tensor& workspace);

// The pass's workspace slots for the length of its recording: carved from the caller's workspace in slot
// order (each slot on the pool alignment, as workspace_bytes_of counts them), taken from a recording's
// held workspace, or allocated from the pool and handed back on every exit path.
class PassWorkspace {
public:
    PassWorkspace(ContextImpl& context, const std::vector<uint64_t>& floats, const PassTarget& target);
    ~PassWorkspace();
    PassWorkspace(const PassWorkspace&) = delete;
    PassWorkspace& operator=(const PassWorkspace&) = delete;
    std::span<const Operand> operands() const { return operands_; }

private:
    ContextImpl& context_;
    RecordingState* recording_ = nullptr;
    std::vector<Operand> operands_;
    std::vector<PoolAllocation> owned_;  // pool allocations of a blocking pass
};

// The pool's in-use and reserved peaks and its driver allocations over a scope.
class PoolPeak {
public:
    explicit PoolPeak(BufferPool& pool) : pool_(pool), allocations_(pool.driver_allocations()) {
        tracker_.in_use = pool.in_use();
        tracker_.reserved = pool.reserved();
        pool_.add_peak_tracker(&tracker_);
    }
    ~PoolPeak() { pool_.remove_peak_tracker(&tracker_); }
    PoolPeak(const PoolPeak&) = delete;
    PoolPeak& operator=(const PoolPeak&) = delete;
    void fill(RunStats& stats) const {
        stats.peak_bytes = tracker_.in_use;
        stats.peak_reserved_bytes = tracker_.reserved;
        stats.driver_allocations = static_cast<uint32_t>(pool_.driver_allocations() - allocations_);
    }

private:
    BufferPool& pool_;
    BufferPool::PeakTracker tracker_;
    uint64_t allocations_;
};

// The recording's stream (target.recording) or a new one, with the recorded dispatches counted.
CommandStream& recording_stream(const PassTarget& target);
void count_recorded_pass(const PassTarget& target);
void mark_broken(const PassTarget& target);

// Takes the pass's workspace slots (`workspace_floats`, 0 = none), records the pass with
// `record(stream, workspaces)` and fills stats' time, pool peak (workspaces included) and dispatch count.
// Run now: between GPU timestamps, submitted and waited for while the workspaces are held. Recorded: into
// the recording's stream, no time but the host's.
template <typename Record>
void run_pass(ContextImpl& impl, RunStats& stats, const std::vector<uint64_t>& workspace_floats,
              const PassTarget& target, Record&& record) {
    PoolPeak peak(*impl.pool);
    const auto start = std::chrono::steady_clock::now();
    auto elapsed_ms = [&] {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };
    if (target.recording) {
        // Whatever fails from here on may leave part of this pass (or of a layer step's first pass) in the
        // recording: the recording refuses further use.
        try {
            PassWorkspace workspaces(impl, workspace_floats, target);
            CommandStream& stream = recording_stream(target);
            const uint32_t before = stream.dispatch_count();
            record(stream, workspaces.operands());
            stats.dispatches = stream.dispatch_count() - before;
        } catch (...) {
            mark_broken(target);
            throw;
        }
        count_recorded_pass(target);
        stats.gpu_timed = false;
        stats.gpu_ms = 0;
        stats.wall_ms = elapsed_ms();
    } else {
        PassWorkspace workspaces(impl, workspace_floats, target);
        CommandStream stream(*impl.device);
        stream.begin_timing();
        record(stream, workspaces.operands());
        stream.end_timing();
        stream.submit_and_wait();
        stats.gpu_timed = stream.gpu_ms() >= 0;
        stats.dispatches = stream.dispatch_count();
        stats.wall_ms = elapsed_ms();
        stats.gpu_ms = stats.gpu_timed ? stream.gpu_ms() : stats.wall_ms;
    }
    peak.fill(stats);
}

}  // namespace vkconv::detail
