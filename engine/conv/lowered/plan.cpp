// Chunk planning and exact workspace sizes for im2col and MEC.
#include <algorithm>
#include <optional>
#include <string>

#include "conv/gemm_mapping.hpp"
#include "conv/lowered/lowered.hpp"

namespace vkconv::detail {
namespace {

constexpr int64_t kMecSolutionAMaxQ = 100;  // the paper's threshold T, as public implementations use it

uint64_t lowered_floats(const ConvProblem& p, Algorithm algorithm, int64_t images, int64_t rows) {
    if (algorithm == Algorithm::Im2col) return uint64_t(images * rows * p.Q()) * uint64_t(p.R * p.S * p.C);
    return uint64_t(images * p.Q() * input_rows_read(p, rows)) * uint64_t(p.S * p.C);
}

}  // namespace

uint64_t storage_binding_limit(const ContextImpl& context, const PassOptions& options) {
    const uint64_t range = context.device->limits().maxStorageBufferRange;
    return options.max_binding_bytes ? std::min(range, options.max_binding_bytes) : range;
}

std::optional<Refusal> wide_image_refusal(const ContextImpl& context, const ConvProblem& p, const PassOptions& options,
                                          const char* algorithm) {
    const uint64_t bytes = uint64_t(p.C * p.H * p.W) * 4, limit = storage_binding_limit(context, options);
    if (bytes + context.pool->alignment() <= limit) return std::nullopt;
    return wide_copy_refusal(std::string(algorithm) + ": backward-data in bands of rows adds a " + to_string(p.data_type) +
                       " dx up in an fp32 copy of one image (" + std::to_string(bytes) +
                       " bytes), beyond the binding limit of " + std::to_string(limit) + " bytes (" + p.str() + ")");
}

uint64_t texel_binding_limit(const ContextImpl& context, const PassOptions& options, uint32_t element_bytes) {
    return std::min(storage_binding_limit(context, options),
                    uint64_t{context.device->limits().maxTexelBufferElements} * element_bytes);
}

uint64_t smallest_lowered_workspace(ContextImpl& context, const ConvProblem& p, Algorithm algorithm) {
    // One output row of one image, MEC's Solution B (nothing parked), plus MEC's OIHW filter copy.
    const uint64_t filter = algorithm == Algorithm::Mec && p.layout == Layout::NCHW
                                ? context.pool->round(uint64_t(p.filter_elements()) * 4)
                                : 0;
    return context.pool->round(lowered_floats(p, algorithm, 1, 1) * 4) + filter;
}

namespace {

// MEC's schedule, as asked for or by the paper's rule, and its OIHW filter copy.
void choose_mec_schedule(const ConvProblem& p, const PassOptions& options, LoweredPlan& plan) {
    const int64_t P = p.P(), Q = p.Q();
    const uint64_t y_image = uint64_t(p.K * P * Q);
    const bool a_allowed = options.variant != to_string(MecSchedule::B);
    const bool paper_rule = Q <= kMecSolutionAMaxQ && y_image <= lowered_floats(p, plan.algorithm, 1, P);
    plan.schedule = options.variant == to_string(MecSchedule::A) || (a_allowed && paper_rule) ? MecSchedule::A
                                                                                               : MecSchedule::B;
    if (p.layout == Layout::NCHW) plan.filter_floats = uint64_t(p.filter_elements());
}

// Whether a chunk of `images` images and `rows` output rows fits the bindings and the workspace limit,
// under the plan's schedule as it stands when asked.
struct ChunkFit {
    ContextImpl& context;
    const ConvProblem& p;
    const PassOptions& options;
    const LoweredPlan& plan;
    uint64_t limit, align, x_image, y_image;
    uint64_t filter_bytes, fixed_workspace_bytes;
    bool wide_output;  // the chunk's images (a band's whole image) also in an fp32 copy (plan_wide_forward)

    int64_t copy_images(int64_t images, int64_t rows) const { return rows < p.P() ? 1 : images; }

