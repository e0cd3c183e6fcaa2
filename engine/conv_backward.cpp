// The public backward passes: argument checks, algorithm choice, recording.
//
// Algorithms: direct (a gather per dx value, a fixed-order reduction per dw and db value) and im2col
// (GEMMs against the im2col matrix, in the forward's chunks). Auto picks im2col unless there is one input
// channel per group (depthwise), where a GEMM is all overhead. The bias gradient is a direct reduction.
#include <array>
#include <string>

#include "conv_constants.hpp"
#include "conv_lowered.hpp"
#include "conv_pass.hpp"
#include "elementwise.hpp"
#include "vkconv/backward.hpp"

namespace vkconv {
namespace {

Algorithm resolve_backward(detail::ContextImpl& context, const ConvProblem& p, Algorithm algorithm, const char* pass,
                           const ForwardOptions& options) {
    if (algorithm == Algorithm::Mec)
        throw Error(ErrorCategory::Unsupported, std::string(pass) +
                                                    ": the mec algorithm is available for forward "
                                                    "only in this version (direct and im2col run backward)");
    if (algorithm != Algorithm::Auto) return algorithm;
    if (p.channels_per_group() == 1) return Algorithm::Direct;
    try {
        detail::plan_lowered(context, p, Algorithm::Im2col, options);
        return Algorithm::Im2col;
    } catch (const Error& e) {
        if (e.category() != ErrorCategory::Unsupported) throw;
        return Algorithm::Direct;
    }
}

uint64_t lowered_workspace(detail::ContextImpl& context, const ConvProblem& p, Algorithm algorithm,
                           const ForwardOptions& options) {
    return algorithm == Algorithm::Im2col ? detail::plan_lowered(context, p, Algorithm::Im2col, options).workspace_bytes
                                          : 0;
}

void record_backward_filter(detail::ContextImpl& impl, detail::CommandStream& stream, const ConvProblem& p,
                            const detail::Operand& x, const detail::Operand& dy, const detail::Operand* dw,
                            const detail::Operand* db) {
    detail::PipelineDesc desc;
    desc.shader = "conv2d_backward_filter_direct";
    desc.bindings.assign(4, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(detail::DirectSizes);
    desc.specialization = detail::geometry_constants(p);
    desc.specialization.push_back(db ? 1u : 0u);
    const detail::Pipeline& pipeline = impl.pipelines->get(desc);
    // Without dw (bias only) or db the shader still needs the bindings: dy stands in, never written.
    const std::array<detail::Binding, 4> bindings{detail::Binding{x.whole(), false}, detail::Binding{dy.whole(), false},
                                                  detail::Binding{dw ? dw->whole() : dy.whole(), dw != nullptr},
                                                  detail::Binding{db ? db->whole() : dy.whole(), db != nullptr}};
    const uint64_t filter_elements = static_cast<uint64_t>(p.filter_elements());
    detail::DirectSizes push = detail::direct_sizes(p);
    if (dw) {
        detail::dispatch_elements(impl, stream, pipeline, bindings, push, filter_elements + (db ? p.K : 0));
    } else {
        // Bias only: the invocations past the filter's end.
        const uint64_t per_dispatch = uint64_t{impl.max_workgroups(0)} * detail::kElementwiseWorkgroup;
        for (uint64_t first = 0; first < uint64_t(p.K); first += per_dispatch) {
            push.base = static_cast<uint32_t>(filter_elements + first);
            push.count = static_cast<uint32_t>(std::min<uint64_t>(per_dispatch, p.K - first));
            stream.dispatch(pipeline, bindings, &push,
                            (push.count + detail::kElementwiseWorkgroup - 1) / detail::kElementwiseWorkgroup);
        }
    }
}

}  // namespace

uint64_t backward_data_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                       const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    problem.validate();
    return lowered_workspace(impl, problem, resolve_backward(impl, problem, algorithm, "backward_data", options),
                             options);
}

uint64_t backward_filter_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                         const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    problem.validate();
    return lowered_workspace(impl, problem, resolve_backward(impl, problem, algorithm, "backward_filter", options),
                             options);
}

