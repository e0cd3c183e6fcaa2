// The bias gradient db[k] = the sum of dy over images and output positions (bias_grad.comp): its plan and
// recording, shared by backward_bias, backward-filter with a bias and the tiles.
#pragma once

#include "context/context_impl.hpp"
#include "context/operands.hpp"
#include "conv/planned.hpp"
#include "vkconv/problem.hpp"

namespace vkconv::detail {

// The bias gradient's plan: chunks of whole images whose dy fits one binding, each reduced in `pieces`
// pieces of positions per channel (partial sums, then splitk_reduce in order: deterministic).
struct BiasPlan {
    int64_t images = 1;  // per chunk
    int64_t pieces = 1;
    uint64_t partial_floats = 0;      // the workspace: accumulator_floats, then pieces * K partial sums
    uint64_t accumulator_floats = 0;  // a 16-bit db over several chunks: their fp32 sum (K, padded)
    // Under a workspace limit with no room for partial sums: the pieces (as many as one invocation's loop
    // limit needs, shader_limits.hpp) add straight into db one after another.
    bool in_place = false;
};
// The fewest pieces a chunk of `images` images must be summed in, so that no invocation loops over more
// positions than shader_limits.hpp allows.
int64_t bias_pieces_for_loop_limit(const ConvProblem& problem, int64_t images);
// Refused when one image of dy exceeds the binding limit (maxStorageBufferRange, or `max_binding_bytes`).
Planned<BiasPlan> plan_bias_grad(ContextImpl& context, const ConvProblem& problem, uint64_t max_binding_bytes);

// db by `plan`, through `partials` (plan.partial_floats).
void record_bias_grad(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const BiasPlan& plan,
                      const Operand& grad_output, const Operand& grad_bias, const Operand& partials);

}  // namespace vkconv::detail
