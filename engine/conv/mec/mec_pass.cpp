#include "conv/mec/mec_pass.hpp"

#include "conv/gemm_mapping.hpp"

namespace vkconv::detail {
namespace {

Planned<AlgorithmPlan> plan_mec_pass(ContextImpl& context, const ConvProblem& p, Pass pass,
                                     const PassOptions& options) {
    if (pass == Pass::Forward) {
        auto lowered = plan_lowered(context, p, Algorithm::Mec, options);
        if (!lowered) return lowered.refusal();
        return lowered_pass_plan(pass, *lowered);
    }
    // Backward runs Solution B's chunks: the lowered buffer holds L (or dL) and nothing else.
    const bool filter = pass == Pass::BackwardFilter;
    PassOptions b = options;
    b.mec_schedule = MecSchedule::B;
    // Backward-data's reordered filter copy is workspace besides L in NHWC too.
    const uint64_t data_copy =
        !filter && p.layout == Layout::NHWC ? context.pool->round(uint64_t(p.filter_elements()) * 4) : 0;
    auto lowered = plan_lowered(context, p, Algorithm::Mec, b, data_copy);
    if (!lowered) return lowered.refusal();
    AlgorithmPlan plan = lowered_pass_plan(pass, *lowered);
    // Backward-data reads w through a copy with its taps reordered (both layouts); backward-filter builds
    // an OIHW gradient in OHWI order first.
    plan.slot(Slot::FilterCopy) = filter ? plan.lowered.filter_floats : uint64_t(p.filter_elements());
    if (filter) {
        plan.mec_split = mec_backward_filter_split(context, p, plan.lowered, storage_binding_limit(context, options));
        plan.slot(Slot::Partials) = plan.mec_split.slots * uint64_t(group_filter_floats(p));
        if (options.workspace_limit && workspace_bytes_of(context, plan.slots) > options.workspace_limit) {
            // No split: each image's product adds into dw in turn, with no partial products.
            plan.mec_split = MecFilterSplit{plan.lowered.rows, 1, 0};
            plan.slot(Slot::Partials) = 0;
        }
    }
    return plan;
}

void record_mec_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                     const ConvOperands& ops, Workspace workspace) {
    switch (plan.pass) {
        case Pass::Forward:
            record_mec_forward(context, stream, p, ops, plan.lowered, workspace[Slot::Lowered],
                               workspace[Slot::FilterCopy]);
            break;
        case Pass::BackwardData:
            record_mec_backward_data(context, stream, p, ops.output, ops.filter, ops.input, plan.lowered,
                                     workspace[Slot::Lowered], workspace[Slot::FilterCopy]);
            break;
        case Pass::BackwardFilter:
            record_mec_backward_filter(context, stream, p, ops.input, ops.output, ops.filter, plan.lowered,
                                       workspace[Slot::Lowered], workspace[Slot::FilterCopy], plan.mec_split,
                                       workspace[Slot::Partials]);
            break;
        case Pass::BackwardBias:
            break;
    }
}

}  // namespace

const AlgorithmEntry mec_algorithm{Algorithm::Mec, plan_mec_pass, record_mec_pass};

}  // namespace vkconv::detail
