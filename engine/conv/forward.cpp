// The public forward pass: argument checks, algorithm choice, workspace, timing and memory measurement.
#include <algorithm>
#include <cctype>
#include <string>

#include "context/pass.hpp"
#include "context/tensor_storage.hpp"
#include "conv/auto_choice.hpp"
#include "conv/backward_plan.hpp"
#include "conv/depthwise/depthwise.hpp"
#include "conv/direct/direct.hpp"
#include "conv/forward_plan.hpp"
#include "conv/im2col/im2col.hpp"
#include "conv/lowered/lowered.hpp"
#include "conv/mec/mec.hpp"
#include "conv/tiled/tiled.hpp"
#include "vkconv/conv.hpp"

namespace vkconv {

const char* to_string(Algorithm algorithm) noexcept {
    switch (algorithm) {
        case Algorithm::Auto:
            return "auto";
        case Algorithm::Direct:
            return "direct";
        case Algorithm::Im2col:
            return "im2col";
        case Algorithm::Mec:
            return "mec";
        case Algorithm::Depthwise:
            return "depthwise";
    }
    return "unknown";
}

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

Algorithm parse_algorithm(std::string_view text) {
    std::string name(text);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (Algorithm a : {Algorithm::Auto, Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec, Algorithm::Depthwise})
        if (name == to_string(a)) return a;
    throw Error(ErrorCategory::InvalidArgument,
                "unknown algorithm '" + std::string(text) + "' (expected auto, direct, im2col, mec or depthwise)");
}

namespace detail {

namespace {

Algorithm untiled_heuristic(ContextImpl& impl, const ConvProblem& problem, const ForwardOptions& options);

}  // namespace

Algorithm heuristic_forward_algorithm(ContextImpl& impl, const ConvProblem& problem, const ForwardOptions& options) {
    // Too large to bind: the heuristic's algorithm for the tiles.
    if (needs_tiling(impl, problem, Algorithm::Auto, options))
        return plan_tiled(impl, problem, Pass::Forward, Algorithm::Auto, options).algorithm;
    return or_tiled_direct(impl, problem, Pass::Forward, options,
                           [&] { return untiled_heuristic(impl, problem, options); });
}

namespace {

Algorithm untiled_heuristic(ContextImpl& impl, const ConvProblem& problem, const ForwardOptions& options) {
    const uint64_t range = impl.device->limits().maxStorageBufferRange;
    const bool direct_fits =
        uint64_t(std::max({problem.input_elements(), problem.output_elements(), problem.filter_elements()})) * 4 <=
        range;
    // One input channel per group (depthwise): a GEMM with a reduction of R*S per group is all overhead;
    // the depthwise kernels run in chunks of images, direct only where one image is too large for them.
    if (is_depthwise(problem)) {
        try {
            plan_depthwise(impl, problem, Pass::Forward, options);
            return Algorithm::Depthwise;
        } catch (const Error& e) {
            if (e.category() != ErrorCategory::Unsupported) throw;
        }
        if (direct_fits) return Algorithm::Direct;
    }
    // Otherwise the lowering with the smaller workspace: less memory, and on every device measured it is
    // also the one that moves fewer bytes. In NHWC that is MEC unless the kernel is one row tall (then
    // the two are the same size and im2col's plain GEMM wins); in NCHW, MEC's OHWI filter copy can
    // outweigh its smaller lowered matrix on late layers with many channels.
    // A lowering that cannot fit even one row of output under the binding limit is out of the running.
    auto workspace = [&](Algorithm algorithm) -> uint64_t {
        try {
            return plan_lowered(impl, problem, algorithm, options).workspace_bytes;
        } catch (const Error& e) {
            if (e.category() != ErrorCategory::Unsupported) throw;
            return UINT64_MAX;
        }
    };
    const uint64_t im2col = workspace(Algorithm::Im2col), mec = workspace(Algorithm::Mec);
    if (im2col == UINT64_MAX && mec == UINT64_MAX) {
        if (direct_fits) return Algorithm::Direct;
        throw_nothing_fits(impl, problem, options);
    }
    return mec < im2col ? Algorithm::Mec : Algorithm::Im2col;
}

}  // namespace

ForwardPlan plan_forward(ContextImpl& context, const ConvProblem& problem, Algorithm algorithm,
                         const ForwardOptions& options) {
    ForwardPlan plan;
    plan.algorithm = algorithm;
    switch (algorithm) {
        case Algorithm::Depthwise:
            plan.depthwise = plan_depthwise(context, problem, Pass::Forward, options);
            plan.slots = {plan.depthwise.workspace_floats, 0};
            plan.workspace_bytes = plan.depthwise.workspace_bytes;
            plan.chunks = plan.depthwise.chunks;
            break;
        case Algorithm::Direct:
            check_direct_bindings(context, problem);
            break;
        case Algorithm::Im2col:
        case Algorithm::Mec:
            plan.lowered = plan_lowered(context, problem, algorithm, options);
            plan.slots = {plan.lowered.scratch_floats, plan.lowered.filter_floats};
            plan.workspace_bytes = plan.lowered.workspace_bytes;
            plan.chunks = plan.lowered.chunks;
            break;
        case Algorithm::Auto:
            throw Error(ErrorCategory::InvalidArgument, "plan_forward: the algorithm must be resolved");
    }
    return plan;
}

void record_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const ForwardPlan& plan,
                    const ForwardOperands& ops, std::span<const Operand> workspace) {
    switch (plan.algorithm) {
        case Algorithm::Direct:
            record_direct_forward(context, stream, problem, ops);
            break;
        case Algorithm::Depthwise:
            record_depthwise_forward(context, stream, problem, ops, plan.depthwise);
            break;
        case Algorithm::Im2col:
            record_im2col_forward(context, stream, problem, ops, plan.lowered, workspace[0]);
            break;
        case Algorithm::Mec:
            record_mec_forward(context, stream, problem, ops, plan.lowered, workspace[0], workspace[1]);
            break;
        case Algorithm::Auto:
            break;
    }
}

}  // namespace detail