    uint64_t scratch_for(int64_t images, int64_t rows) const {
        uint64_t floats = lowered_floats(p, plan.algorithm, images, rows);
        if (plan.schedule == MecSchedule::A && plan.algorithm == Algorithm::Mec)
            floats = std::max(floats, uint64_t(images * rows * p.Q() * p.K));
        return floats;
    }
    uint64_t workspace_for(int64_t images, int64_t rows) const {
        const uint64_t copy = wide_output ? context.pool->round(uint64_t(copy_images(images, rows)) * y_image * 4) : 0;
        return context.pool->round(scratch_for(images, rows) * plan.lowered_bytes) + filter_bytes +
               fixed_workspace_bytes + copy;
    }
    bool workspace_fits(int64_t images, int64_t rows) const {
        return !options.workspace_limit || workspace_for(images, rows) <= options.workspace_limit;
    }
    bool binding_fits(int64_t images, int64_t rows) const {
        const uint64_t bytes = element_bytes(p.data_type);
        const uint64_t copy = wide_output ? uint64_t(copy_images(images, rows)) * y_image * 4 + align : 0;
        return images * x_image * bytes + align <= limit && images * y_image * bytes + align <= limit &&
               scratch_for(images, rows) * plan.lowered_bytes <= limit && copy <= limit;
    }
    bool fits(int64_t images, int64_t rows) const { return binding_fits(images, rows) && workspace_fits(images, rows); }
};

ChunkFit chunk_fit(ContextImpl& context, const ConvProblem& p, const PassOptions& options, const LoweredPlan& plan,
                   uint64_t limit, uint64_t fixed_workspace_bytes, bool wide_output) {
    const uint64_t align = context.pool->alignment();
    const uint64_t x_image = uint64_t(p.C * p.H * p.W), y_image = uint64_t(p.K * p.P() * p.Q());
    const uint64_t filter_bytes = plan.filter_floats ? context.pool->round(plan.filter_floats * 4) : 0;
    return ChunkFit{context, p,      options,      plan,         limit,
                    align,   x_image, y_image, filter_bytes, fixed_workspace_bytes,
                    wide_output};
}

std::optional<Refusal> filter_refusal(const ConvProblem& p, uint64_t limit) {
    // (In the wider of its types: dw may be fp32, ConvProblem::weight_gradient_type.)
    const uint64_t bytes = uint64_t(p.filter_elements()) *
                           std::max(element_bytes(p.data_type), element_bytes(p.weight_gradient_type()));
    if (bytes <= limit) return std::nullopt;
    return unsupported("the filter (" + std::to_string(bytes) +
                       " bytes) exceeds the binding limit of " + std::to_string(limit) + " bytes");
}

// Chunks of whole images, as many to a chunk as fit.
void plan_whole_images(const ChunkFit& fit, LoweredPlan& plan) {
    const ConvProblem& p = fit.p;
    const int64_t P = p.P();
    int64_t images = 1;
    while (images < p.N && fit.fits(images + 1, P)) ++images;
    plan.images = images;
    plan.rows = P;
    plan.chunks = static_cast<uint32_t>((p.N + images - 1) / images);
}

// Why not even one output row of one image fits, if it does not.
std::optional<Refusal> smallest_chunk_refusal(const ChunkFit& fit) {
    const ConvProblem& p = fit.p;
    const std::string algorithm = to_string(fit.plan.algorithm);
    if (!fit.binding_fits(1, 1)) {
        const std::string reason = algorithm + ": one output row of one image needs bindings beyond the limit of " +
                                   std::to_string(fit.limit) + " bytes" +
                                   (fit.wide_output ? " with the fp32 copy of its image's output" : "") + " (" +
                                   p.str() + ")";
        return fit.wide_output ? wide_copy_refusal(reason) : unsupported(reason);
    }
    if (!fit.workspace_fits(1, 1))
        return unsupported(algorithm + ": its smallest chunk (one output row of one image) needs " +
                           std::to_string(fit.workspace_for(1, 1)) +
                           " bytes of workspace, above the workspace limit of " +
                           std::to_string(fit.options.workspace_limit) + " bytes (" + p.str() + ")");
    return std::nullopt;
}

// Bands of output rows of one image, as many rows to a band as fit (one row fits: smallest_chunk_refusal).
void plan_row_bands(const ChunkFit& fit, LoweredPlan& plan) {
    const ConvProblem& p = fit.p;
    const int64_t P = p.P();
    int64_t rows = 1;
    while (rows < P && fit.fits(1, rows + 1)) ++rows;
    plan.images = 1;
    plan.rows = rows;
    plan.chunks = static_cast<uint32_t>(p.N * ((P + rows - 1) / rows));
    // Solution A parks a chunk's output in (P, N, Q, K) order inside the output window; a band of an NCHW
    // output is not contiguous, so banded NCHW runs Solution B.
    if (plan.schedule == MecSchedule::A && p.layout == Layout::NCHW) plan.schedule = MecSchedule::B;
}

// A 16-bit problem's lowered scratch takes at most half the bytes of its fp32 twin's (where the twin plans):
// chunks are as large as the bindings allow, and 16-bit elements would otherwise fill the freed half with
// more images rather than halve the pool's peak. Where the scratch holds the 16-bit values (x lowered:
// forward, backward-filter) that is the twin's chunks (its GEMMs as large, and so as fast); where it holds
// fp32 sums (backward-data's dcol and dL) half the twin's images a chunk, then half its rows a band (whose
// dx adds up in an fp32 image copy, counted by the pass), down to one row. (MEC's Solution A parks its
// output in whole images: it keeps them.)
void within_half_of_fp32(ContextImpl& context, const ConvProblem& p, const PassOptions& options,
                         uint64_t fixed_workspace_bytes, const ChunkFit& fit, LoweredPlan& plan) {
    ConvProblem twin = p;
    twin.data_type = DataType::F32;
    auto fp32 = plan_lowered(context, twin, plan.algorithm, options, fixed_workspace_bytes);
    if (!fp32) return;
    // MEC runs the twin's schedule, as it runs its chunks: the twin gives way to B where Solution A does not
    // fit its limits, and where it runs in bands of NCHW rows (plan_row_bands).
    if (plan.algorithm == Algorithm::Mec) plan.schedule = fp32->schedule;
    if (fp32->images < plan.images || (fp32->images == plan.images && fp32->rows < plan.rows)) {
        plan.images = fp32->images;
        plan.rows = fp32->rows;
    }
    const uint64_t budget = fp32->scratch_floats * 4 / 2;
    while (plan.images > 1 && fit.scratch_for(plan.images, plan.rows) * plan.lowered_bytes > budget) --plan.images;
    const bool whole_images_only = plan.algorithm == Algorithm::Mec && plan.schedule == MecSchedule::A;
    if (plan.images == 1 && !whole_images_only)
        while (plan.rows > 1 && fit.scratch_for(1, plan.rows) * plan.lowered_bytes > budget) --plan.rows;
    const int64_t P = p.P();
    plan.chunks = static_cast<uint32_t>((p.N + plan.images - 1) / plan.images * ((P + plan.rows - 1) / plan.rows));
}

}  // namespace

Planned<LoweredPlan> plan_lowered(ContextImpl& context, const ConvProblem& p, Algorithm algorithm,
                                  const PassOptions& options, uint64_t fixed_workspace_bytes, uint32_t lowered_bytes,
                                  bool wide_output) {
    // Every binding must fit the storage-buffer range (the GEMM reads an operand too large for a texel view
    // through a storage buffer).
    const uint64_t limit = storage_binding_limit(context, options);
    const int64_t P = p.P(), Q = p.Q();

    LoweredPlan plan;
    plan.algorithm = algorithm;
    plan.lowered_bytes = lowered_bytes;
    if (algorithm == Algorithm::Mec) choose_mec_schedule(p, options, plan);
    const ChunkFit fit = chunk_fit(context, p, options, plan, limit, fixed_workspace_bytes, wide_output);
    // Under a workspace limit, Solution A (which also parks the output in its scratch) gives way to B.
    if (algorithm == Algorithm::Mec && plan.schedule == MecSchedule::A && options.variant.empty() &&
        !fit.fits(1, P))
        plan.schedule = MecSchedule::B;
    if (auto refusal = filter_refusal(p, limit)) return *refusal;
    if (fit.fits(1, P)) {
        plan_whole_images(fit, plan);
    } else {
        if (auto refusal = smallest_chunk_refusal(fit)) return *refusal;
        plan_row_bands(fit, plan);
    }
    if (p.data_type != DataType::F32) within_half_of_fp32(context, p, options, fixed_workspace_bytes, fit, plan);
    plan.lowered_floats = lowered_floats(p, algorithm, plan.images, plan.rows);
    plan.scratch_floats = fit.scratch_for(plan.images, plan.rows);
    if (algorithm == Algorithm::Im2col) {
        const int64_t k = filter_taps(p), m = plan.images * plan.rows * Q;
        plan.transposed = k % 4 != 0 && m % 4 == 0 && (plan.rows * Q) % 4 == 0;
    }
    plan.workspace_bytes = context.pool->round(plan.scratch_floats * plan.lowered_bytes) +
                           (plan.filter_floats ? context.pool->round(plan.filter_floats * 4) : 0);
    return plan;
}

Planned<LoweredPlan> plan_wide_forward(ContextImpl& context, const ConvProblem& p, Algorithm algorithm,
                                       const PassOptions& options, uint64_t& wide_floats) {
    const uint64_t image = uint64_t(p.K * p.P() * p.Q());
    if (algorithm == Algorithm::Mec && options.variant == to_string(MecSchedule::A))
        return wide_copy_refusal("mec: a " + std::string(to_string(p.data_type)) + " forward whose reduction of " +
                           std::to_string(filter_taps(p)) + " runs in pieces adds up in an fp32 copy of its "
                           "images' output, which Solution A, parking its result in y, cannot write (" + p.str() + ")");
    PassOptions schedule_b = options;
    if (algorithm == Algorithm::Mec) schedule_b.variant = to_string(MecSchedule::B);
    auto lowered = plan_lowered(context, p, algorithm, schedule_b, 0, element_bytes(p.data_type), true);
    if (!lowered) return lowered.refusal();
    wide_floats = uint64_t(lowered->rows < p.P() ? 1 : lowered->images) * image;
    return lowered;
}

}  // namespace vkconv::detail
