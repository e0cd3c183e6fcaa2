// The public backward passes: argument checks, then one plan (conv/backward_plan.hpp) run per call, or
// both of a layer's plans in one submission.
#include <string>

#include "context/pass.hpp"
#include "context/tensor_storage.hpp"
#include "conv/auto_choice.hpp"
#include "conv/backward_plan.hpp"
#include "conv/tiled/tiled.hpp"
#include "vkconv/backward.hpp"

namespace vkconv {
namespace {

// A backward pass's plan: its algorithm's own, or tiles of it where a tensor is too large to bind
// (tiled/tiled.hpp).
struct PassPlan {
    bool tiled = false;
    detail::BackwardPlan plan;
    detail::TiledPlan tiles;

    Algorithm algorithm() const { return tiled ? tiles.algorithm : plan.algorithm; }
    uint64_t workspace_bytes() const { return tiled ? tiles.workspace_bytes : plan.workspace_bytes; }
    uint32_t chunks() const { return tiled ? tiles.tiles : plan.chunks; }
    uint32_t partial_products() const { return tiled ? tiles.partial_products : detail::partial_products_of(plan); }
    uint32_t bias_pieces(const ConvProblem& p) const {
        return tiled ? tiles.bias_pieces : detail::bias_pieces_of(p, plan);
    }
    std::vector<uint64_t> slots() const {
        return tiled ? tiles.slots : std::vector<uint64_t>(plan.slots.begin(), plan.slots.end());
    }
};

// What a pass's stats know before it runs.
RunStats planned_stats(const ConvProblem& p, const PassPlan& plan, uint64_t operand_bytes) {
    RunStats stats;
    stats.algorithm = plan.algorithm();
    stats.workspace_bytes = plan.workspace_bytes();
    stats.chunks = plan.chunks();
    stats.partial_products = plan.partial_products();
    stats.bias_pieces = plan.bias_pieces(p);
    stats.operand_bytes = operand_bytes;
    return stats;
}

struct DataOperands {
    detail::Operand dy, w, dx;
};

DataOperands data_operands(detail::ContextImpl& impl, const ConvProblem& p, const Tensor& grad_output,
                           const Tensor& filter, const Tensor& grad_input) {
    DataOperands ops{detail::tensor_operand(impl, grad_output, "grad_output", p.output_shape()),
                     detail::tensor_operand(impl, filter, "filter", p.filter_shape()),
                     detail::tensor_operand(impl, grad_input, "grad_input", p.input_shape())};
    detail::check_not_aliased(grad_input, "grad_input", {&grad_output, &filter});
    return ops;
}

struct FilterOperands {
    detail::Operand x, dy, dw, db;  // db empty without grad_bias
};

FilterOperands filter_operands(detail::ContextImpl& impl, const ConvProblem& p, const Tensor& input,
                               const Tensor& grad_output, const Tensor& grad_filter, const Tensor* grad_bias) {
    if (grad_bias && !p.has_bias)
        throw Error(ErrorCategory::InvalidArgument,
                    "a grad_bias tensor was given but the problem has has_bias = false");
    FilterOperands ops{detail::tensor_operand(impl, input, "input", p.input_shape()),
                       detail::tensor_operand(impl, grad_output, "grad_output", p.output_shape()),
                       detail::tensor_operand(impl, grad_filter, "grad_filter", p.filter_shape()),
                       {}};
    if (grad_bias) {
        ops.db = detail::tensor_operand(impl, *grad_bias, "grad_bias", p.bias_shape());
        if (detail::overlaps(*grad_bias, grad_filter))
            throw Error(ErrorCategory::InvalidArgument, "grad_bias and grad_filter must be different tensors");
        detail::check_not_aliased(*grad_bias, "grad_bias", {&input, &grad_output});
    }
    detail::check_not_aliased(grad_filter, "grad_filter", {&input, &grad_output});
    return ops;
}

// The plan of `pass` for a chosen algorithm; tiled where the problem's tensors are too large to bind, or
// when `tiled` asks for it (a layer step whose other pass is tiled shares its workspace slots).
PassPlan plan_choice(const Context& context, const ConvProblem& p, Pass pass, const detail::Choice& choice,
                     const ForwardOptions& options, bool tiled = false) {
    detail::ContextImpl& impl = detail::impl_of(context);
    PassPlan plan;
    plan.tiled = tiled || detail::needs_tiling(impl, p, choice.algorithm, options);
    if (plan.tiled)
        plan.tiles = detail::plan_tiled(impl, p, pass, choice.algorithm, options);
    else
        plan.plan = detail::plan_backward(impl, p, pass, choice.algorithm, options);
    return plan;
}

// The plan of `pass` for `algorithm`, Auto resolved by measuring or the heuristic (auto_choice.hpp).
PassPlan plan_pass(const Context& context, const ConvProblem& p, Pass pass, Algorithm algorithm,
                   const ForwardOptions& options) {
    return plan_choice(context, p, pass, detail::choose_algorithm(context, pass, p, algorithm, options), options);
}

uint64_t pass_workspace_query(const Context& context, const ConvProblem& p, Pass pass, Algorithm algorithm,
                              const ForwardOptions& options) {
    return detail::query_workspace(context, pass, p, algorithm, options, [&](const detail::Choice& choice) {
        return plan_choice(context, p, pass, choice, options).workspace_bytes();
    });
}

void record_data_pass(detail::ContextImpl& impl, detail::CommandStream& stream, const ConvProblem& p,
                      const PassPlan& plan, const DataOperands& ops, std::span<const detail::Operand> workspace) {
    if (plan.tiled)
        detail::record_tiled_backward_data(impl, stream, p, plan.tiles, ops.dy, ops.w, ops.dx, workspace);
    else
        detail::record_backward_data(impl, stream, p, plan.plan, ops.dy, ops.w, ops.dx, workspace);
}

void record_filter_pass(detail::ContextImpl& impl, detail::CommandStream& stream, const ConvProblem& p,
                        const PassPlan& plan, const FilterOperands& ops, std::span<const detail::Operand> workspace) {
    if (plan.tiled) {
        detail::record_tiled_backward_filter(impl, stream, p, plan.tiles, ops.x, ops.dy, ops.dw, ops.db, workspace);
        return;
    }
    detail::record_backward_filter(impl, stream, p, plan.plan, ops.x, ops.dy, ops.dw, workspace);
    if (ops.db) detail::record_bias_grad(impl, stream, p, plan.plan.bias, ops.dy, ops.db, workspace[3]);
}

}  // namespace

uint64_t backward_data_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                       const ForwardOptions& options) {
    problem.validate();
    return pass_workspace_query(context, problem, Pass::BackwardData, algorithm, options);
}

