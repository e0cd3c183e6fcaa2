// The public backward passes: argument checks, algorithm choice, recording.
//
// This version runs the direct algorithm for every backward pass (a gather per dx value, a fixed-order
// reduction per dw and db value); the lowered backward algorithms build on it.
#include <array>
#include <string>

#include "conv_constants.hpp"
#include "conv_pass.hpp"
#include "elementwise.hpp"
#include "vkconv/backward.hpp"

namespace vkconv {
namespace {

Algorithm resolve_backward(Algorithm algorithm, const char* pass) {
    if (algorithm == Algorithm::Auto || algorithm == Algorithm::Direct) return Algorithm::Direct;
    throw Error(ErrorCategory::Unsupported, std::string(pass) + " runs the direct algorithm in this version; " +
                                                to_string(algorithm) + " is available for forward only");
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

uint64_t backward_data_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm) {
    detail::impl_of(context);
    problem.validate();
    resolve_backward(algorithm, "backward_data");
    return 0;
}

uint64_t backward_filter_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm) {
    detail::impl_of(context);
    problem.validate();
    resolve_backward(algorithm, "backward_filter");
    return 0;
}

RunStats backward_data(Context& context, const ConvProblem& problem, const Tensor& grad_output, const Tensor& filter,
                       Tensor& grad_input, Algorithm algorithm) {
    detail::ContextImpl& impl = detail::impl_of(context);
    impl.device->throw_if_lost();
    problem.validate();
    const auto dy = detail::tensor_operand(impl, grad_output, "grad_output", problem.output_shape());
    const auto w = detail::tensor_operand(impl, filter, "filter", problem.filter_shape());
    const auto dx = detail::tensor_operand(impl, grad_input, "grad_input", problem.input_shape());
    detail::check_not_aliased(grad_input, "grad_input", {&grad_output, &filter});
    RunStats stats;
    stats.algorithm = resolve_backward(algorithm, "backward_data");
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
                         Tensor& grad_filter, Tensor* grad_bias, Algorithm algorithm) {
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
    stats.algorithm = resolve_backward(algorithm, "backward_filter");
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
