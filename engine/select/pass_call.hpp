// The one door of every public pass. forward, backward_data, backward_filter, backward_bias and
// conv_transpose, run now or recorded, go through the same steps: open the door (the context's lock, a lost
// device refused, the problem validated), make the operands (the caller checks them against the problem and
// each other), then plan_for_call (the caller's workspace checked, the choice made, measured where asked,
// and planned) and run_plan (the plan made again for operands paged otherwise, the stats, the tensors a
// recording keeps, the run). The layer step composes two passes' plans from the same pieces. Workspace
// queries have one door too: workspace_query.
#pragma once

#include <functional>
#include <span>
#include <mutex>
#include <vector>

#include "context/pass.hpp"
#include "select/auto_choice.hpp"
#include "conv/operands.hpp"
#include "vkconv/recording.hpp"

namespace vkconv::detail {

// Where a public call's work goes (now, or into a recording) and the context it plans on (a second handle
// to the caller's context, or the recording's).
struct CallTarget {
    Context context;
    PassTarget target;
};
CallTarget call_target(Target target, const PassOptions& options);

// The options a pass plans with: a caller's workspace caps the workspace limit at the bytes it offers from
// its first aligned byte. Error(InvalidArgument) for an empty workspace tensor or one of another context.
// A pass into a recording never measures: AutoChoice::Measure becomes Stored there, since measuring would
// submit timed work of vkconv's own while the caller records.
PassOptions planning_options(ContextImpl& context, const PassOptions& options, const PassTarget& target = {});
// Error(InvalidArgument) when the caller's workspace shares memory with one of the pass's tensors (nulls
// skipped).
void check_workspace(const PassOptions& options, std::span<const Tensor* const> tensors);

// The door's first step: the context's lock (held until the call returns), a lost device refused and the
// problem validated, before any operand is made.
[[nodiscard]] std::unique_lock<std::recursive_mutex> open_door(Context& context, const ConvProblem& problem);

// One pass as a public call asks for it, its operands made and checked.
struct PassCall {
    Pass pass;
    const ConvProblem& problem;  // the convolution the pass computes
    const ConvOperands& operands;
    std::vector<const Tensor*> tensors;  // the caller's tensors (nulls skipped): checked against the workspace, kept
                                         // by a recording
    Algorithm algorithm = Algorithm::Auto;
};

// A call's plan: the options it planned with and how its algorithm was chosen.
struct CallPlan {
    PassOptions planning;
    PassPlan plan;
    ChoiceSource source = ChoiceSource::Named;
};
CallPlan plan_for_call(Context& context, const PassTarget& target, const PassCall& call, const PassOptions& options);

// What a call runs beyond its pass (the transposed convolution's placing of a staged result): recorded after
// the pass in the same submission, with the operand bytes RunStats counts instead of the call's operands.
struct AfterPass {
    std::function<void(CommandStream&)> record;
    std::vector<const Operand*> counted_operands;
};
RunStats run_plan(Context& context, const PassTarget& target, const PassCall& call, const CallPlan& planned,
                  const AfterPass* after = nullptr);

inline RunStats run_call(Context& context, const PassTarget& target, const PassCall& call,
                         const PassOptions& options) {
    return run_plan(context, target, call, plan_for_call(context, target, call, options));
}

// The bytes of workspace `algorithm` needs for `pass` (exact where the choice is known without measuring,
// else the most any candidate needs), for every public workspace query.
uint64_t workspace_query(const Context& context, Pass pass, const ConvProblem& problem, Algorithm algorithm,
                         const PassOptions& options);

}  // namespace vkconv::detail
