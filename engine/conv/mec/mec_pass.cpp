// MEC: forward in Solution A or B, the backward passes on Solution B's chunks with a reordered filter
// copy, backward-filter with its split reduction.
// Its entry in the algorithm table (conv/algorithm_plan.hpp).
#include <algorithm>
#include <string>

#include "conv/algorithm_plan.hpp"
#include "conv/gemm_mapping.hpp"
#include "conv/lowered/lowered.hpp"
#include "conv/mec/mec.hpp"
#include "vulkan/shader_limits.hpp"

namespace vkconv::detail {
namespace {

// MEC's own plan: its chunks and backward-filter's split reduction.
struct MecPlan {
    LoweredPlan lowered;
    MecFilterSplit split;
};

Planned<AlgorithmPlan> plan_mec_forward(ContextImpl& context, const ConvProblem& p, const PassOptions& options) {
    // A 16-bit y whose GEMM's reduction runs in pieces adds up in an fp32 copy (Slot::WideOutput), in Solution B.
    const bool wide = p.data_type != DataType::F32 && filter_taps(p) > kMaxLoopIterations;
    uint64_t wide_floats = 0;
    auto lowered = wide ? plan_wide_forward(context, p, Algorithm::Mec, options, wide_floats)
                        : plan_lowered(context, p, Algorithm::Mec, options, 0, element_bytes(p.data_type));
    if (!lowered) return lowered.refusal();
    AlgorithmPlan plan = lowered_pass_plan(Pass::Forward, *lowered);
    if (wide) plan.slot(Slot::WideOutput) = wide_floats;
    // The OIHW filter's OHWI copy holds the filter's own values, in its type.
    if (lowered->filter_floats)
        plan.slot(Slot::FilterCopy) = slot_floats(uint64_t(p.filter_elements()), element_bytes(p.data_type));
    plan.own = MecPlan{*lowered};
    plan.variant = to_string(lowered->schedule);
    return plan;
}

// Backward-filter's partial products, and (16-bit tensors, one group) its filters in two chunks where dw adds up
// in an fp32 copy: NCHW's OHWI copy (fp32 in both types, and with fp32 weight gradients), NHWC's copy of a
// 16-bit dw. The 16-bit pass builds it for a chunk of the filters at a time (lowering x again for each), so its
// pool peak halves with the tensors.
void plan_mec_filter_split(ContextImpl& context, const ConvProblem& p, const PassOptions& options,
                           AlgorithmPlan& plan, MecPlan& own) {
    own.split = mec_backward_filter_split(context, p, own.lowered, storage_binding_limit(context, options));
    const bool nchw = p.layout == Layout::NCHW;
    const bool halves = p.data_type != DataType::F32 && p.groups == 1 && p.K >= 2 &&
                        (nchw || p.weight_gradient_type() != DataType::F32);
    // NCHW: half the filters (its fp32 twin holds the whole copy). NHWC, whose fp32 twin sums into dw itself:
    // the filters a twelfth of the pass's 16-bit tensors would hold, but at least 64 (x is lowered again for
    // each chunk, and narrower GEMMs waste their tiles: on lavapipe cv12 at batch 32 took the same time in
    // chunks of 512 to 128 filters, 7% more in 64, 69% more in 32).
    const uint64_t tensors = uint64_t(p.input_elements() + p.filter_elements() + p.output_elements()) *
                             element_bytes(p.data_type);
    const int64_t room = int64_t(tensors / 12 / (uint64_t(filter_taps(p)) * 4));
    const int64_t half = (p.K + 1) / 2;  // (two chunks)
    own.split.filters = !halves ? 0 : nchw ? half : std::clamp<int64_t>(room, std::min<int64_t>(64, half), half);
    const uint64_t product = halves ? uint64_t(own.split.filters) * uint64_t(filter_taps(p))
                                    : uint64_t(group_filter_floats(p));
    if (halves) plan.slot(nchw ? Slot::FilterCopy : Slot::WideOutput) = product;
    plan.slot(Slot::Partials) = own.split.slots * product;
    if (options.workspace_limit && workspace_bytes_of(context, plan.slots) > options.workspace_limit) {
        // No split: each image's product adds into dw in turn, with no partial products.
        own.split = MecFilterSplit{own.lowered.rows, 1, 0, own.split.filters};
        plan.slot(Slot::Partials) = 0;
    }
    plan.partial_products = static_cast<uint32_t>(own.split.slots);
    if (halves) plan.chunks *= static_cast<uint32_t>((p.K + own.split.filters - 1) / own.split.filters);
}

Planned<AlgorithmPlan> plan_mec_pass(ContextImpl& context, const ConvProblem& p, Pass pass,
                                     const PassOptions& options) {
    if (pass == Pass::Forward) return plan_mec_forward(context, p, options);
    // Backward runs Solution B's chunks: the lowered buffer holds L (or dL) and nothing else.
    const bool filter = pass == Pass::BackwardFilter, sixteen = p.data_type != DataType::F32;
    PassOptions b = options;
    b.variant = to_string(MecSchedule::B);
    // Backward-data's reordered filter copy (the filter's values, in its type) is workspace besides L in NHWC
    // too; a 16-bit NHWC dw sums into an fp32 copy (OIHW's is the OHWI copy, fp32 already).
    const uint64_t data_copy_floats = slot_floats(uint64_t(p.filter_elements()), element_bytes(p.data_type));
    const bool sixteen_dw = p.weight_gradient_type() != DataType::F32;
    const uint64_t wide_floats = filter && sixteen_dw && p.layout == Layout::NHWC ? uint64_t(p.filter_elements()) : 0;
    const uint64_t fixed = !filter && p.layout == Layout::NHWC ? context.pool->round(data_copy_floats * 4)
                           : wide_floats                       ? context.pool->round(wide_floats * 4)
                                                               : 0;
    // L holds x's values; backward-data's dL fp32 sums (added again by mec_gather).
    const uint32_t lowered_bytes = filter ? element_bytes(p.data_type) : 4;
    auto lowered = plan_lowered(context, p, Algorithm::Mec, b, fixed, lowered_bytes);
    // In bands of rows a 16-bit dx adds up in its image's fp32 copy: bands that leave room for it.
    const uint64_t image_floats = uint64_t(p.C * p.H * p.W);
    const bool banded_16bit = lowered && !filter && sixteen && lowered->rows < p.P();
    if (banded_16bit)
        lowered = plan_lowered(context, p, Algorithm::Mec, b, fixed + context.pool->round(image_floats * 4), lowered_bytes);
    if (!lowered) return lowered.refusal();
    if (banded_16bit)
        if (auto refusal = wide_image_refusal(context, p, options, "mec")) return *refusal;
    AlgorithmPlan plan = lowered_pass_plan(pass, *lowered);
    MecPlan& own = plan.own.emplace<MecPlan>(MecPlan{*lowered});
    // Backward-data reads w through a copy with its taps reordered (both layouts); backward-filter builds
    // an OIHW gradient in OHWI order first.
    plan.slot(Slot::FilterCopy) = filter ? own.lowered.filter_floats : data_copy_floats;
    plan.slot(Slot::WideOutput) = banded_16bit ? image_floats : wide_floats;
    if (filter) plan_mec_filter_split(context, p, options, plan, own);
    return plan;
}

void record_mec_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                     const ConvOperands& ops, Workspace workspace) {
    const auto& [lowered, split] = plan.own_as<MecPlan>();
    switch (plan.pass) {
        case Pass::Forward:
            record_mec_forward(context, stream, p, ops, lowered, workspace[Slot::Lowered],
                               workspace[Slot::FilterCopy], plan.own_slot(workspace, Slot::WideOutput));
            break;
        case Pass::BackwardData:
            record_mec_backward_data(context, stream, p, ops.output, ops.filter, ops.input, lowered,
                                     workspace[Slot::Lowered], workspace[Slot::FilterCopy], ops.add_into_dx,
                                     plan.own_slot(workspace, Slot::WideOutput));
            break;
        case Pass::BackwardFilter:
            record_mec_backward_filter(context, stream, p, ops.input, ops.output, ops.filter, lowered,
                                       workspace[Slot::Lowered], workspace[Slot::FilterCopy], split,
                                       workspace[Slot::Partials], plan.own_slot(workspace, Slot::WideOutput));
            break;
        case Pass::BackwardBias:
            break;
    }
}

}  // namespace

extern const AlgorithmEntry mec_algorithm{.plan = plan_mec_pass,
                                          .record = record_mec_pass,
                                          .variants = {"A", "B"},
                                          .variant_passes = pass_bit(Pass::Forward),
                                          .passes_16bit = kConvPasses};

}  // namespace vkconv::detail
