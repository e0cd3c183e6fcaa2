// Passes over tensors too large to bind: one image of the input or output, or the filter, beyond the binding
// limit (maxStorageBufferRange, 4·maxTexelBufferElements, ForwardOptions::max_binding_bytes).
//
// Such a pass runs in tiles. A tile is one image, a band of rows, and a piece of the output channels (all of
// them unless the filter is too large: then runs of whole groups, or runs of filters within a group). Its
// operands are copied by copy_box.comp into compact workspace buffers (the input band carrying the zero
// rows of the padding, so a tile is an ordinary problem with pad_h = 0), the chosen algorithm runs the tile
// as a problem of its own, and its result is copied back into place. Sums over tiles (dx over pieces of a
// group's filters, dw and db over images and bands) are added in a fixed order: deterministic.
#pragma once

#include <vector>

#include "conv/backward_plan.hpp"
#include "conv/forward_plan.hpp"
#include "vkconv/find.hpp"

namespace vkconv::detail {

// Output channels [k0, k1) of a tile, the input channels [c0, c1) they read, and the groups they span
// (1 for a run of filters within one group).
struct TilePiece {
    int64_t k0 = 0, k1 = 0, c0 = 0, c1 = 0, groups = 1;
    bool first_of_channels = true;  // backward-data: the first piece that writes dx channels [c0, c1)
};

struct TiledPlan {
    Pass pass = Pass::Forward;
    Algorithm algorithm = Algorithm::Direct;       // what runs each tile; never Auto
    MecSchedule mec_schedule = MecSchedule::Auto;  // forward MEC: the schedule of the largest tile
    std::vector<TilePiece> pieces;
    int64_t band = 1;             // rows a tile covers: output rows (forward, backward-filter) or dx rows (data)
    ForwardOptions tile_options;  // how tiles plan: the workspace limit less the tile buffers
    // Workspace slots in floats: the input-side tile (x' or dy'), the filter tile (w', or dw' for
    // backward-filter), the bias tile (b' or db'), the output-side tile (y' or dx'), then the tile pass's
    // own slots (forward: 2, backward: 4), each the largest any tile needs.
    std::vector<uint64_t> slots;
    uint64_t workspace_bytes = 0;
    uint32_t tiles = 0;
    uint32_t partial_products = 0, bias_pieces = 0;  // the most any tile's pass uses (RunStats reports them)
};
constexpr size_t kTileBufferSlots = 4;

// Whether `algorithm` (Auto: any but direct) must run this problem in tiles.
bool needs_tiling(ContextImpl& context, const ConvProblem& problem, Algorithm algorithm, const ForwardOptions& options);

// Plans the tiles; `algorithm` Auto picks the heuristic's algorithm for the largest tile. Unsupported when
// even one filter, or one row of a tile, cannot be bound.
TiledPlan plan_tiled(ContextImpl& context, const ConvProblem& problem, Pass pass, Algorithm algorithm,
                     const ForwardOptions& options);

// backward_bias alone where one image of dy is too large to bind: tiles of a band of rows and a run of
// channels, each summed by the bias-gradient kernel and added into db in a fixed order.
struct TiledBiasPlan {
    int64_t channels = 1, band = 1;  // per tile
    std::vector<uint64_t> slots;     // floats: dy' tile, db' tile, the kernel's partial sums
    uint64_t workspace_bytes = 0;
    uint32_t tiles = 0;
    uint32_t bias_pieces = 1;  // the most pieces any tile's sum takes (RunStats reports it)
};
bool bias_needs_tiling(ContextImpl& context, const ConvProblem& problem);
TiledBiasPlan plan_tiled_bias(ContextImpl& context, const ConvProblem& problem);
void record_tiled_bias(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                       const TiledBiasPlan& plan, const Operand& grad_output, const Operand& grad_bias,
                       std::span<const Operand> workspace);

// `choose()` (a heuristic), or, where it finds nothing because direct cannot bind the tensors whole,
// direct in tiles when those fit; otherwise choose()'s error.
template <typename Choose>
Algorithm or_tiled_direct(ContextImpl& context, const ConvProblem& problem, Pass pass, const ForwardOptions& options,
                          Choose&& choose) {
    try {
        return choose();
    } catch (const Error& e) {
        if (e.category() != ErrorCategory::Unsupported && e.category() != ErrorCategory::InvalidArgument) throw;
        if (!needs_tiling(context, problem, Algorithm::Direct, options)) throw;
        try {
            return plan_tiled(context, problem, pass, Algorithm::Direct, options).algorithm;
        } catch (const Error&) {
            throw e;
        }
    }
}

void record_tiled_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                          const TiledPlan& plan, const ForwardOperands& operands, std::span<const Operand> workspace);
void record_tiled_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                                const TiledPlan& plan, const Operand& grad_output, const Operand& filter,
                                const Operand& grad_input, std::span<const Operand> workspace);
// `grad_bias` may be empty.
void record_tiled_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                                  const TiledPlan& plan, const Operand& input, const Operand& grad_output,
                                  const Operand& grad_filter, const Operand& grad_bias,
                                  std::span<const Operand> workspace);

}  // namespace vkconv::detail
