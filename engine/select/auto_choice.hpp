// How Algorithm::Auto becomes an algorithm: by the context's cache of measured choices (find.hpp),
// measuring on a miss, or by the heuristic (conv/heuristic.hpp) under AutoChoice::Heuristic. The public
// passes plan through plan_call; the choice itself is select/find.cpp's.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "context/context_impl.hpp"
#include "conv/pass_plan.hpp"
#include "vkconv/find.hpp"

namespace vkconv::detail {

struct Choice {
    Algorithm algorithm = Algorithm::Auto;         // Auto: the heuristic's
    std::string variant;                           // the algorithm's form (options' own where they name one)
    ChoiceSource source = ChoiceSource::Named;     // how it was made (RunStats::chosen_by)
};

// The AutoChoice `options` ask for: their own, else the context's.
AutoChoice auto_choice_of(const Context& context, const PassOptions& options);

// `algorithm` itself unless it is Auto. A call that measures allocates find's synthetic operands once per
// (pass, problem, options) on the context; every later call reuses it.
Choice choose_algorithm(Context& context, Pass pass, const ConvProblem& problem, Algorithm algorithm,
                        const PassOptions& options);

// What `algorithm` stands for without measuring: itself; under AutoChoice::Heuristic the heuristic; else
// a stored measurement where it still plans, and without one the heuristic under AutoChoice::Stored;
// nothing where only measuring can tell (AutoChoice::Measure: the workspace queries then answer for every
// candidate, never measuring themselves).
std::optional<Choice> known_choice(const Context& context, Pass pass, const ConvProblem& problem, Algorithm algorithm,
                                   const PassOptions& options);

// What Auto measures: every algorithm that applies to the problem, once per form (algorithm_variants).
std::vector<Choice> auto_candidates(Pass pass, const ConvProblem& problem, const PassOptions& options);

// `options` with the form of `choice` filled in where the options name none.
PassOptions with_variant(const PassOptions& options, const Choice& choice);

// The plan of a chosen algorithm.
inline Planned<PassPlan> plan_choice(const Context& context, const ConvProblem& problem, Pass pass,
                                     const Choice& choice, const PassOptions& options) {
    return plan_pass_on(impl_of(context), problem, pass, choice.algorithm, with_variant(options, choice));
}

// A public pass's plan: `algorithm` chosen (measuring where AutoChoice::Measure has no stored choice),
// then planned; `source` receives how the choice was made.
inline Planned<PassPlan> plan_call(Context& context, const ConvProblem& problem, Pass pass, Algorithm algorithm,
                                   const PassOptions& options, ChoiceSource& source) {
    const Choice choice = choose_algorithm(context, pass, problem, algorithm, options);
    source = choice.source;
    return plan_choice(context, problem, pass, choice, options);
}

// A workspace query: what `workspace_of(choice)` (a Planned<uint64_t>) gives for the choice `algorithm`
// stands for, found without measuring (known_choice). Where only measuring could tell, the most any
// candidate needs (those that cannot run here are passed over), so whatever Auto later measures fastest
// fits in it; where none can run, the heuristic's answer, whose refusal names why nothing fits. Never any
// GPU work.
template <typename WorkspaceOf>
Planned<uint64_t> query_workspace(const Context& context, Pass pass, const ConvProblem& problem, Algorithm algorithm,
                                  const PassOptions& options, WorkspaceOf&& workspace_of) {
    if (auto known = known_choice(context, pass, problem, algorithm, options)) return workspace_of(*known);
    uint64_t most = 0;
    bool any = false;
    for (const Choice& candidate : auto_candidates(pass, problem, options)) {
        if (Planned<uint64_t> bytes = workspace_of(candidate)) {
            most = std::max(most, *bytes);
            any = true;
        }
    }
    if (any) return most;
    return workspace_of(Choice{Algorithm::Auto, options.variant});
}

// A query's answer for one pass: its plan's workspace.
inline Planned<uint64_t> pass_workspace(const Context& context, const ConvProblem& problem, Pass pass,
                                        const Choice& choice, const PassOptions& options) {
    auto plan = plan_choice(context, problem, pass, choice, options);
    if (!plan) return plan.refusal();
    return plan->workspace_bytes();
}

}  // namespace vkconv::detail
