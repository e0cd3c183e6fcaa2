// The public backward passes: argument checks, then one plan (conv/pass_plan.hpp) run per call, or both of
// a layer's plans in one submission; and the transposed convolution, which is a backward-data pass.
#include <string>

#include "context/pass.hpp"
#include "context/recording_state.hpp"
#include "context/tensor_storage.hpp"
#include "conv/bias_add.hpp"
#include "select/auto_choice.hpp"
#include "select/pass_call.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/recording.hpp"

namespace vkconv {
namespace {

// Backward-data's operands by role: it reads dy (output) and w (filter) and writes dx (input).
detail::ConvOperands data_operands(detail::ContextImpl& impl, const ConvProblem& p, const Tensor& grad_output,
                                   const Tensor& filter, const Tensor& grad_input) {
    detail::ConvOperands ops;
    ops.output = detail::tensor_operand(impl, grad_output, "grad_output", p.output_shape(), p.data_type);
    ops.filter = detail::tensor_operand(impl, filter, "filter", p.filter_shape(), p.data_type);
    ops.input = detail::tensor_operand(impl, grad_input, "grad_input", p.input_shape(), p.data_type);
    detail::check_not_aliased(grad_input, "grad_input", {&grad_output, &filter});
    return ops;
}

// Backward-filter's: it reads x (input) and dy (output) and writes dw (filter) and, when asked, db (bias).
detail::ConvOperands filter_operands(detail::ContextImpl& impl, const ConvProblem& p, const Tensor& input,
                                     const Tensor& grad_output, const Tensor& grad_filter, const Tensor* grad_bias) {
    if (grad_bias && !p.has_bias)
        throw Error(ErrorCategory::InvalidArgument,
                    "a grad_bias tensor was given but the problem has has_bias = false");
    detail::ConvOperands ops;
    ops.input = detail::tensor_operand(impl, input, "input", p.input_shape(), p.data_type);
    ops.output = detail::tensor_operand(impl, grad_output, "grad_output", p.output_shape(), p.data_type);
    ops.filter =
        detail::tensor_operand(impl, grad_filter, "grad_filter", p.filter_shape(), p.weight_gradient_type());
    if (grad_bias) {
        ops.bias = detail::tensor_operand(impl, *grad_bias, "grad_bias", p.bias_shape(), p.weight_gradient_type());
        if (detail::overlaps(*grad_bias, grad_filter))
            throw Error(ErrorCategory::InvalidArgument, "grad_bias and grad_filter must be different tensors");
        detail::check_not_aliased(*grad_bias, "grad_bias", {&input, &grad_output});
    }
    detail::check_not_aliased(grad_filter, "grad_filter", {&input, &grad_output});
    return ops;
}

}  // namespace

uint64_t backward_data_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                       const PassOptions& options) {
    return detail::workspace_query(context, Pass::BackwardData, problem, algorithm, options);
}

uint64_t backward_filter_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                         const PassOptions& options) {
    return detail::workspace_query(context, Pass::BackwardFilter, problem, algorithm, options);
}

namespace {

RunStats backward_data_to(detail::CallTarget call, const ConvProblem& problem, const Tensor& grad_output,
                          const Tensor& filter, Tensor& grad_input, Algorithm algorithm, const PassOptions& options) {
    const auto lock = detail::open_door(call.context, problem);
    const detail::ConvOperands ops =
        data_operands(detail::impl_of(call.context), problem, grad_output, filter, grad_input);
    const detail::PassCall pass{Pass::BackwardData, problem, ops, {&grad_output, &filter, &grad_input}, algorithm};
    return detail::run_call(call.context, call.target, pass, options);
}

RunStats backward_filter_to(detail::CallTarget call, const ConvProblem& problem, const Tensor& input,
                            const Tensor& grad_output, Tensor& grad_filter, Tensor* grad_bias, Algorithm algorithm,
                            const PassOptions& options) {
    const auto lock = detail::open_door(call.context, problem);
    const detail::ConvOperands ops =
        filter_operands(detail::impl_of(call.context), problem, input, grad_output, grad_filter, grad_bias);
    const detail::PassCall pass{
        Pass::BackwardFilter, problem, ops, {&input, &grad_output, &grad_filter, grad_bias}, algorithm};
    return detail::run_call(call.context, call.target, pass, options);
}

// Backward-bias has one algorithm, the bias-gradient kernel, planned under the name Direct.
RunStats backward_bias_to(detail::CallTarget call, const ConvProblem& problem, const Tensor& grad_output,
                          Tensor& grad_bias, const PassOptions& options) {
    const auto lock = detail::open_door(call.context, problem);
    detail::ContextImpl& impl = detail::impl_of(call.context);
    detail::ConvOperands ops;
    ops.output = detail::tensor_operand(impl, grad_output, "grad_output", problem.output_shape(), problem.data_type);
    ops.bias =
        detail::tensor_operand(impl, grad_bias, "grad_bias", problem.bias_shape(), problem.weight_gradient_type());
    detail::check_not_aliased(grad_bias, "grad_bias", {&grad_output});
    const detail::PassCall pass{Pass::BackwardBias, problem, ops, {&grad_output, &grad_bias}, Algorithm::Direct};
    return detail::run_call(call.context, call.target, pass, options);
}

}  // namespace

