// How Algorithm::Auto becomes an algorithm: by the context's cache of measured choices (find.hpp),
// measuring on a miss, or by the heuristic under AutoChoice::Heuristic.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "vkconv/find.hpp"

namespace vkconv::detail {

struct Choice {
    Algorithm algorithm = Algorithm::Auto;
    MecSchedule mec_schedule = MecSchedule::Auto;  // what forward MEC runs with (options' own when not Auto)
};

// `algorithm` itself unless it is Auto. A call that measures allocates find's synthetic operands once per
// (pass, problem, options) on the context; every later call reuses it.
Choice choose_algorithm(const Context& context, Pass pass, const ConvProblem& problem, Algorithm algorithm,
                        const ForwardOptions& options);

// What `algorithm` stands for without measuring: itself, the heuristic's pick under AutoChoice::Heuristic,
// or Auto's cached measurement where it still plans; nothing where only measuring can tell (the workspace
// queries then answer for every candidate, never measuring themselves).
std::optional<Choice> known_choice(const Context& context, Pass pass, const ConvProblem& problem, Algorithm algorithm,
                                   const ForwardOptions& options);

// What Auto measures: every algorithm that applies to the problem, forward MEC once per schedule.
std::vector<Choice> auto_candidates(Pass pass, const ConvProblem& problem, const ForwardOptions& options);

// A workspace query: what `workspace_of(choice)` gives for the choice `algorithm` stands for, found without
// measuring (known_choice). Where only measuring could tell, the most any candidate needs (those that
// cannot run here are passed over), so whatever Auto later measures fastest fits in it; where none can
// run, the heuristic's choice, whose planning names why nothing fits. Never any GPU work.
template <typename WorkspaceOf>
uint64_t query_workspace(const Context& context, Pass pass, const ConvProblem& problem, Algorithm algorithm,
                         const ForwardOptions& options, WorkspaceOf&& workspace_of) {
    if (auto known = known_choice(context, pass, problem, algorithm, options)) return workspace_of(*known);
    uint64_t most = 0;
    bool any = false;
    for (const Choice& candidate : auto_candidates(pass, problem, options)) {
        try {
            most = std::max(most, workspace_of(candidate));
            any = true;
        } catch (const Error& e) {
            if (e.category() != ErrorCategory::Unsupported && e.category() != ErrorCategory::InvalidArgument) throw;
        }
    }
    if (any) return most;
    ForwardOptions heuristic = options;
    heuristic.auto_choice = AutoChoice::Heuristic;
    return workspace_of(*known_choice(context, pass, problem, algorithm, heuristic));
}

// `options` with the MEC schedule of `choice` filled in where the options leave it to Auto.
ForwardOptions with_schedule(const ForwardOptions& options, const Choice& choice);

}  // namespace vkconv::detail
