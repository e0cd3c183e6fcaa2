// The public forward pass: its operands, then the door every pass goes through (select/pass_call.hpp); its
// workspace query; the heuristic's choice.
#include <string>

#include "context/pass.hpp"
#include "context/recording_state.hpp"
#include "context/tensor_storage.hpp"
#include "select/auto_choice.hpp"
#include "select/pass_call.hpp"
#include "conv/heuristic.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/recording.hpp"

namespace vkconv {

Algorithm choose_forward_algorithm(const Context& context, const ConvProblem& problem, const PassOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    problem.validate();
    detail::check_variant(Algorithm::Auto, options);
    return detail::heuristic_algorithm(impl, problem, Pass::Forward, options).value();
}

uint64_t forward_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                 const PassOptions& options) {
    return detail::workspace_query(context, Pass::Forward, problem, algorithm, options);
}

namespace {

RunStats forward_to(detail::CallTarget call, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                    const Tensor* bias, Tensor& output, const Epilogue& epilogue, Algorithm algorithm,
                    const PassOptions& options) {
    const auto lock = detail::open_door(call.context, problem);
    detail::ContextImpl& impl = detail::impl_of(call.context);
    detail::ConvOperands ops;
    ops.input = detail::tensor_operand(impl, input, "input", problem.input_shape(), problem.data_type);
    ops.filter = detail::tensor_operand(impl, filter, "filter", problem.filter_shape(), problem.data_type);
    ops.output = detail::tensor_operand(impl, output, "output", problem.output_shape(), problem.data_type);
    if (problem.has_bias && !bias)
        throw Error(ErrorCategory::InvalidArgument, "the problem has a bias but no bias tensor was given");
    if (!problem.has_bias && bias)
        throw Error(ErrorCategory::InvalidArgument, "a bias tensor was given but the problem has has_bias = false");
    if (bias) ops.bias = detail::tensor_operand(impl, *bias, "bias", problem.bias_shape(), problem.data_type);
    detail::check_not_aliased(output, "output", {&input, &filter, bias});
    ops.epilogue = detail::fused_epilogue(impl, problem, epilogue, input, filter, bias, output);
    const detail::PassCall pass{Pass::Forward, problem, ops, {&input, &filter, bias, &output, epilogue.residual},
                                algorithm};
    return detail::run_call(call.context, call.target, pass, options);
}

}  // namespace

RunStats forward(Target target, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, Algorithm algorithm, const PassOptions& options,
                 const Epilogue& epilogue) {
    return forward_to(detail::call_target(target, options), problem, input, filter, bias, output, epilogue, algorithm,
                      options);
}

}  // namespace vkconv