uint64_t backward_bias_workspace_bytes(const Context& context, const ConvProblem& problem, const PassOptions& options) {
    return detail::workspace_query(context, Pass::BackwardBias, problem, Algorithm::Direct, options);
}

RunStats backward_data(Target target, const ConvProblem& problem, const Tensor& grad_output, const Tensor& filter,
                       Tensor& grad_input, Algorithm algorithm, const PassOptions& options) {
    return backward_data_to(detail::call_target(target, options), problem, grad_output, filter, grad_input, algorithm,
                            options);
}

RunStats backward_filter(Target target, const ConvProblem& problem, const Tensor& input, const Tensor& grad_output,
                         Tensor& grad_filter, Tensor* grad_bias, Algorithm algorithm, const PassOptions& options) {
    return backward_filter_to(detail::call_target(target, options), problem, input, grad_output, grad_filter,
                              grad_bias, algorithm, options);
}

RunStats backward_bias(Target target, const ConvProblem& problem, const Tensor& grad_output, Tensor& grad_bias,
                       const PassOptions& options) {
    return backward_bias_to(detail::call_target(target, options), problem, grad_output, grad_bias, options);
}

namespace {

// A transposed convolution is its convolution's backward-data pass: the input plays dy, the output dx; the
// bias, when there is one, is added once the output is whole (conv/bias_add.hpp).
RunStats conv_transpose_to(detail::CallTarget call, const ConvTransposeProblem& problem, const Tensor& input,
                           const Tensor& filter, const Tensor* bias, Tensor& output, Algorithm algorithm,
                           const PassOptions& options) {
    problem.validate();  // before its convolution is formed
    const ConvProblem q = problem.convolution();
    const auto lock = detail::open_door(call.context, q);
    if (bias && !problem.has_bias)
        throw Error(ErrorCategory::InvalidArgument, "a bias tensor was given but the problem has has_bias = false");
    if (!bias && problem.has_bias)
        throw Error(ErrorCategory::InvalidArgument, "the problem has has_bias = true but no bias tensor was given");
    detail::ContextImpl& impl = detail::impl_of(call.context);
    detail::ConvOperands ops;
    const DataType type = problem.data_type;
    ops.output = detail::tensor_operand(impl, input, "input", problem.input_shape(), type);
    ops.filter = detail::tensor_operand(impl, filter, "filter", problem.filter_shape(), type);
    ops.input = detail::tensor_operand(impl, output, "output", problem.output_shape(), type);
    detail::check_not_aliased(output, "output", {&input, &filter});
    if (bias) {
        ops.bias = detail::tensor_operand(impl, *bias, "bias", problem.bias_shape(), type);
        detail::check_not_aliased(output, "output", {bias});
    }
    detail::PassCall pass{Pass::BackwardData, q, ops, {&input, &filter, &output, bias}, algorithm};
    const detail::CallPlan planned = detail::plan_for_call(call.context, call.target, pass, options);
    if (!problem.output_beyond_result()) return detail::run_plan(call.context, call.target, pass, planned);

    // The output reaches past what the convolution covers: its input (the result, with the bias) goes to a
    // staging tensor of the problem's type, counted as workspace, and is placed in the output with the bias
    // alone around it, in the same submission (copies: each value is still rounded once).
    Tensor staged(call.context, q.input_shape(), type);
    detail::ConvOperands staged_ops = ops;
    staged_ops.input = detail::tensor_operand(impl, staged, "staged result", q.input_shape(), type);
    const auto origin = problem.convolution_origin();
    const detail::Placement placement{problem.layout, type,      problem.N, problem.K, problem.P(), problem.Q(),
                                      q.H,            q.W,       origin[0], origin[1]};
    const detail::AfterPass place{
        [&](detail::CommandStream& stream) {
            detail::record_place_output(impl, stream, placement, staged_ops.input, ops.bias, ops.input);
        },
        {&ops.output, &ops.filter, &ops.bias, &ops.input}};
    const detail::PassCall staged_pass{Pass::BackwardData, q, staged_ops, {&input, &filter, &output, bias, &staged},
                                       algorithm};
    RunStats stats = detail::run_plan(call.context, call.target, staged_pass, planned, &place);
    stats.workspace_bytes += impl.pool->round(staged.bytes());
    return stats;
}

}  // namespace

