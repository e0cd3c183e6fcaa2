// The chunk plan of the lowered algorithms, im2col and MEC (im2col/, mec/), and its exact workspace.
//
// Both lower a chunk of the input into a workspace matrix and run the tiled GEMM against the filter as
// the user gave it (im2col lowers in the filter's own tap order; MEC needs (r, s, c) order and so copies
// OIHW filters into OHWI, a copy counted in the workspace). A chunk is a run of whole images, or, when one
// image's lowered matrix is too large to bind, a band of output rows of one image: every binding stays
// within maxStorageBufferRange (or PassOptions::max_binding_bytes). maxTexelBufferElements limits no
// chunk: it only decides how the GEMM reads an operand (through a texel view where one fits).
#pragma once

#include <array>
#include <functional>
#include <vector>

#include "conv/algorithm_plan.hpp"
#include "conv/operands.hpp"
#include "conv/planned.hpp"
#include "vkconv/conv.hpp"

namespace vkconv::detail {

// MEC's two schedules, the paper's Solutions A and B (PassOptions::variant "A" and "B").
enum class MecSchedule { A, B };
inline const char* to_string(MecSchedule schedule) noexcept { return schedule == MecSchedule::A ? "A" : "B"; }

struct LoweredPlan {
    Algorithm algorithm = Algorithm::Im2col;
    MecSchedule schedule = MecSchedule::B;  // MEC only: A or B
    bool transposed = false;                // im2col only: col stored [g][k][m] (when K % 4 != 0 but M % 4 == 0)
    int64_t images = 1;                     // images per chunk
    int64_t rows = 1;                       // output rows per chunk (< P only when images == 1)
    uint32_t lowered_bytes = 4;             // per element of the lowered matrix (2: a 16-bit problem's lowered x)
    uint64_t lowered_floats = 0;            // the lowered matrix of a full chunk, in its elements
    uint64_t scratch_floats = 0;            // its allocation, in those elements (Solution A also parks the chunk's output there)
    uint64_t filter_floats = 0;             // MEC with OIHW filters: the OHWI copy
    uint64_t workspace_bytes = 0;           // both allocations as the pool counts them
    uint32_t chunks = 1;
};

// One chunk of a plan: images [n0, n0 + images), output rows [p0, p0 + rows), and windows over the
// chunk's images of an input-shaped and an output-shaped operand.
struct Chunk {
    int64_t n0, images, p0, rows;
    Window input, output;
    bool first;  // the plan's first chunk (passes that add up over chunks start from it)
};

// Calls visit(chunk) for every chunk of `plan`, in order.
template <typename Visit>
void for_each_chunk(const ConvProblem& p, const LoweredPlan& plan, uint64_t alignment, const Operand& input_like,
                    const Operand& output_like, Visit&& visit) {
    const int64_t P = p.P();
    const uint64_t x_image = uint64_t(p.C * p.H * p.W), y_image = uint64_t(p.K * P * p.Q());
    bool first = true;
    for (int64_t n0 = 0; n0 < p.N; n0 += plan.images) {
        const int64_t images = std::min(plan.images, p.N - n0);
        for (int64_t p0 = 0; p0 < P; p0 += plan.rows) {
            visit(Chunk{n0, images, p0, std::min(plan.rows, P - p0),
                        window(input_like, n0 * x_image, images * x_image, alignment),
                        window(output_like, n0 * y_image, images * y_image, alignment), first});
            first = false;
        }
    }
}

// Bytes one storage-buffer binding may span: maxStorageBufferRange, or options.max_binding_bytes if lower.
uint64_t storage_binding_limit(const ContextImpl& context, const PassOptions& options);

// Why a 16-bit backward-data in bands of rows cannot run, if it cannot: its dx adds up in an fp32 copy of
// one image, bound whole by col2im and mec_gather, which must fit a binding.
std::optional<Refusal> wide_image_refusal(const ContextImpl& context, const ConvProblem& problem,
                                          const PassOptions& options, const char* algorithm);
// A 16-bit forward whose GEMM's reduction runs in pieces (each adding into its C; im2col and MEC) sums into an
// fp32 copy of each chunk's images instead (Slot::WideOutput, `wide_floats`: one chunk's, or a band's whole
// image's), rounded into y once. Its chunks are plan_lowered's with `wide_output`: the copy within a binding
// and, beside the lowering, within the workspace limit; MEC in Solution B (A parks its result in y; asked
// for, refused). Refused where one output row's lowering beside one image's copy cannot fit.
Planned<LoweredPlan> plan_wide_forward(ContextImpl& context, const ConvProblem& problem, Algorithm algorithm,
                                       const PassOptions& options, uint64_t& wide_floats);
// One chunk of such a forward, `record_gemms(copy)` writing its images into the copy (a Window over `wide`):
// the images' residual widened into the copy before their first band, the copy rounded into y after their last.
void record_wide_chunk(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const Chunk& chunk,
                       const ConvOperands& operands, const Operand& wide,
                       const std::function<void(const Window& copy)>& record_gemms);
// The same, also readable through an r32f texel view (4 * maxTexelBufferElements): what a kernel reading
// through texel views may bind (the depthwise kernels choose that path only where their chunks fit it).
// (Views of 16-bit elements: element_bytes 2.)
uint64_t texel_binding_limit(const ContextImpl& context, const PassOptions& options, uint32_t element_bytes = 4);

// The chunks, as large as the binding limit allows. Under options.workspace_limit they shrink until the
// plan's workspace plus `fixed_workspace_bytes` (what the pass needs besides the lowered matrix and MEC's
// OIHW filter copy) fits. Refused when not even one output row of one image fits.
// `lowered_bytes`: the bytes of the lowered matrix's elements (4, or 2 where it holds a 16-bit x).
// `wide_output`: each chunk's output images (a band's whole image) also take an fp32 copy (plan_wide_forward),
// which must fit a binding and, beside the rest, the workspace limit.
Planned<LoweredPlan> plan_lowered(ContextImpl& context, const ConvProblem& problem, Algorithm algorithm,
                                  const PassOptions& options, uint64_t fixed_workspace_bytes = 0,
                                  uint32_t lowered_bytes = 4, bool wide_output = false);
// The workspace of the smallest chunk (one output row of one image) of an im2col or MEC pass.
uint64_t smallest_lowered_workspace(ContextImpl& context, const ConvProblem& problem, Algorithm algorithm);

// A lowering's plan (im2col, MEC) as the pass's: its chunks, and its lowered matrix and filter copy in
// their slots (the algorithm adds its own plan).
inline AlgorithmPlan lowered_pass_plan(Pass pass, const LoweredPlan& lowered) {
    AlgorithmPlan plan{.pass = pass, .algorithm = lowered.algorithm};
    plan.chunks = lowered.chunks;
    plan.slot(Slot::Lowered) = slot_floats(lowered.scratch_floats, lowered.lowered_bytes);
    plan.slot(Slot::FilterCopy) = lowered.filter_floats;
    return plan;
}

}  // namespace vkconv::detail
