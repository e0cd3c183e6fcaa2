// The public forward pass: argument checks, algorithm choice, workspace, timing and memory measurement.
#include <algorithm>
#include <cctype>
#include <string>

#include "context/pass.hpp"
#include "context/recording_state.hpp"
#include "context/tensor_storage.hpp"
#include "conv/auto_choice.hpp"
#include "conv/heuristic.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/recording.hpp"

namespace vkconv {

const char* to_string(MecSchedule schedule) noexcept {
    switch (schedule) {
        case MecSchedule::Auto:
            return "auto";
        case MecSchedule::A:
            return "A";
        case MecSchedule::B:
            return "B";
    }
    return "unknown";
}

const char* to_string(Pass pass) noexcept {
    switch (pass) {
        case Pass::Forward:
            return "forward";
        case Pass::BackwardData:
            return "backward-data";
        case Pass::BackwardFilter:
            return "backward-filter";
        case Pass::BackwardBias:
            return "backward-bias";
    }
    return "unknown";
}

Pass parse_pass(std::string_view text) {
    std::string name(text);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter, Pass::BackwardBias})
        if (name == to_string(pass)) return pass;
    throw Error(ErrorCategory::InvalidArgument, "unknown pass '" + std::string(text) +
                                                    "' (expected forward, backward-data, backward-filter or "
                                                    "backward-bias)");
}

Algorithm choose_forward_algorithm(const Context& context, const ConvProblem& problem, const PassOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    problem.validate();
    return detail::heuristic_algorithm(impl, problem, Pass::Forward, options).value();
}

uint64_t forward_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                 const PassOptions& options) {
    const auto lock = detail::serialise(context);
    problem.validate();
    return detail::query_workspace(context, Pass::Forward, problem, algorithm, options,
                                   [&](const detail::Choice& choice) {
                                       return detail::pass_workspace(context, problem, Pass::Forward, choice, options);
                                   })
        .value();
}

namespace {

RunStats forward_to(Context& context, const detail::PassTarget& target, const ConvProblem& problem, const Tensor& input,
                    const Tensor& filter, const Tensor* bias, Tensor& output, const Epilogue& epilogue,
                    Algorithm algorithm, const PassOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    impl.device->throw_if_lost();
    problem.validate();
    detail::ConvOperands ops;
    ops.input = detail::tensor_operand(impl, input, "input", problem.input_shape());
    ops.filter = detail::tensor_operand(impl, filter, "filter", problem.filter_shape());
    ops.output = detail::tensor_operand(impl, output, "output", problem.output_shape());
    if (problem.has_bias && !bias)
        throw Error(ErrorCategory::InvalidArgument, "the problem has a bias but no bias tensor was given");
    if (!problem.has_bias && bias)
        throw Error(ErrorCategory::InvalidArgument, "a bias tensor was given but the problem has has_bias = false");
    if (bias) ops.bias = detail::tensor_operand(impl, *bias, "bias", problem.bias_shape());
    detail::check_not_aliased(output, "output", {&input, &filter, bias});
    ops.epilogue = detail::fused_epilogue(impl, problem, epilogue, input, filter, bias, output);
    const Tensor* residual = epilogue.residual;
    detail::check_workspace(options, {&input, &filter, bias, &output, residual});
    const PassOptions planning = detail::planning_options(impl, options, target);

    ChoiceSource source{};
    const detail::PassPlan plan = detail::plan_for_operands(
        impl, problem, detail::plan_call(context, problem, Pass::Forward, algorithm, planning, source).value(),
        planning, ops);
    RunStats stats = plan.planned_stats(
        problem, detail::operand_bytes({&ops.input, &ops.filter, &ops.bias, &ops.output, &ops.epilogue.residual}));
    stats.chosen_by = source;
    if (target.recording)
        for (const Tensor* t :
             {&input, &filter, bias, static_cast<const Tensor*>(&output), residual, options.workspace})
            target.recording->keep(t);
    detail::run_pass(impl, stats, plan.slots(), target,
                     [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                         detail::record_pass(impl, stream, problem, plan, ops, workspace);
                     });
    return stats;
}

}  // namespace

RunStats forward(Context& context, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, Algorithm algorithm, const PassOptions& options) {
    return forward(context, problem, input, filter, bias, output, Epilogue{}, algorithm, options);
}

RunStats forward(Recording& recording, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, Algorithm algorithm, const PassOptions& options) {
    return forward(recording, problem, input, filter, bias, output, Epilogue{}, algorithm, options);
}

RunStats forward(Context& context, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, const Epilogue& epilogue, Algorithm algorithm,
                 const PassOptions& options) {
    return forward_to(context, {nullptr, options.workspace}, problem, input, filter, bias, output, epilogue, algorithm,
                      options);
}

RunStats forward(Recording& recording, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, const Epilogue& epilogue, Algorithm algorithm,
                 const PassOptions& options) {
    detail::RecordingState& state = detail::recording_state(recording);
    Context context = detail::Access::context(state.context);
    return forward_to(context, {&state, options.workspace}, problem, input, filter, bias, output, epilogue, algorithm,
                      options);
}

}  // namespace vkconv
