// The algorithm table, and the steps every algorithm's plan and recording share.
#include <algorithm>
#include <string>

#include "conv/algorithm_plan.hpp"
#include "conv/depthwise/depthwise_pass.hpp"
#include "conv/direct/direct_pass.hpp"
#include "conv/im2col/im2col_pass.hpp"
#include "conv/implicit/implicit_pass.hpp"
#include "conv/mec/mec_pass.hpp"

namespace vkconv::detail {
namespace {

// Every algorithm, one row each.
const AlgorithmEntry* const kAlgorithms[] = {
    &direct_algorithm,
    &im2col_algorithm,
    &mec_algorithm,
    &depthwise_algorithm,
    &implicit_gemm_algorithm,
};

const AlgorithmEntry& entry_of(Algorithm algorithm) {
    for (const AlgorithmEntry* entry : kAlgorithms)
        if (entry->algorithm == algorithm) return *entry;
    throw Error(ErrorCategory::InvalidArgument,
                std::string("no algorithm entry for '") + to_string(algorithm) + "' (Auto must be resolved first)");
}

// The bias gradient of backward-filter with a bias, or of backward-bias: partial sums where the workspace
// limit leaves room for them, else its pieces added straight into db.
Planned<BiasPlan> plan_bias(ContextImpl& context, const ConvProblem& p, const PassOptions& options,
                            AlgorithmPlan& plan) {
    auto bias = plan_bias_grad(context, p, options.max_binding_bytes);
    if (!bias) return bias;
    plan.bias = *bias;
    plan.slot(Slot::BiasPartials) = plan.bias.partial_floats;
    if (options.workspace_limit && workspace_bytes_of(context, plan.slots) > options.workspace_limit) {
        // No partial sums: the fewest pieces one invocation's loop allows, added straight into db in turn.
        plan.bias.pieces = bias_pieces_for_loop_limit(p, plan.bias.images);
        plan.bias.in_place = plan.bias.pieces > 1;
        plan.bias.partial_floats = 0;
        plan.slot(Slot::BiasPartials) = 0;
    }
    return plan.bias;
}

}  // namespace

uint64_t workspace_bytes_of(const ContextImpl& context, std::span<const uint64_t> slots) {
    uint64_t bytes = 0;
    for (uint64_t floats : slots)
        if (floats) bytes += context.pool->round(floats * 4);
    return bytes;
}

uint32_t AlgorithmPlan::partial_products() const {
    if (pass != Pass::BackwardFilter) return 0;
    switch (algorithm) {
        case Algorithm::Im2col:
            return im2col_splits > 1 ? im2col_splits : 0;
        case Algorithm::Mec:
            return static_cast<uint32_t>(mec_split.slots);
        case Algorithm::Depthwise:
            return depthwise.splits;
        case Algorithm::ImplicitGemm:
            return implicit.partials ? implicit.slices : 0;
        default:
            return 0;
    }
}

uint32_t AlgorithmPlan::bias_pieces(const ConvProblem& problem) const {
    if (pass == Pass::BackwardBias) return static_cast<uint32_t>(bias.pieces);
    if (pass != Pass::BackwardFilter || !problem.has_bias) return 0;
    return bias.in_place ? 1u : static_cast<uint32_t>(bias.pieces);  // in place: no partial sums
}

Planned<AlgorithmPlan> plan_algorithm(ContextImpl& context, const ConvProblem& p, Pass pass, Algorithm algorithm,
                                      const PassOptions& options) {
    if (pass == Pass::BackwardBias) {
        AlgorithmPlan plan;
        plan.pass = pass;
        auto bias = plan_bias(context, p, options, plan);
        if (!bias) return bias.refusal();
        plan.chunks = static_cast<uint32_t>((p.N + plan.bias.images - 1) / plan.bias.images);
        plan.workspace_bytes = workspace_bytes_of(context, plan.slots);
        return plan;
    }
    auto planned = entry_of(algorithm).plan(context, p, pass, options);
    if (!planned) return planned;
    AlgorithmPlan& plan = *planned;
    if (pass == Pass::BackwardFilter && p.has_bias)
        if (auto bias = plan_bias(context, p, options, plan); !bias) return bias.refusal();
    plan.workspace_bytes = workspace_bytes_of(context, plan.slots);
    if (options.workspace_limit && plan.workspace_bytes > options.workspace_limit)
        return unsupported(std::string(to_string(algorithm)) + ": needs " + std::to_string(plan.workspace_bytes) +
                           " bytes of workspace, above the workspace limit of " +
                           std::to_string(options.workspace_limit) + " bytes (" + p.str() + ")");
    return planned;
}

void record_algorithm(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                      const ConvOperands& operands, Workspace workspace) {
    if (plan.pass != Pass::BackwardBias) entry_of(plan.algorithm).record(context, stream, p, plan, operands, workspace);
    const bool bias_gradient = plan.pass == Pass::BackwardBias || plan.pass == Pass::BackwardFilter;
    if (bias_gradient && operands.bias)
        record_bias_grad(context, stream, p, plan.bias, operands.output, operands.bias, workspace[Slot::BiasPartials]);
}

}  // namespace vkconv::detail
