// What one algorithm runs for one pass of a problem whose tensors it can bind whole: its chunks, its
// split reductions and its workspace, in named slots. Every pass of every algorithm plans into this one
// type (conv/pass_plan.hpp adds the tiles around it), and the algorithms are found through one table
// (conv/algorithm_table.cpp): an algorithm is a folder with a plan and a record function for it.
#pragma once

#include <array>
#include <span>

#include "conv/depthwise/depthwise.hpp"
#include "conv/implicit/implicit.hpp"
#include "conv/lowered/lowered.hpp"
#include "conv/mec/mec.hpp"
#include "conv/operands.hpp"
#include "conv/planned.hpp"
#include "conv/shared/bias_grad.hpp"
#include "vkconv/find.hpp"

namespace vkconv::detail {

// A pass's workspace slots. Each holds one buffer; a slot an algorithm does not use stays empty (0
// floats, nothing allocated). A layer step's two passes run one after the other and share each slot.
enum class Slot : size_t {
    Lowered,       // the lowered matrix (im2col's col, MEC's L or dL), or depthwise's partial sums
    FilterCopy,    // MEC: the filter (or its gradient) in the tap order its GEMM needs
    Partials,      // backward-filter's split-K partial products (im2col, MEC, implicit-gemm)
    BiasPartials,  // the bias gradient's partial sums
};
constexpr size_t kSlots = 4;
using WorkspaceSlots = std::array<uint64_t, kSlots>;  // floats per slot

// The buffers of a pass's slots, as the pass's recording reads them.
struct Workspace {
    std::span<const Operand> operands;  // kSlots of them
    const Operand& operator[](Slot slot) const { return operands[static_cast<size_t>(slot)]; }
};

// The slots' bytes as the pool counts them (each rounded to its allocation granularity).
uint64_t workspace_bytes_of(const ContextImpl& context, std::span<const uint64_t> slots);

struct AlgorithmPlan {
    Pass pass = Pass::Forward;
    Algorithm algorithm = Algorithm::Direct;  // never Auto
    LoweredPlan lowered;                      // im2col, mec
    DepthwisePlan depthwise;                  // depthwise
    ImplicitPlan implicit;                    // implicit-gemm
    uint32_t im2col_splits = 1;               // im2col backward-filter's split-K
    MecFilterSplit mec_split;                 // mec backward-filter's split
    BiasPlan bias;                            // backward-filter with a bias, backward-bias: the bias gradient
    WorkspaceSlots slots{};
    uint64_t workspace_bytes = 0;  // the slots as the pool counts them
    uint32_t chunks = 1;

    uint64_t& slot(Slot s) { return slots[static_cast<size_t>(s)]; }
    // What RunStats reports: forward MEC's schedule (Auto otherwise), backward-filter's split reductions
    // (RunStats::partial_products) and the bias gradient's pieces (RunStats::bias_pieces).
    MecSchedule mec_schedule() const {
        return pass == Pass::Forward && algorithm == Algorithm::Mec ? lowered.schedule : MecSchedule::Auto;
    }
    uint32_t partial_products() const;
    uint32_t bias_pieces(const ConvProblem& problem) const;
};

// A lowering's plan (im2col, MEC) as the pass's: its chunks, and its lowered matrix and filter copy in
// their slots.
inline AlgorithmPlan lowered_pass_plan(Pass pass, const LoweredPlan& lowered) {
    AlgorithmPlan plan{.pass = pass, .algorithm = lowered.algorithm, .lowered = lowered};
    plan.chunks = lowered.chunks;
    plan.slot(Slot::Lowered) = lowered.scratch_floats;
    plan.slot(Slot::FilterCopy) = lowered.filter_floats;
    return plan;
}

// One row of the algorithm table: how an algorithm plans a pass (refused where it cannot run it) and
// records it. The table-wide steps (the bias gradient, the workspace limit) are plan_algorithm's.
struct AlgorithmEntry {
    Algorithm algorithm;
    Planned<AlgorithmPlan> (*plan)(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                   const PassOptions& options);
    void (*record)(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const AlgorithmPlan& plan,
                   const ConvOperands& operands, Workspace workspace);
};

// Plans `algorithm` (not Auto) for `pass`: the algorithm's own plan, then backward-filter's bias gradient
// where the problem has a bias, all under options.workspace_limit. Backward-bias has one algorithm, the
// bias-gradient kernel, planned under the name Direct.
Planned<AlgorithmPlan> plan_algorithm(ContextImpl& context, const ConvProblem& problem, Pass pass, Algorithm algorithm,
                                      const PassOptions& options);

// Records the plan's pass: its algorithm's dispatches, then the bias gradient where it has one and
// `operands.bias` asks for it.
void record_algorithm(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                      const AlgorithmPlan& plan, const ConvOperands& operands, Workspace workspace);

}  // namespace vkconv::detail
