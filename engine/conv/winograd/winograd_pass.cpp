// Winograd convolution (winograd.hpp): forward and backward-data of 3x3, stride-1, dilation-1 layers.
// Its entry in the algorithm table (conv/algorithm_plan.hpp); backward-filter is not among its passes.
#include "conv/algorithm_plan.hpp"
#include "conv/winograd/winograd.hpp"

namespace vkconv::detail {
namespace {

Planned<AlgorithmPlan> plan_winograd_pass(ContextImpl& context, const ConvProblem& p, Pass pass,
                                          const PassOptions& options) {
    auto winograd = plan_winograd(context, p, pass, options);
    if (!winograd) return winograd.refusal();
    AlgorithmPlan plan{.pass = pass, .algorithm = Algorithm::Winograd};
    plan.own = *winograd;
    plan.variant = winograd_variant(winograd->m);
    plan.chunks = winograd->chunks;
    plan.slot(Slot::Lowered) = winograd->lowered_floats;
    plan.slot(Slot::FilterCopy) = winograd->filter_floats;
    return plan;
}

// The shapes it computes: every pass it runs applies to them alike.
bool three_by_three_stride_one(const ConvProblem& p) { return !winograd_refusal(p, Pass::Forward); }

}  // namespace

extern const AlgorithmEntry winograd_algorithm{.passes = pass_bit(Pass::Forward) | pass_bit(Pass::BackwardData),
                                               .applies = three_by_three_stride_one,
                                               .requirement = "a 3x3 kernel, stride 1 and dilation 1",
                                               .plan = plan_winograd_pass,
                                               .record = record_winograd,
                                               .preferred = winograd_preferred,
                                               .variants = {"F(4x4,3x3)", "F(2x2,3x3)"},
                                               .variant_passes = pass_bit(Pass::Forward) | pass_bit(Pass::BackwardData),
                                               .passes_16bit = pass_bit(Pass::Forward) | pass_bit(Pass::BackwardData)};

}  // namespace vkconv::detail
