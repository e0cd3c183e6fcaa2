// The direct algorithm: conv2d_direct.comp, one invocation per output value, no workspace; forward applies
// the whole epilogue (conv/epilogue.hpp) as it writes y.
#pragma once

#include <optional>

#include "conv/constants.hpp"
#include "conv/operands.hpp"
#include "conv/planned.hpp"

namespace vkconv::detail {

// Why direct cannot run the problem, naming the tensor, when one of its tensors exceeds
// maxStorageBufferRange: direct binds whole tensors (the passes then run it in tiles, tiled/tiled.hpp).
std::optional<Refusal> direct_binding_refusal(const ContextImpl& context, const ConvProblem& problem);

// Dispatches a direct kernel over `elements` outputs in pieces of its reduction ([0, extent) in units
// that each cost `unit_iterations` loop iterations), so no invocation loops past kMaxLoopIterations;
// pieces after the first add into the output, in order. `push` is DirectSizes, or the forward's
// DirectForwardPush (its sizes and the epilogue's numbers).
template <typename Push>
void dispatch_direct(ContextImpl& context, CommandStream& stream, const Pipeline& pipeline,
                     std::span<const Binding> bindings, Push push, uint64_t elements, uint64_t extent,
                     uint64_t unit_iterations);

void record_direct_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const ConvOperands& operands);

}  // namespace vkconv::detail
