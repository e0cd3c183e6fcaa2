// Passes over paged tensors (memory/paging.hpp): tensors larger than the device's largest buffer, stored
// in several buffers.
//
// Such a pass runs its batch in slices cut where any of its batch tensors (x or dx, y or dy, the residual)
// starts a new page, so that in each slice every tensor lies in one buffer and the slice is an ordinary
// problem of fewer images, planned and recorded as any other (its own chunks, tiles and algorithm). An
// image that a page boundary cuts (pages of rows: one image larger than a buffer) is a slice of its own
// and runs tiled (tiled/tiled.hpp), whose copies split at page boundaries; so does every slice when the
// filter is paged. Backward-filter and backward-bias sum over images: the first slice writes dw (db),
// each later one writes its own into a workspace accumulator that is then added in, in slice order.
#pragma once

#include <memory>
#include <vector>

#include "conv/operands.hpp"
#include "conv/planned.hpp"
#include "vkconv/conv.hpp"

namespace vkconv::detail {

struct PassPlan;

// Where a pass's tensors break into pages: the first element of each page after the first, for the batch
// tensors by role (input: x or dx; output: y or dy; the forward residual), and whether the filter or the
// bias is paged.
struct Paging {
    std::vector<uint64_t> input, output, residual;
    bool filter = false, bias = false;
    bool any() const { return !input.empty() || !output.empty() || !residual.empty() || filter || bias; }
};

// The paging of the tensors the context allocates for this pass's problem (what plans and workspace
// queries assume), and that of the operands a call passes (views and application buffers may differ).
Paging canonical_paging(const ContextImpl& context, const ConvProblem& problem, Pass pass);
Paging paging_of(const ConvOperands& operands);

// Images [n0, n1) of the batch, run by shape `shape` of the sliced plan.
struct Slice {
    int64_t n0 = 0, n1 = 0;
    size_t shape = 0;
};
struct SliceShape {
    int64_t images = 0;
    bool tiled = false;  // forced into tiles: its tensors span pages
    std::shared_ptr<const PassPlan> plan;
};

struct SlicedPlan {
    Pass pass = Pass::Forward;
    Algorithm algorithm = Algorithm::Direct;  // the same for every slice; never Auto
    std::vector<Slice> slices;
    std::vector<SliceShape> shapes;
    // Workspace: the accumulators first (backward-filter and backward-bias with more than one slice: a
    // slice's dw' and db', then with wide_sums the fp32 sums of dw and db), then each slot the largest any
    // slice's plan needs at that position.
    size_t accumulators = 0;
    std::vector<uint64_t> slots;
    uint64_t workspace_bytes = 0;
    // A 16-bit dw and db summed over slices: every slice writes fp32 ones (its problem has
    // fp32_weight_gradients), summed in fp32 and rounded into dw and db once, at the end.
    bool wide_sums = false;

    // The problem a slice of `images` images runs.
    ConvProblem slice_problem(const ConvProblem& problem, int64_t images) const;
};

// The slices `paging` asks for, with whether each runs tiled (shape unset).
std::vector<std::pair<Slice, bool>> slices_for(const ConvProblem& problem, const Paging& paging);

// The sliced plan of a pass whose tensors are paged as `paging` (any()). Auto picks the heuristic's
// algorithm for the whole problem.
Planned<SlicedPlan> plan_sliced(ContextImpl& context, const ConvProblem& problem, Pass pass, Algorithm algorithm,
                                const PassOptions& options, const Paging& paging);

// True when `plan` (sliced or not) suits the operands' paging; otherwise the call plans again for it.
bool plan_fits_paging(const ConvProblem& problem, const PassPlan& plan, const Paging& paging);

void record_sliced(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const SlicedPlan& plan,
                   const ConvOperands& operands, std::span<const Operand> workspace);

}  // namespace vkconv::detail
