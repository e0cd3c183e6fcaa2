// Passes over tensors too large to bind: one image of the input or output, or the filter, beyond the binding
// limit (maxStorageBufferRange, or PassOptions::max_binding_bytes if lower).
//
// Such a pass runs in tiles. A tile is one image, a band of rows, and a piece of the output channels (all of
// them unless the filter is too large: then runs of whole groups, or runs of filters within a group). Its
// operands are copied by copy_box.comp into compact workspace buffers (the input band carrying the zero
// rows of the padding, so a tile is an ordinary problem with pad_h = 0), the chosen algorithm runs the tile
// as a problem of its own, and its result is copied back into place. Sums over tiles (dx over pieces of a
// group's filters, dw and db over images and bands) are added in a fixed order: deterministic.
// The tile buffers are fp32, and a tile an fp32 problem: 16-bit operands are widened as they are copied in
// and results rounded once as they are copied out; a 16-bit dw and db add up over a piece's tiles in an
// fp32 sum (TileSlot::Sums), rounded into place after its last tile; a 16-bit dx summed over pieces of one
// group's filters runs the group's pieces in turn for each band of each image, adding up in an fp32 sum of
// the band (TileSlot::Sums too) that is rounded into dx after the group's last piece.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "conv/algorithm_plan.hpp"
#include "conv/tiled/copy_run.hpp"
#include "vkconv/conv.hpp"

namespace vkconv::detail {

// Output channels [k0, k1) of a tile, the input channels [c0, c1) they read, and the groups they span
// (1 for a run of filters within one group).
struct TilePiece {
    int64_t k0 = 0, k1 = 0, c0 = 0, c1 = 0, groups = 1;
    bool first_of_channels = true;  // backward-data: the first piece that writes dx channels [c0, c1)
};

// The compact buffers a tile's problem runs on, by their role in it (conv/operands.hpp): x' (dx' for
// backward-data), w' (dw' for backward-filter), b' (db'), y' (dy' for the backward passes).
enum class TileSlot : size_t { Input, Filter, Bias, Output, Sums };
constexpr size_t kTileSlots = 5;

// The plan one shape of tile runs (tiles differ in shape only at the last piece or band).
struct TileShapePlan {
    // What sets a tile's problem apart from the others of its pass (tile_problem in tiled.cpp): its
    // channels, filters, groups and input rows; every other field is the whole problem's.
    int64_t C = 0, K = 0, groups = 0, H = 0;
    AlgorithmPlan plan;
    bool is(const ConvProblem& tile) const {
        return C == tile.C && K == tile.K && groups == tile.groups && H == tile.H;
    }
};

struct TiledPlan {
    Pass pass = Pass::Forward;
    Algorithm algorithm = Algorithm::Direct;  // what runs each tile; never Auto
    std::vector<TilePiece> pieces;
    int64_t band = 1;                   // rows a tile covers: output rows (forward, backward-filter) or dx rows (data)
    PassOptions tile_options;           // how tiles plan: the workspace limit less the tile buffers
    std::vector<TileShapePlan> shapes;  // the plan of every tile shape, made once
    // Workspace slots in floats: the tile buffers (TileSlot), then the tile pass's own slots (Slot), each
    // the largest any tile needs.
    std::vector<uint64_t> slots;
    uint64_t workspace_bytes = 0;
    uint32_t tiles = 0;
    uint32_t partial_products = 0, bias_pieces = 0;  // the most any tile's pass uses (RunStats reports them)

    const AlgorithmPlan& plan_of(const ConvProblem& tile) const;
    // The first tile's plan's variant (RunStats::variant).
    const char* variant() const { return shapes.empty() ? "" : shapes.front().plan.variant; }
};

// Whether `algorithm` (Auto: any but direct) must run this problem in tiles.
bool needs_tiling(ContextImpl& context, const ConvProblem& problem, Algorithm algorithm, const PassOptions& options);

// Plans the tiles; `algorithm` Auto picks the heuristic's algorithm for the first tile. Refused when even
// one filter, or one row of a tile, cannot be bound, or (InvalidArgument, for Auto) when the smallest tiles
// need more workspace than options.workspace_limit.
Planned<TiledPlan> plan_tiled(ContextImpl& context, const ConvProblem& problem, Pass pass, Algorithm algorithm,
                              const PassOptions& options);
// The fp32 tiles that run a 16-bit problem `algorithm` refused whole because its fp32 sums would not fit a
// binding (Refusal::fp32_tiles_run_it), each value rounded once as it is copied out; nothing for any other
// refusal, or where no tile fits.
std::optional<TiledPlan> fp32_tiles_for(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                        Algorithm algorithm, const PassOptions& options, const Refusal& refusal);

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
Planned<TiledBiasPlan> plan_tiled_bias(ContextImpl& context, const ConvProblem& problem);
void record_tiled_bias(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                       const TiledBiasPlan& plan, const Operand& grad_output, const Operand& grad_bias,
                       std::span<const Operand> workspace);

// Records a tiled pass: each tile's operands copied into the tile buffers, its plan run, its result copied
// (or added) back into place. Operands by role as the pass reads and writes them (conv/operands.hpp).
void record_tiled(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const TiledPlan& plan,
                  const ConvOperands& operands, std::span<const Operand> workspace);

}  // namespace vkconv::detail
