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
#include "vkconv/conv.hpp"

namespace vkconv::detail {

// The tensor as an operand of `role` ("input", "grad_output", ...), after checking it is non-empty,
// belongs to `context` and has the `expected` shape (Error(InvalidArgument) naming the role otherwise).
Operand tensor_operand(ContextImpl& context, const Tensor& tensor, std::string_view role, const Shape& expected);

// Error(InvalidArgument) when `output` shares memory with one of `inputs` (null entries are skipped).
void check_not_aliased(const Tensor& output, std::string_view role, std::initializer_list<const Tensor*> inputs);

// Bytes the pool holds for these operands (empty ones skipped, bytes shared by several operands, as one
// tensor passed twice or a tensor and a view of it, counted once).
inline uint64_t operand_bytes(std::span<const Operand* const> operands) {
    std::vector<BufferRange> ranges;
    for (const Operand* op : operands)
        if (op && *op)  // from the operand's element 0 (a view off the alignment binds from below it)
            ranges.push_back(
                {op->allocation.buffer, op->allocation.offset + op->first * 4, op->allocation.size - op->first * 4});
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

// Pool memory for a pass's workspace, handed back on every exit path.
struct Scratch {
    BufferPool& pool;
    Operand operand;
    Scratch(BufferPool& p, uint64_t floats) : pool(p) {
        if (floats) operand = {pool.allocate(floats * 4), floats};
    }
    ~Scratch() { pool.release(operand.allocation); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
};

// Allocates the pass's workspaces (`workspace_floats`, 0 = none), records the pass with
// `record(stream, workspaces)` between GPU timestamps, submits and waits while the workspaces are held,
// and fills stats' timing, pool peak (workspaces included) and dispatch count.
template <typename Record>
void run_pass(Context& context, ContextImpl& impl, RunStats& stats, const std::vector<uint64_t>& workspace_floats,
              Record&& record) {
    PeakScope peak(context);
    const auto start = std::chrono::steady_clock::now();
    {
        std::vector<std::unique_ptr<Scratch>> scratch;
        std::vector<Operand> workspaces;
        for (uint64_t floats : workspace_floats) {
            scratch.push_back(std::make_unique<Scratch>(*impl.pool, floats));
            workspaces.push_back(scratch.back()->operand);
        }
        CommandStream stream(*impl.device);
        stream.begin_timing();
        record(stream, std::span<const Operand>(workspaces));
        stream.end_timing();
        stream.submit_and_wait();
        stats.gpu_timed = stream.gpu_ms() >= 0;
        stats.dispatches = stream.dispatch_count();
        stats.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        stats.gpu_ms = stats.gpu_timed ? stream.gpu_ms() : stats.wall_ms;
    }
    stats.peak_bytes = peak.peak();
    stats.peak_reserved_bytes = peak.peak_reserved();
    stats.driver_allocations = static_cast<uint32_t>(peak.driver_allocations());
}

}  // namespace vkconv::detail