uint64_t backward_filter_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                         const ForwardOptions& options) {
    problem.validate();
    return pass_workspace_query(context, problem, Pass::BackwardFilter, algorithm, options);
}

RunStats backward_data(Context& context, const ConvProblem& problem, const Tensor& grad_output, const Tensor& filter,
                       Tensor& grad_input, Algorithm algorithm, const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    impl.device->throw_if_lost();
    problem.validate();
    const DataOperands ops = data_operands(impl, problem, grad_output, filter, grad_input);
    const auto plan = plan_pass(context, problem, Pass::BackwardData, algorithm, options);
    RunStats stats = planned_stats(problem, plan, detail::operand_bytes({&ops.dy, &ops.w, &ops.dx}));
    detail::run_pass(context, impl, stats, plan.slots(),
                     [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                         record_data_pass(impl, stream, problem, plan, ops, workspace);
                     });
    return stats;
}

RunStats backward_filter(Context& context, const ConvProblem& problem, const Tensor& input, const Tensor& grad_output,
                         Tensor& grad_filter, Tensor* grad_bias, Algorithm algorithm, const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    impl.device->throw_if_lost();
    problem.validate();
    const FilterOperands ops = filter_operands(impl, problem, input, grad_output, grad_filter, grad_bias);
    const auto plan = plan_pass(context, problem, Pass::BackwardFilter, algorithm, options);
    RunStats stats = planned_stats(problem, plan, detail::operand_bytes({&ops.x, &ops.dy, &ops.dw, &ops.db}));
    detail::run_pass(context, impl, stats, plan.slots(),
                     [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                         record_filter_pass(impl, stream, problem, plan, ops, workspace);
                     });
    return stats;
}