RunStats backward_data(Context& context, const ConvProblem& problem, const Tensor& grad_output, const Tensor& filter,
                       Tensor& grad_input, Algorithm algorithm, const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    impl.device->throw_if_lost();
    problem.validate();
    const auto dy = detail::tensor_operand(impl, grad_output, "grad_output", problem.output_shape());
    const auto w = detail::tensor_operand(impl, filter, "filter", problem.filter_shape());
    const auto dx = detail::tensor_operand(impl, grad_input, "grad_input", problem.input_shape());
    detail::check_not_aliased(grad_input, "grad_input", {&grad_output, &filter});
    RunStats stats;
    stats.algorithm = resolve_backward(impl, problem, algorithm, "backward_data", options);
    if (stats.algorithm == Algorithm::Im2col) {
        const auto plan = detail::plan_lowered(impl, problem, Algorithm::Im2col, options);
        stats.workspace_bytes = plan.workspace_bytes;
        stats.chunks = plan.chunks;
        detail::run_pass(context, impl, stats, {plan.scratch_floats},
                         [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                             detail::record_im2col_backward_data(impl, stream, problem, dy, w, dx, plan, workspace[0]);
                         });
        return stats;
    }
    for (const auto& [op, role] : {std::pair{&dy, "grad_output"}, {&w, "filter"}, {&dx, "grad_input"}})
        detail::check_whole_binding(impl, *op, role);
    detail::run_pass(context, impl, stats, {}, [&](detail::CommandStream& stream, std::span<const detail::Operand>) {
        detail::PipelineDesc desc;
        desc.shader = "conv2d_backward_data_direct";
        desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
        desc.push_constant_bytes = sizeof(detail::DirectSizes);
        desc.specialization = detail::geometry_constants(problem);
        const detail::Pipeline& pipeline = impl.pipelines->get(desc);
        const std::array<detail::Binding, 3> bindings{
            detail::Binding{dy.whole(), false}, detail::Binding{w.whole(), false}, detail::Binding{dx.whole(), true}};
        detail::dispatch_elements(impl, stream, pipeline, bindings, detail::direct_sizes(problem),
                                  static_cast<uint64_t>(problem.input_elements()));
    });
    return stats;
}

RunStats backward_filter(Context& context, const ConvProblem& problem, const Tensor& input, const Tensor& grad_output,
                         Tensor& grad_filter, Tensor* grad_bias, Algorithm algorithm, const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    impl.device->throw_if_lost();
    problem.validate();
    if (grad_bias && !problem.has_bias)
        throw Error(ErrorCategory::InvalidArgument,
                    "a grad_bias tensor was given but the problem has has_bias = false");
    const auto x = detail::tensor_operand(impl, input, "input", problem.input_shape());
    const auto dy = detail::tensor_operand(impl, grad_output, "grad_output", problem.output_shape());
    const auto dw = detail::tensor_operand(impl, grad_filter, "grad_filter", problem.filter_shape());
    detail::Operand db;
    if (grad_bias) {
        db = detail::tensor_operand(impl, *grad_bias, "grad_bias", problem.bias_shape());
        if (grad_bias->storage() == grad_filter.storage())
            throw Error(ErrorCategory::InvalidArgument, "grad_bias and grad_filter must be different tensors");
        detail::check_not_aliased(*grad_bias, "grad_bias", {&input, &grad_output});
    }
    detail::check_not_aliased(grad_filter, "grad_filter", {&input, &grad_output});
    RunStats stats;
    stats.algorithm = resolve_backward(impl, problem, algorithm, "backward_filter", options);
    if (stats.algorithm == Algorithm::Im2col) {
        const auto plan = detail::plan_lowered(impl, problem, Algorithm::Im2col, options);
        stats.workspace_bytes = plan.workspace_bytes;
        stats.chunks = plan.chunks;
        if (grad_bias) detail::check_whole_binding(impl, dy, "grad_output");
        detail::run_pass(context, impl, stats, {plan.scratch_floats},
                         [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                             detail::record_im2col_backward_filter(impl, stream, problem, x, dy, dw, plan,
                                                                   workspace[0]);
                             if (grad_bias) record_backward_filter(impl, stream, problem, dy, dy, nullptr, &db);
                         });
        return stats;
    }
    for (const auto& [op, role] : {std::pair{&x, "input"}, {&dy, "grad_output"}, {&dw, "grad_filter"}})
        detail::check_whole_binding(impl, *op, role);
    detail::run_pass(context, impl, stats, {}, [&](detail::CommandStream& stream, std::span<const detail::Operand>) {
        record_backward_filter(impl, stream, problem, x, dy, &dw, grad_bias ? &db : nullptr);
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
    detail::check_whole_binding(impl, dy, "grad_output");
    RunStats stats;
    stats.algorithm = Algorithm::Direct;
    detail::run_pass(context, impl, stats, {}, [&](detail::CommandStream& stream, std::span<const detail::Operand>) {
        record_backward_filter(impl, stream, problem, dy, dy, nullptr, &db);
    });
    return stats;
}

}  // namespace vkconv
