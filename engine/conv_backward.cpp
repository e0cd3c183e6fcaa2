// The public backward passes: argument checks, algorithm choice, recording.
//
// Algorithms: direct (a gather per dx value, a fixed-order reduction per dw and db value) and im2col
// (GEMMs against the im2col matrix, in the forward's chunks). Auto picks im2col unless there is one input
// channel per group (depthwise), where a GEMM is all overhead. The bias gradient is a direct reduction.
#include <array>
#include <string>

#include "conv_constants.hpp"
#include "conv_depthwise.hpp"
#include "conv_lowered.hpp"
#include "conv_pass.hpp"
#include "elementwise.hpp"
#include "vkconv/backward.hpp"

namespace vkconv {
namespace {

Algorithm resolve_backward(detail::ContextImpl& context, const ConvProblem& p, Algorithm algorithm,
                           detail::DepthwisePass pass, const ForwardOptions& options) {
    if (algorithm == Algorithm::Mec)
        throw Error(ErrorCategory::Unsupported,
                    std::string(pass == detail::DepthwisePass::BackwardData ? "backward_data" : "backward_filter") +
                        ": the mec algorithm is available for forward only in this version");
    if (algorithm != Algorithm::Auto) return algorithm;
    if (detail::is_depthwise(p)) {
        try {
            detail::plan_depthwise(context, p, pass, options);
            return Algorithm::Depthwise;
        } catch (const Error& e) {
            if (e.category() != ErrorCategory::Unsupported) throw;
            return Algorithm::Direct;
        }
    }
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

uint64_t binding_limit(const detail::ContextImpl& context, const ForwardOptions& options) {
    const uint64_t range = context.device->limits().maxStorageBufferRange;
    return options.max_binding_bytes ? std::min(range, options.max_binding_bytes) : range;
}

// im2col backward-filter's plan, split count and exact workspace (lowered chunk + split-K partials).
struct FilterPlan {
    detail::LoweredPlan lowered;
    uint32_t splits = 1;
    uint64_t partial_floats = 0;
    uint64_t workspace_bytes = 0;
};

FilterPlan plan_backward_filter(detail::ContextImpl& context, const ConvProblem& p, const ForwardOptions& options) {
    FilterPlan plan;
    plan.lowered = detail::plan_lowered(context, p, Algorithm::Im2col, options);
    plan.splits = detail::backward_filter_splits(context, p, plan.lowered, binding_limit(context, options));
    plan.partial_floats = detail::backward_filter_partial_floats(p, plan.splits);
    plan.workspace_bytes =
        plan.lowered.workspace_bytes + (plan.partial_floats ? context.pool->round(plan.partial_floats * 4) : 0);
    return plan;
}

void record_direct_backward_filter(detail::ContextImpl& impl, detail::CommandStream& stream, const ConvProblem& p,
                                   const detail::Operand& x, const detail::Operand& dy, const detail::Operand& dw) {
    detail::PipelineDesc desc;
    desc.shader = "conv2d_backward_filter_direct";
    desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(detail::DirectSizes);
    desc.specialization = detail::geometry_constants(p);
    const std::array<detail::Binding, 3> bindings{detail::Binding{x.whole(), false}, detail::Binding{dy.whole(), false},
                                                  detail::Binding{dw.whole(), true}};
    detail::dispatch_elements(impl, stream, impl.pipelines->get(desc), bindings, detail::direct_sizes(p),
                              static_cast<uint64_t>(p.filter_elements()));
}

struct BiasPush {
    uint32_t dy_offset, images, accumulate;
    uint32_t base, count;
};

// db in chunks of whole images whose dy fits one binding, added up in order.
void record_bias_grad(detail::ContextImpl& impl, detail::CommandStream& stream, const ConvProblem& p,
                      const detail::Operand& dy, const detail::Operand& db, uint64_t max_binding_bytes = 0) {
    const uint64_t y_image = uint64_t(p.K * p.P() * p.Q()), align = impl.pool->alignment();
    uint64_t limit = impl.device->limits().maxStorageBufferRange;
    if (max_binding_bytes) limit = std::min(limit, max_binding_bytes);
    if (y_image * 4 + align > limit)
        throw Error(ErrorCategory::Unsupported, "one image of grad_output (" + std::to_string(y_image * 4) +
                                                    " bytes) exceeds the device's maxStorageBufferRange");
    const int64_t per_chunk = std::max<int64_t>(1, std::min<int64_t>(p.N, int64_t((limit - align) / (y_image * 4))));
    detail::PipelineDesc desc;
    desc.shader = "bias_grad";
    desc.bindings.assign(2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(BiasPush);
    desc.specialization = {detail::kElementwiseWorkgroup, static_cast<uint32_t>(p.K),
                           static_cast<uint32_t>(p.P() * p.Q()), p.layout == Layout::NHWC ? 1u : 0u};
    const detail::Pipeline& pipeline = impl.pipelines->get(desc);
    for (int64_t n0 = 0; n0 < p.N; n0 += per_chunk) {
        const int64_t images = std::min(per_chunk, p.N - n0);
        const detail::Window window = detail::window(dy, n0 * y_image, images * y_image, align);
        const std::array<detail::Binding, 2> bindings{detail::Binding{window.range, false},
                                                      detail::Binding{db.whole(), true}};
        detail::dispatch_elements(
            impl, stream, pipeline, bindings,
            BiasPush{static_cast<uint32_t>(window.delta), static_cast<uint32_t>(images), n0 > 0 ? 1u : 0u, 0, 0},
            static_cast<uint64_t>(p.K));
    }
}

}  // namespace

uint64_t backward_data_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                       const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    problem.validate();
    const Algorithm chosen = resolve_backward(impl, problem, algorithm, detail::DepthwisePass::BackwardData, options);
    if (chosen == Algorithm::Depthwise)
        return detail::plan_depthwise(impl, problem, detail::DepthwisePass::BackwardData, options).workspace_bytes;
    return lowered_workspace(impl, problem, chosen, options);
}

uint64_t backward_filter_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                         const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    problem.validate();
    const Algorithm chosen =
        resolve_backward(impl, problem, algorithm, detail::DepthwisePass::BackwardFilter, options);
    if (chosen == Algorithm::Depthwise)
        return detail::plan_depthwise(impl, problem, detail::DepthwisePass::BackwardFilter, options).workspace_bytes;
    if (chosen != Algorithm::Im2col) return 0;
    return plan_backward_filter(impl, problem, options).workspace_bytes;
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
    stats.algorithm = resolve_backward(impl, problem, algorithm, detail::DepthwisePass::BackwardData, options);
    if (stats.algorithm == Algorithm::Depthwise) {
        const auto plan = detail::plan_depthwise(impl, problem, detail::DepthwisePass::BackwardData, options);
        stats.workspace_bytes = plan.workspace_bytes;
        stats.chunks = plan.chunks;
        detail::run_pass(context, impl, stats, {plan.workspace_floats},
                         [&](detail::CommandStream& stream, std::span<const detail::Operand>) {
                             detail::record_depthwise_backward_data(impl, stream, problem, dy, w, dx, plan);
                         });
        return stats;
    }
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
    stats.algorithm = resolve_backward(impl, problem, algorithm, detail::DepthwisePass::BackwardFilter, options);
    if (stats.algorithm == Algorithm::Depthwise) {
        const auto plan = detail::plan_depthwise(impl, problem, detail::DepthwisePass::BackwardFilter, options);
        stats.workspace_bytes = plan.workspace_bytes;
        stats.chunks = plan.chunks;
        detail::run_pass(context, impl, stats, {plan.workspace_floats},
                         [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                             detail::record_depthwise_backward_filter(impl, stream, problem, x, dy, dw, plan,
                                                                      workspace[0]);
                             if (grad_bias) record_bias_grad(impl, stream, problem, dy, db, options.max_binding_bytes);
                         });
        return stats;
    }
    if (stats.algorithm == Algorithm::Im2col) {
        const FilterPlan plan = plan_backward_filter(impl, problem, options);
        stats.workspace_bytes = plan.workspace_bytes;
        stats.chunks = plan.lowered.chunks;
        detail::run_pass(context, impl, stats, {plan.lowered.scratch_floats, plan.partial_floats},
                         [&](detail::CommandStream& stream, std::span<const detail::Operand> workspace) {
                             detail::record_im2col_backward_filter(impl, stream, problem, x, dy, dw, plan.lowered,
                                                                   workspace[0], plan.splits, workspace[1]);
                             if (grad_bias) record_bias_grad(impl, stream, problem, dy, db, options.max_binding_bytes);
                         });
        return stats;
    }
    for (const auto& [op, role] : {std::pair{&x, "input"}, {&dy, "grad_output"}, {&dw, "grad_filter"}})
        detail::check_whole_binding(impl, *op, role);
    detail::run_pass(context, impl, stats, {}, [&](detail::CommandStream& stream, std::span<const detail::Operand>) {
        record_direct_backward_filter(impl, stream, problem, x, dy, dw);
        if (grad_bias) record_bias_grad(impl, stream, problem, dy, db, options.max_binding_bytes);
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
    detail::run_pass(context, impl, stats, {}, [&](detail::CommandStream& stream, std::span<const detail::Operand>) {
        record_bias_grad(impl, stream, problem, dy, db);
    });
    return stats;
}

}  // namespace vkconv