Algorithm choose_forward_algorithm(const Context& context, const ConvProblem& problem, const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    problem.validate();
    return detail::heuristic_forward_algorithm(impl, problem, options);
}

namespace {

// The forward pass's plan: its algorithm's own, or tiles of it where a tensor is too large to bind
// (tiled/tiled.hpp). The workspace query and the pass plan alike, so they always agree.
struct ForwardPassPlan {
    bool tiled = false;
    detail::ForwardPlan plan;
    detail::TiledPlan tiles;

    uint64_t workspace_bytes() const { return tiled ? tiles.workspace_bytes : plan.workspace_bytes; }
};

// The forward plan for a chosen algorithm (and MEC schedule).
ForwardPassPlan plan_choice(const Context& context, const ConvProblem& problem, const detail::Choice& choice,
                            const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const ForwardOptions chosen = detail::with_schedule(options, choice);
    ForwardPassPlan pass;
    pass.tiled = detail::needs_tiling(impl, problem, choice.algorithm, chosen);
    if (pass.tiled)
        pass.tiles = detail::plan_tiled(impl, problem, Pass::Forward, choice.algorithm, chosen);
    else
        pass.plan = detail::plan_forward(impl, problem, choice.algorithm, chosen);
    return pass;
}

// The forward plan for `algorithm`, Auto resolved by measuring or the heuristic (auto_choice.hpp).
ForwardPassPlan plan_pass(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                          const ForwardOptions& options) {
    return plan_choice(context, problem, detail::choose_algorithm(context, Pass::Forward, problem, algorithm, options),
                       options);
}

}  // namespace

uint64_t forward_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                 const ForwardOptions& options) {
    problem.validate();
    return detail::query_workspace(
        context, Pass::Forward, problem, algorithm, options,
        [&](const detail::Choice& choice) { return plan_choice(context, problem, choice, options).workspace_bytes(); });
}

RunStats forward(Context& context, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, Algorithm algorithm, const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    impl.device->throw_if_lost();
    problem.validate();
    detail::ForwardOperands ops;
    ops.input = detail::tensor_operand(impl, input, "input", problem.input_shape());
    ops.filter = detail::tensor_operand(impl, filter, "filter", problem.filter_shape());
    ops.output = detail::tensor_operand(impl, output, "output", problem.output_shape());
    if (problem.has_bias && !bias)
        throw Error(ErrorCategory::InvalidArgument, "the problem has a bias but no bias tensor was given");
    if (!problem.has_bias && bias)
        throw Error(ErrorCategory::InvalidArgument, "a bias tensor was given but the problem has has_bias = false");
    if (bias) ops.bias = detail::tensor_operand(impl, *bias, "bias", problem.bias_shape());
    detail::check_not_aliased(output, "output", {&input, &filter, bias});

    const ForwardPassPlan pass = plan_pass(context, problem, algorithm, options);
    RunStats stats;
    stats.operand_bytes = detail::operand_bytes({&ops.input, &ops.filter, &ops.bias, &ops.output});
    stats.workspace_bytes = pass.workspace_bytes();
    if (pass.tiled) {
        stats.algorithm = pass.tiles.algorithm;
        stats.mec_schedule = pass.tiles.mec_schedule;
        stats.chunks = pass.tiles.tiles;
        detail::run_pass(context, impl, stats, pass.tiles.slots,
                         [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                             detail::record_tiled_forward(impl, stream, problem, pass.tiles, ops, workspace);
                         });
        return stats;
    }
    stats.algorithm = pass.plan.algorithm;
    if (pass.plan.algorithm == Algorithm::Mec) stats.mec_schedule = pass.plan.lowered.schedule;
    stats.chunks = pass.plan.chunks;
    detail::run_pass(context, impl, stats, {pass.plan.slots.begin(), pass.plan.slots.end()},
                     [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                         detail::record_forward(impl, stream, problem, pass.plan, ops, workspace);
                     });
    return stats;
}

}  // namespace vkconv
