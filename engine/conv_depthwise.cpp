// Placeholder until the depthwise kernels land (work in progress in this session).
#include "conv_depthwise.hpp"

#include <string>

namespace vkconv::detail {

DepthwisePlan plan_depthwise(ContextImpl&, const ConvProblem& problem, DepthwisePass, const ForwardOptions&) {
    throw Error(ErrorCategory::Unsupported, "depthwise: not available yet (" + problem.str() + ")");
}

void record_depthwise_forward(ContextImpl&, CommandStream&, const ConvProblem&, const ForwardOperands&,
                              const DepthwisePlan&) {}
void record_depthwise_backward_data(ContextImpl&, CommandStream&, const ConvProblem&, const Operand&, const Operand&,
                                    const Operand&, const DepthwisePlan&) {}
void record_depthwise_backward_filter(ContextImpl&, CommandStream&, const ConvProblem&, const Operand&,
                                      const Operand&, const Operand&, const DepthwisePlan&, const Operand&) {}

}  // namespace vkconv::detail
