// How Algorithm::Auto becomes an algorithm: by the context's cache of measured choices (find.hpp),
// measuring on a miss, or by the heuristic under AutoChoice::Heuristic.
#pragma once

#include "vkconv/find.hpp"

namespace vkconv::detail {

struct Choice {
    Algorithm algorithm = Algorithm::Auto;
    MecSchedule mec_schedule = MecSchedule::Auto;  // what forward MEC runs with (options' own when not Auto)
};

// `algorithm` itself unless it is Auto. A call that measures allocates find's synthetic operands once per
// (pass, problem, options) on the context; every later call, the workspace queries included, reuses it.
Choice choose_algorithm(const Context& context, Pass pass, const ConvProblem& problem, Algorithm algorithm,
                        const ForwardOptions& options);

// `options` with the MEC schedule of `choice` filled in where the options leave it to Auto.
ForwardOptions with_schedule(const ForwardOptions& options, const Choice& choice);

}  // namespace vkconv::detail
