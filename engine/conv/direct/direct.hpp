// The direct algorithm: conv2d_direct.comp, one invocation per output value, no workspace (but an fp32 copy of
// a 16-bit output whose reduction runs in pieces); forward applies the whole epilogue (conv/epilogue.hpp) as it
// writes y.
#pragma once

#include <optional>

#include "conv/constants.hpp"
#include "conv/operands.hpp"
#include "conv/planned.hpp"

namespace vkconv::detail {

// A direct pass's reduction per output: [0, extent) in units that each cost `unit_iterations` loop iterations
// (forward: the group's channels of R·S taps; backward-data: the group's filters of R·S taps; backward-filter:
// the N·P·Q output positions, one each). Past kMaxLoopIterations in all it runs in pieces (dispatch_direct).
struct DirectReduction {
    uint64_t extent = 1, unit_iterations = 1;
    uint64_t piece() const;  // units a piece sums
    bool in_pieces() const { return extent > piece(); }
};
DirectReduction direct_reduction(const ConvProblem& problem, Pass pass);

// Dispatches a direct kernel over `elements` outputs in pieces of its reduction ([0, extent) in units
// that each cost `unit_iterations` loop iterations), so no invocation loops past kMaxLoopIterations;
// pieces after the first add into the output, in order. `push` is DirectSizes, or the forward's
// DirectForwardPush (its sizes and the epilogue's numbers).
// With `add_first`, the first piece adds into the output too (ConvOperands::add_into_dx).
template <typename Push>
void dispatch_direct(ContextImpl& context, CommandStream& stream, const Pipeline& pipeline,
                     std::span<const Binding> bindings, Push push, uint64_t elements, uint64_t extent,
                     uint64_t unit_iterations, bool add_first = false);

// `wide`: a 16-bit y whose reduction runs in pieces adds up in this fp32 copy of y (Slot::WideOutput), the
// epilogue applied there, and is rounded into y once at the end.
void record_direct_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const ConvOperands& operands, const Operand& wide = {});

}  // namespace vkconv::detail
