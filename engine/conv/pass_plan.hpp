// The one pipeline every convolution pass runs through: plan_pass_on turns (problem, pass, algorithm,
// options) into a plan or the reason none fits, record_pass records it. A plan is an algorithm's own
// (conv/algorithm_plan.hpp), tiles of it where the tensors are too large to bind (tiled/tiled.hpp), or
// slices of the batch where they are larger than one buffer (paged/sliced.hpp).
#pragma once

#include <variant>
#include <vector>

#include "conv/algorithm_plan.hpp"
#include "conv/paged/sliced.hpp"
#include "conv/tiled/tiled.hpp"

namespace vkconv::detail {

struct PassPlan {
    Pass pass = Pass::Forward;
    std::variant<AlgorithmPlan, TiledPlan, TiledBiasPlan, SlicedPlan> how;

    bool tiled() const { return !std::holds_alternative<AlgorithmPlan>(how); }
    bool sliced() const { return std::holds_alternative<SlicedPlan>(how); }
    Algorithm algorithm() const;
    std::vector<uint64_t> slots() const;  // floats per workspace slot
    uint64_t workspace_bytes() const;
    // What the pass's RunStats report before it runs (all but the timing and the measured memory).
    RunStats planned_stats(const ConvProblem& problem, uint64_t operand_bytes) const;
};

// The pass's plan for `algorithm`; Auto is the heuristic's choice (conv/heuristic.hpp). Tiled where the
// chosen algorithm cannot bind the problem's tensors whole; sliced where `paging` (null: the tensors as
// the context allocates them, canonical_paging) has any tensor in pages.
Planned<PassPlan> plan_pass_on(ContextImpl& context, const ConvProblem& problem, Pass pass, Algorithm algorithm,
                            const PassOptions& options, const Paging* paging = nullptr);

// `plan` if it suits the paging of the operands a call passes, else the plan of its algorithm for them
// (a view or an application's buffer may be paged differently from the tensors plans assume).
PassPlan plan_for_operands(ContextImpl& context, const ConvProblem& problem, PassPlan plan,
                           const PassOptions& options, const ConvOperands& operands);

// Records the plan's pass on `operands` (by role, conv/operands.hpp) with the workspace `plan.slots()`
// describes.
void record_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const PassPlan& plan,
                 const ConvOperands& operands, std::span<const Operand> workspace);

}  // namespace vkconv::detail
