// What one algorithm runs for one pass of a problem whose tensors it can bind whole: its chunks, its
// split reductions and its workspace, in named slots, and the algorithm's own plan. Every pass of every
// algorithm plans into this one type (conv/pass_plan.hpp adds the tiles around it), and the algorithms are
// found through one table (conv/algorithm_table.cpp, its rows in vkconv/algorithm.hpp): an algorithm
// is a folder defining an AlgorithmEntry, one row and its shaders.
#pragma once

#include <any>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "conv/operands.hpp"
#include "conv/planned.hpp"
#include "conv/shared/bias_grad.hpp"
#include "vkconv/conv.hpp"

namespace vkconv::detail {

// A pass's workspace slots. Each holds one buffer; a slot an algorithm does not use stays empty (0
// floats, nothing allocated). A layer step's two passes run one after the other and share each slot.
enum class Slot : size_t {
    Lowered,       // the lowered matrix (im2col's col, MEC's L or dL), or depthwise's partial sums
    FilterCopy,    // MEC: the filter (or its gradient) in the tap order its GEMM needs
    Partials,      // backward-filter's split-K partial products (im2col, MEC, implicit-gemm)
    BiasPartials,  // the bias gradient's partial sums
    WideOutput,    // a 16-bit output summed over chunks or pieces, in fp32 (rounded into the output once, at the end)
};
constexpr size_t kSlots = 5;
using WorkspaceSlots = std::array<uint64_t, kSlots>;  // floats per slot
// The floats of a slot that holds `elements` values of `element_bytes` each (16-bit ones two to a float).
inline uint64_t slot_floats(uint64_t elements, uint32_t element_bytes) {
    return (elements * element_bytes + 3) / 4;
}

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
    // The algorithm's own plan, of a type its folder defines (std::any keeps this type free of every
    // algorithm's): read back with own_as<T>().
    std::any own;
    BiasPlan bias;  // backward-filter with a bias, backward-bias: the bias gradient
    WorkspaceSlots slots{};
    uint64_t workspace_bytes = 0;  // the slots as the pool counts them
    uint32_t chunks = 1;
    // What RunStats reports of the algorithm's plan: the form that runs (RunStats::variant: MEC's schedule,
    // Winograd's tile; "" for one-form algorithms) and backward-filter's partial products
    // (RunStats::partial_products; 0 for the other passes).
    const char* variant = "";
    uint32_t partial_products = 0;

    uint64_t& slot(Slot s) { return slots[static_cast<size_t>(s)]; }
    // `workspace`'s operand for `s` where this plan uses the slot, else none: a layer step's passes share one
    // workspace, each slot sized for whichever pass needs it more, so a slot the other pass fills is not this
    // one's (a 16-bit dx image's fp32 copy is no fp32 dw).
    Operand own_slot(const Workspace& workspace, Slot s) const {
        return slots[static_cast<size_t>(s)] ? workspace[s] : Operand{};
    }
    template <typename T>
    const T& own_as() const {
        return std::any_cast<const T&>(own);
    }
    template <typename T>
    T& own_as() {
        return std::any_cast<T&>(own);
    }
    // The bias gradient's pieces (RunStats::bias_pieces).
    uint32_t bias_pieces(const ConvProblem& problem) const;
};

// Which passes an algorithm runs, as a set of bits.
constexpr uint32_t pass_bit(Pass pass) { return 1u << static_cast<uint32_t>(pass); }
constexpr uint32_t kConvPasses = pass_bit(Pass::Forward) | pass_bit(Pass::BackwardData) | pass_bit(Pass::BackwardFilter);

// An algorithm's entry in the table (its row in vkconv/algorithm.hpp names it): the passes it runs,
// the problems it applies to, how it plans a pass (refused where the device or a limit does not allow
// it) and records it. The table-wide steps (the bias gradient, the workspace limit) are plan_algorithm's.
struct AlgorithmEntry {
    uint32_t passes = kConvPasses;
    // The shapes it runs (null: every problem), and what it needs of them in words (for its refusal);
    // algorithm_applies and every candidate list ask this.
    bool (*applies)(const ConvProblem& problem) = nullptr;
    const char* requirement = "";
    Planned<AlgorithmPlan> (*plan)(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                   const PassOptions& options) = nullptr;
    void (*record)(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const AlgorithmPlan& plan,
                   const ConvOperands& operands, Workspace workspace) = nullptr;
    // Where the heuristic picks it first, before its rule for the lowerings (conv/heuristic.cpp), when it
    // plans there (null: never). Depthwise: every problem it applies to.
    bool (*preferred)(const ContextImpl& context, const ConvProblem& problem, Pass pass) = nullptr;
    // Its forms (RunStats::variant, PassOptions::variant; null past the last), in the passes of
    // variant_passes; its plan sees PassOptions::variant empty or one of them.
    std::array<const char*, 3> variants{};
    uint32_t variant_passes = 0;
    // The passes it runs on 16-bit tensors (ConvProblem::data_type F16 or BF16); the others refuse them.
    uint32_t passes_16bit = 0;
};

// Error(InvalidArgument) unless options.variant is empty or a form of `algorithm` in one of its passes (with
// Auto: of some algorithm), naming the forms there are. A pass where it is not the algorithm's form runs
// without it (plan_algorithm), so one PassOptions serves a training step's passes.
void check_variant(Algorithm algorithm, const PassOptions& options);

// The table's entry of `algorithm` (not Auto).
const AlgorithmEntry& algorithm_entry(Algorithm algorithm);

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