uint64_t conv_transpose_workspace_bytes(const Context& context, const ConvTransposeProblem& problem,
                                        Algorithm algorithm, const PassOptions& options) {
    const auto lock = detail::serialise(context);
    problem.validate();
    const ConvProblem q = problem.convolution();
    const uint64_t staged =
        problem.output_beyond_result()
            ? detail::impl_of(context).pool->round(uint64_t(q.input_elements()) * element_bytes(problem.data_type))
            : 0;
    return detail::workspace_query(context, Pass::BackwardData, q, algorithm, options) + staged;
}

RunStats conv_transpose(Target target, const ConvTransposeProblem& problem, const Tensor& input,
                        const Tensor& filter, const Tensor* bias, Tensor& output, Algorithm algorithm,
                        const PassOptions& options) {
    return conv_transpose_to(detail::call_target(target, options), problem, input, filter, bias, output, algorithm,
                             options);
}

namespace {

// A layer step's two plans. They share one workspace (each slot the larger pass's) and one submission
// where their slots mean the same (both tiled, or neither) and the shared sum fits the workspace limit;
// otherwise they run one after the other, each with its own workspace.
struct StepPlan {
    detail::PassPlan data, filter;
    bool shared = true;
    std::vector<uint64_t> slots;  // shared only
    uint64_t workspace_bytes = 0;
};

detail::Planned<StepPlan> step_plan(const Context& context, const ConvProblem& p, const detail::Choice& data,
                                    const detail::Choice& filter, const PassOptions& options) {
    auto data_plan = detail::plan_choice(context, p, Pass::BackwardData, data, options);
    if (!data_plan) return data_plan.refusal();
    auto filter_plan = detail::plan_choice(context, p, Pass::BackwardFilter, filter, options);
    if (!filter_plan) return filter_plan.refusal();
    StepPlan step{*data_plan, *filter_plan};
    // (Sliced passes' slots differ in meaning: a step of them never shares.)
    step.shared = step.data.tiled() == step.filter.tiled() && !step.data.sliced() && !step.filter.sliced();
    if (step.shared) {
        step.slots = step.data.slots();
        const std::vector<uint64_t> other = step.filter.slots();
        for (size_t i = 0; i < step.slots.size(); ++i) step.slots[i] = std::max(step.slots[i], other[i]);
        step.workspace_bytes = detail::workspace_bytes_of(detail::impl_of(context), step.slots);
        step.shared = !options.workspace_limit || step.workspace_bytes <= options.workspace_limit;
    }
    if (!step.shared) step.workspace_bytes = std::max(step.data.workspace_bytes(), step.filter.workspace_bytes());
    return step;
}

}  // namespace

uint64_t layer_backward_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                        const PassOptions& options) {
    const auto lock = detail::serialise(context);
    problem.validate();
    // As the single-pass queries: the filter pass's workspace for each data choice, the most over both.
    return detail::query_workspace(context, Pass::BackwardData, problem, algorithm, options,
                                   [&](const detail::Choice& data) {
                                       return detail::query_workspace(
                                           context, Pass::BackwardFilter, problem, algorithm, options,
                                           [&](const detail::Choice& filter) -> detail::Planned<uint64_t> {
                                               auto step = step_plan(context, problem, data, filter, options);
                                               if (!step) return step.refusal();
                                               return step->workspace_bytes;
                                           });
                                   })
        .value();
}