RunStats backward_bias(Context& context, const ConvProblem& problem, const Tensor& grad_output, Tensor& grad_bias) {
    detail::ContextImpl& impl = detail::impl_of(context);
    impl.device->throw_if_lost();
    problem.validate();
    const auto dy = detail::tensor_operand(impl, grad_output, "grad_output", problem.output_shape());
    const auto db = detail::tensor_operand(impl, grad_bias, "grad_bias", problem.bias_shape());
    detail::check_not_aliased(grad_bias, "grad_bias", {&grad_output});
    RunStats stats;
    stats.algorithm = Algorithm::Direct;
    stats.operand_bytes = detail::operand_bytes({&dy, &db});
    if (detail::bias_needs_tiling(impl, problem)) {
        const detail::TiledBiasPlan plan = detail::plan_tiled_bias(impl, problem);
        stats.workspace_bytes = plan.workspace_bytes;
        stats.chunks = plan.tiles;
        stats.bias_pieces = plan.bias_pieces;
        detail::run_pass(context, impl, stats, plan.slots,
                         [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                             detail::record_tiled_bias(impl, stream, problem, plan, dy, db, workspace);
                         });
        return stats;
    }
    const detail::BiasPlan plan = detail::plan_bias_grad(impl, problem, 0);
    stats.workspace_bytes = plan.partial_floats ? impl.pool->round(plan.partial_floats * 4) : 0;
    stats.chunks = static_cast<uint32_t>((problem.N + plan.images - 1) / plan.images);
    stats.bias_pieces = static_cast<uint32_t>(plan.pieces);
    detail::run_pass(context, impl, stats, {plan.partial_floats},
                     [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                         detail::record_bias_grad(impl, stream, problem, plan, dy, db, workspace[0]);
                     });
    return stats;
}

namespace {

// A layer step's two plans. They share one workspace (each slot the larger pass's) and one submission
// where their slots mean the same (both tiled, or neither) and the shared sum fits the workspace limit;
// otherwise they run one after the other, each with its own workspace.
struct StepPlan {
    PassPlan data, filter;
    bool shared = true;
    std::vector<uint64_t> slots;  // shared only
    uint64_t workspace_bytes = 0;
};

uint64_t bytes_of(const detail::ContextImpl& impl, const std::vector<uint64_t>& slots);

StepPlan step_plan(const Context& context, const ConvProblem& p, const detail::Choice& data,
                   const detail::Choice& filter, const ForwardOptions& options) {
    StepPlan step{plan_choice(context, p, Pass::BackwardData, data, options),
                  plan_choice(context, p, Pass::BackwardFilter, filter, options)};
    step.shared = step.data.tiled == step.filter.tiled;
    if (step.shared) {
        step.slots = step.data.slots();
        const std::vector<uint64_t> other = step.filter.slots();
        for (size_t i = 0; i < step.slots.size(); ++i) step.slots[i] = std::max(step.slots[i], other[i]);
        step.workspace_bytes = bytes_of(detail::impl_of(context), step.slots);
        step.shared = !options.workspace_limit || step.workspace_bytes <= options.workspace_limit;
    }
    if (!step.shared) step.workspace_bytes = std::max(step.data.workspace_bytes(), step.filter.workspace_bytes());
    return step;
}

uint64_t bytes_of(const detail::ContextImpl& impl, const std::vector<uint64_t>& slots) {
    uint64_t bytes = 0;
    for (uint64_t floats : slots)
        if (floats) bytes += impl.pool->round(floats * 4);
    return bytes;
}

}  // namespace

