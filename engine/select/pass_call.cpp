#include "select/pass_call.hpp"

#include "context/access.hpp"
#include "context/recording_state.hpp"
#include "context/tensor_storage.hpp"

namespace vkconv::detail {

CallTarget call_target(Target target, const PassOptions& options) {
    if (!target.recording()) return {Access::context(Access::impl(*target.context())), {nullptr, options.workspace}};
    RecordingState& state = recording_state(*target.recording());
    return {Access::context(state.context), {&state, options.workspace}};
}

std::unique_lock<std::recursive_mutex> open_door(Context& context, const ConvProblem& problem) {
    ContextImpl& impl = impl_of(context);
    auto lock = serialise(impl);
    impl.device->throw_if_lost();
    problem.validate();
    return lock;
}

PassOptions planning_options(ContextImpl& context, const PassOptions& options, const PassTarget& target) {
    PassOptions planning = options;
    if (target.recording && options.auto_choice.value_or(context.auto_choice) == AutoChoice::Measure)
        planning.auto_choice = AutoChoice::Stored;
    if (!options.workspace) return planning;
    const uint64_t usable = usable_workspace_bytes(context, *options.workspace);
    planning.workspace_limit = options.workspace_limit ? std::min(options.workspace_limit, usable) : usable;
    return planning;
}

void check_workspace(const PassOptions& options, std::span<const Tensor* const> tensors) {
    if (!options.workspace) return;
    for (const Tensor* t : tensors)
        if (t && overlaps(*t, *options.workspace))
            throw Error(ErrorCategory::InvalidArgument,
                        "the workspace tensor must not share memory with the pass's tensors");
}

CallPlan plan_for_call(Context& context, const PassTarget& target, const PassCall& call, const PassOptions& options) {
    check_workspace(options, call.tensors);
    CallPlan planned{planning_options(impl_of(context), options, target), {}, ChoiceSource::Named};
    planned.plan = plan_call(context, call.problem, call.pass, call.algorithm, planned.planning, planned.source).value();
    return planned;
}

RunStats run_plan(Context& context, const PassTarget& target, const PassCall& call, const CallPlan& planned,
                  const AfterPass* after) {
    ContextImpl& impl = impl_of(context);
    const auto lock = serialise(impl);
    const ConvOperands& ops = call.operands;
    const PassPlan plan = plan_for_operands(impl, call.problem, planned.plan, planned.planning, ops);
    const uint64_t operands =
        after ? operand_bytes(after->counted_operands)
              : operand_bytes({&ops.input, &ops.filter, &ops.bias, &ops.output, &ops.epilogue.residual});
    RunStats stats = plan.planned_stats(call.problem, operands);
    stats.chosen_by = planned.source;
    if (target.recording) {
        for (const Tensor* tensor : call.tensors) target.recording->keep(tensor);
        target.recording->keep(target.workspace);
    }
    run_pass(impl, stats, plan.slots(), target, [&](CommandStream& stream, std::span<const Operand> workspace) {
        record_pass(impl, stream, call.problem, plan, ops, workspace);
        if (after) after->record(stream);
    });
    return stats;
}

uint64_t workspace_query(const Context& context, Pass pass, const ConvProblem& problem, Algorithm algorithm,
                         const PassOptions& options) {
    const auto lock = serialise(context);
    problem.validate();
    if (pass == Pass::BackwardBias) {
        if (!problem.has_bias) throw Error(ErrorCategory::InvalidArgument, "the problem has has_bias = false");
        return plan_pass_on(impl_of(context), problem, Pass::BackwardBias, Algorithm::Direct,
                         planning_options(impl_of(context), options))
            .value()
            .workspace_bytes();
    }
    return query_workspace(context, pass, problem, algorithm, options,
                           [&](const Choice& choice) { return pass_workspace(context, problem, pass, choice, options); })
        .value();
}

}  // namespace vkconv::detail