namespace {

LayerBackwardStats layer_backward_to(detail::CallTarget call, const ConvProblem& problem, const Tensor& input,
                                     const Tensor& filter, const Tensor& grad_output, Tensor& grad_input,
                                     Tensor& grad_filter, Tensor* grad_bias, Algorithm algorithm,
                                     const PassOptions& options) {
    Context& context = call.context;
    const detail::PassTarget& target = call.target;
    const auto lock = detail::open_door(context, problem);
    detail::ContextImpl& impl = detail::impl_of(context);
    const detail::ConvOperands data_ops = data_operands(impl, problem, grad_output, filter, grad_input);
    const detail::ConvOperands filter_ops = filter_operands(impl, problem, input, grad_output, grad_filter, grad_bias);
    if (detail::overlaps(grad_input, grad_filter) || (grad_bias && detail::overlaps(*grad_bias, grad_input)))
        throw Error(ErrorCategory::InvalidArgument, "grad_input, grad_filter and grad_bias must be different tensors");
    detail::check_not_aliased(grad_input, "grad_input", {&input});
    detail::check_not_aliased(grad_filter, "grad_filter", {&filter});
    if (grad_bias) detail::check_not_aliased(*grad_bias, "grad_bias", {&filter});
    const Tensor* const tensors[] = {&input, &filter, &grad_output, &grad_input, &grad_filter, grad_bias};
    detail::check_workspace(options, tensors);
    const PassOptions planning = detail::planning_options(impl, options, target);
    const detail::Choice data_choice = detail::choose_algorithm(context, Pass::BackwardData, problem, algorithm, planning);
    const detail::Choice filter_choice =
        detail::choose_algorithm(context, Pass::BackwardFilter, problem, algorithm, planning);
    StepPlan plan = step_plan(context, problem, data_choice, filter_choice, planning).value();
    // Tensors paged otherwise than plans assume: each pass planned for them, one after the other.
    const detail::Paging data_paging = detail::paging_of(data_ops), filter_paging = detail::paging_of(filter_ops);
    if (!detail::plan_fits_paging(problem, plan.data, data_paging) ||
        !detail::plan_fits_paging(problem, plan.filter, filter_paging)) {
        plan.data = detail::plan_for_operands(impl, problem, plan.data, planning, data_ops);
        plan.filter = detail::plan_for_operands(impl, problem, plan.filter, planning, filter_ops);
        plan.shared = false;
        plan.workspace_bytes = std::max(plan.data.workspace_bytes(), plan.filter.workspace_bytes());
    }
    if (target.recording)
        for (const Tensor* t :
             {&input, &filter, &grad_output, static_cast<const Tensor*>(&grad_input),
              static_cast<const Tensor*>(&grad_filter), static_cast<const Tensor*>(grad_bias), options.workspace})
            target.recording->keep(t);
    const detail::PassPlan &data = plan.data, &filter_plan = plan.filter;
    const RunStats data_stats = data.planned_stats(problem, 0), filter_stats = filter_plan.planned_stats(problem, 0);

    LayerBackwardStats stats;
    stats.data_algorithm = data_stats.algorithm, stats.filter_algorithm = filter_stats.algorithm;
    stats.data_workspace_bytes = data_stats.workspace_bytes,
    stats.filter_workspace_bytes = filter_stats.workspace_bytes;
    stats.data_chunks = data_stats.chunks, stats.filter_chunks = filter_stats.chunks;
    stats.step.algorithm = data_stats.algorithm;
    stats.data_chosen_by = stats.step.chosen_by = data_choice.source;
    stats.filter_chosen_by = filter_choice.source;
    stats.step.workspace_bytes = plan.workspace_bytes;
    stats.step.chunks = data_stats.chunks + filter_stats.chunks;
    stats.step.partial_products = filter_stats.partial_products;
    stats.step.bias_pieces = filter_stats.bias_pieces;
    stats.step.operand_bytes = detail::operand_bytes(
        {&filter_ops.input, &data_ops.filter, &data_ops.output, &data_ops.input, &filter_ops.filter, &filter_ops.bias});
    if (plan.shared) {
        detail::run_pass(impl, stats.step, plan.slots, target,
                         [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                             detail::record_pass(impl, stream, problem, data, data_ops, workspace);
                             detail::record_pass(impl, stream, problem, filter_plan, filter_ops, workspace);
                         });
        return stats;
    }
    // One pass after the other, each on its own workspace: the step's figures are their sums and maxima.
    RunStats first, second;
    detail::run_pass(impl, first, data.slots(), target,
                     [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                         detail::record_pass(impl, stream, problem, data, data_ops, workspace);
                     });
    detail::run_pass(impl, second, filter_plan.slots(), target,
                     [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                         detail::record_pass(impl, stream, problem, filter_plan, filter_ops, workspace);
                     });
    if (target.recording) --target.recording->passes;  // the step is one pass of the recording
    stats.step.gpu_ms = first.gpu_ms + second.gpu_ms;
    stats.step.gpu_timed = first.gpu_timed && second.gpu_timed;
    stats.step.wall_ms = first.wall_ms + second.wall_ms;
    stats.step.peak_bytes = std::max(first.peak_bytes, second.peak_bytes);
    stats.step.peak_reserved_bytes = std::max(first.peak_reserved_bytes, second.peak_reserved_bytes);
    stats.step.driver_allocations = first.driver_allocations + second.driver_allocations;
    stats.step.dispatches = first.dispatches + second.dispatches;
    return stats;
}

}  // namespace

LayerBackwardStats layer_backward(Target target, const ConvProblem& problem, const Tensor& input,
                                  const Tensor& filter, const Tensor& grad_output, Tensor& grad_input,
                                  Tensor& grad_filter, Tensor* grad_bias, Algorithm algorithm,
                                  const PassOptions& options) {
    return layer_backward_to(detail::call_target(target, options), problem, input, filter, grad_output, grad_input,
                             grad_filter, grad_bias, algorithm, options);
}


}  // namespace vkconv