uint64_t layer_backward_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                        const ForwardOptions& options) {
    problem.validate();
    // As the single-pass queries: the filter pass's workspace for each data choice, the most over both.
    return detail::query_workspace(
        context, Pass::BackwardData, problem, algorithm, options, [&](const detail::Choice& data) {
            return detail::query_workspace(
                context, Pass::BackwardFilter, problem, algorithm, options, [&](const detail::Choice& filter) {
                    return step_plan(context, problem, data, filter, options).workspace_bytes;
                });
        });
}

LayerBackwardStats layer_backward(Context& context, const ConvProblem& problem, const Tensor& input,
                                  const Tensor& filter, const Tensor& grad_output, Tensor& grad_input,
                                  Tensor& grad_filter, Tensor* grad_bias, Algorithm algorithm,
                                  const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    impl.device->throw_if_lost();
    problem.validate();
    const DataOperands data_ops = data_operands(impl, problem, grad_output, filter, grad_input);
    const FilterOperands filter_ops = filter_operands(impl, problem, input, grad_output, grad_filter, grad_bias);
    if (detail::overlaps(grad_input, grad_filter) || (grad_bias && detail::overlaps(*grad_bias, grad_input)))
        throw Error(ErrorCategory::InvalidArgument, "grad_input, grad_filter and grad_bias must be different tensors");
    detail::check_not_aliased(grad_input, "grad_input", {&input});
    detail::check_not_aliased(grad_filter, "grad_filter", {&filter});
    if (grad_bias) detail::check_not_aliased(*grad_bias, "grad_bias", {&filter});
    const StepPlan plan =
        step_plan(context, problem, detail::choose_algorithm(context, Pass::BackwardData, problem, algorithm, options),
                  detail::choose_algorithm(context, Pass::BackwardFilter, problem, algorithm, options), options);
    const PassPlan &data = plan.data, &filter_plan = plan.filter;

    LayerBackwardStats stats;
    stats.data_algorithm = data.algorithm(), stats.filter_algorithm = filter_plan.algorithm();
    stats.data_workspace_bytes = data.workspace_bytes(), stats.filter_workspace_bytes = filter_plan.workspace_bytes();
    stats.data_chunks = data.chunks(), stats.filter_chunks = filter_plan.chunks();
    stats.step.algorithm = data.algorithm();
    stats.step.workspace_bytes = plan.workspace_bytes;
    stats.step.chunks = data.chunks() + filter_plan.chunks();
    stats.step.partial_products = filter_plan.partial_products();
    stats.step.bias_pieces = filter_plan.bias_pieces(problem);
    stats.step.operand_bytes =
        detail::operand_bytes({&filter_ops.x, &data_ops.w, &data_ops.dy, &data_ops.dx, &filter_ops.dw, &filter_ops.db});
    if (plan.shared) {
        detail::run_pass(context, impl, stats.step, plan.slots,
                         [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                             record_data_pass(impl, stream, problem, data, data_ops, workspace);
                             record_filter_pass(impl, stream, problem, filter_plan, filter_ops, workspace);
                         });
        return stats;
    }
    // One pass after the other, each on its own workspace: the step's figures are their sums and maxima.
    RunStats first, second;
    detail::run_pass(context, impl, first, data.slots(),
                     [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                         record_data_pass(impl, stream, problem, data, data_ops, workspace);
                     });
    detail::run_pass(context, impl, second, filter_plan.slots(),
                     [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                         record_filter_pass(impl, stream, problem, filter_plan, filter_ops, workspace);
                     });
    stats.step.gpu_ms = first.gpu_ms + second.gpu_ms;
    stats.step.gpu_timed = first.gpu_timed && second.gpu_timed;
    stats.step.wall_ms = first.wall_ms + second.wall_ms;
    stats.step.peak_bytes = std::max(first.peak_bytes, second.peak_bytes);
    stats.step.peak_reserved_bytes = std::max(first.peak_reserved_bytes, second.peak_reserved_bytes);
    stats.step.driver_allocations = first.driver_allocations + second.driver_allocations;
    stats.step.dispatches = first.dispatches + second.dispatches;
    return stats;
}

}  // namespace vkconv
