// MEC: forward in Solution A or B, the backward passes on Solution B's chunks with a reordered filter
// copy, backward-filter with its split reduction.
// Its entry in the algorithm table (conv/algorithm_plan.hpp).
#include "conv/algorithm_plan.hpp"
#include "conv/gemm_mapping.hpp"
#include "conv/lowered/lowered.hpp"
#include "conv/mec/mec.hpp"

namespace vkconv::detail {
namespace {

// MEC's own plan: its chunks and backward-filter's split reduction.
struct MecPlan {
    LoweredPlan lowered;
    MecFilterSplit split;
};

Planned<AlgorithmPlan> plan_mec_pass(ContextImpl& context, const ConvProblem& p, Pass pass,
                                     const PassOptions& options) {
    if (pass == Pass::Forward) {
        auto lowered = plan_lowered(context, p, Algorithm::Mec, options);
        if (!lowered) return lowered.refusal();
        AlgorithmPlan plan = lowered_pass_plan(pass, *lowered);
        plan.own = MecPlan{*lowered};
        plan.variant = to_string(lowered->schedule);
        return plan;
    }
    // Backward runs Solution B's chunks: the lowered buffer holds L (or dL) and nothing else.
    const bool filter = pass == Pass::BackwardFilter;
    PassOptions b = options;
    b.variant = to_string(MecSchedule::B);
    // Backward-data's reordered filter copy is workspace besides L in NHWC too.
    const uint64_t data_copy =
        !filter && p.layout == Layout::NHWC ? context.pool->round(uint64_t(p.filter_elements()) * 4) : 0;
    auto lowered = plan_lowered(context, p, Algorithm::Mec, b, data_copy);
    if (!lowered) return lowered.refusal();
    AlgorithmPlan plan = lowered_pass_plan(pass, *lowered);
    MecPlan& own = plan.own.emplace<MecPlan>(MecPlan{*lowered});
    // Backward-data reads w through a copy with its taps reordered (both layouts); backward-filter builds
    // an OIHW gradient in OHWI order first.
    plan.slot(Slot::FilterCopy) = filter ? own.lowered.filter_floats : uint64_t(p.filter_elements());
    if (filter) {
        own.split = mec_backward_filter_split(context, p, own.lowered, storage_binding_limit(context, options));
        plan.slot(Slot::Partials) = own.split.slots * uint64_t(group_filter_floats(p));
        if (options.workspace_limit && workspace_bytes_of(context, plan.slots) > options.workspace_limit) {
            // No split: each image's product adds into dw in turn, with no partial products.
            own.split = MecFilterSplit{own.lowered.rows, 1, 0};
            plan.slot(Slot::Partials) = 0;
        }
        plan.partial_products = static_cast<uint32_t>(own.split.slots);
    }
    return plan;
}

void record_mec_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                     const ConvOperands& ops, Workspace workspace) {
    const auto& [lowered, split] = plan.own_as<MecPlan>();
    switch (plan.pass) {
        case Pass::Forward:
            record_mec_forward(context, stream, p, ops, lowered, workspace[Slot::Lowered],
                               workspace[Slot::FilterCopy]);
            break;
        case Pass::BackwardData:
            record_mec_backward_data(context, stream, p, ops.output, ops.filter, ops.input, lowered,
                                     workspace[Slot::Lowered], workspace[Slot::FilterCopy]);
            break;
        case Pass::BackwardFilter:
            record_mec_backward_filter(context, stream, p, ops.input, ops.output, ops.filter, lowered,
                                       workspace[Slot::Lowered], workspace[Slot::FilterCopy], split,
                                       workspace[Slot::Partials]);
            break;
        case Pass::BackwardBias:
            break;
    }
}

}  // namespace

extern const AlgorithmEntry mec_algorithm{.plan = plan_mec_pass,
                                          .record = record_mec_pass,
                                          .variants = {"A", "B"},
                                          .variant_passes = pass_bit(Pass::Forward)};

}  // namespace vkconv::detail
