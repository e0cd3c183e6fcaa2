// Plans without running (vkconv/plan.hpp): the pass pipeline of every real pass, on a context made from a
// device model, recorded into a planning stream that lists the dispatches instead of recording them.
#include "vkconv/plan.hpp"

#include <algorithm>
#include <mutex>

#include "context/access.hpp"
#include "context/context_impl.hpp"
#include "conv/operands.hpp"
#include "conv/pass_plan.hpp"
#include "gemm/gemm.hpp"
#include "vulkan/device_model.hpp"

namespace vkconv {
namespace detail {

namespace {

// Distinct stand-in buffers for a plan's operands: never bound, only told apart (barriers, aliasing).
class FakeBuffers {
public:
    // `elements` of `element_bytes` each (a tensor of a 16-bit problem: 2; workspaces: 4).
    Operand operand(uint64_t elements, uint32_t element_bytes = 4) {
        Operand op;
        if (elements == 0) return op;
        op.allocation.buffer = reinterpret_cast<VkBuffer>(static_cast<uintptr_t>(0x1000 * ++next_));
        op.allocation.offset = 0;
        op.allocation.size = whole_words(elements * element_bytes);
        op.floats = elements;
        op.element_bytes = element_bytes;
        return op;
    }

private:
    uint64_t next_ = 0;
};

Plan finish(const ContextImpl& context, std::vector<PlannedDispatch> dispatches) {
    Plan plan;
    plan.device = context.device->info().name;
    plan.compute_units = context.device->info().compute_units;
    plan.dispatches = std::move(dispatches);
    return plan;
}

uint64_t elements(const Shape& shape) {
    return static_cast<uint64_t>(shape_elements(shape));
}

}  // namespace
}  // namespace detail

const DeviceInfo& DeviceProfile::info() const {
    return model_->info;
}

DeviceProfile DeviceProfile::load(const std::string& name_or_path) {
    return DeviceProfile(std::make_shared<const detail::DeviceModel>(detail::load_device_model(name_or_path)));
}

DeviceProfile DeviceProfile::of(const Context& context) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    return DeviceProfile(std::make_shared<const detail::DeviceModel>(impl.device->model()));
}

std::vector<std::string> device_profile_names() {
    return detail::shipped_profile_names();
}

const PlannedDispatch* Plan::main_dispatch() const {
    const PlannedDispatch* best = nullptr;
    for (const PlannedDispatch& d : dispatches)
        if (!best || d.flops > best->flops) best = &d;
    return best;
}

Plan plan_pass(const DeviceProfile& device, const ConvProblem& problem, Pass pass, Algorithm algorithm,
               const PassOptions& options) {
    problem.validate();
    if (options.workspace)
        throw Error(ErrorCategory::InvalidArgument,
                    "plan_pass: PassOptions::workspace names a tensor of a context; plan with workspace_limit");
    detail::check_variant(algorithm, options);
    detail::ContextImpl context(*device.model_);
    const detail::PassPlan planned = detail::plan_pass_on(context, problem, pass, algorithm, options).value();

    detail::FakeBuffers buffers;
    detail::ConvOperands ops;
    const bool data = pass == Pass::BackwardData, filter_pass = pass == Pass::BackwardFilter;
    const uint32_t bytes = element_bytes(problem.data_type);
    // dw and db in their own type (ConvProblem::weight_gradient_type), every other tensor in data_type.
    const uint32_t gradient_bytes = element_bytes(problem.weight_gradient_type());
    const bool writes_gradients = filter_pass || pass == Pass::BackwardBias;
    if (pass != Pass::BackwardBias) {
        ops.input = buffers.operand(detail::elements(problem.input_shape()), bytes);
        ops.filter = buffers.operand(detail::elements(problem.filter_shape()), filter_pass ? gradient_bytes : bytes);
    }
    ops.output = buffers.operand(detail::elements(problem.output_shape()), bytes);
    if (problem.has_bias && !data)
        ops.bias = buffers.operand(uint64_t(problem.K), writes_gradients ? gradient_bytes : bytes);
    std::vector<detail::Operand> workspace;
    for (uint64_t floats : planned.slots()) workspace.push_back(buffers.operand(floats));

    std::vector<PlannedDispatch> dispatches;
    std::vector<GemmShape> gemms;
    detail::CommandStream stream(*context.device, dispatches, &gemms);
    detail::record_pass(context, stream, problem, planned, ops, workspace);
    Plan plan = detail::finish(context, std::move(dispatches));
    plan.gemms = std::move(gemms);
    plan.algorithm = pass == Pass::BackwardBias ? Algorithm::Direct : planned.algorithm();
    plan.workspace_bytes = planned.workspace_bytes();
    return plan;
}

Plan plan_gemm(const DeviceProfile& device, uint32_t M, uint32_t N, uint32_t K) {
    if (M == 0 || N == 0 || K == 0)
        throw Error(ErrorCategory::InvalidArgument, "plan_gemm: M, N and K must be positive");
    detail::ContextImpl context(*device.model_);
    detail::FakeBuffers buffers;
    const detail::Operand a = buffers.operand(uint64_t(M) * K), b = buffers.operand(uint64_t(K) * N),
                          c = buffers.operand(uint64_t(M) * N);
    detail::GemmProblem gp;
    gp.M = M, gp.N = N, gp.K = K;
    gp.a = {a.whole().range, 0, K, 1, 0, 0};
    gp.b = {b.whole().range, 0, N, 1, 0, 0};
    gp.c = {c.whole().range, 0, N, 1, 0, 0};
    const detail::GemmSplit split = detail::plan_gemm_split(context, gp);
    const detail::Operand partials = buffers.operand(split.slices > 1 ? split.partial_floats : 0);
    std::vector<PlannedDispatch> dispatches;
    std::vector<GemmShape> gemms;
    detail::CommandStream stream(*context.device, dispatches, &gemms);
    if (split.slices > 1)
        detail::record_split_gemm(context, stream, gp, split, partials.whole().range);
    else
        detail::record_gemm(context, stream, gp);
    Plan plan = detail::finish(context, std::move(dispatches));
    plan.gemms = std::move(gemms);
    if (split.slices > 1) plan.workspace_bytes = detail::workspace_bytes_of(context, std::vector<uint64_t>{split.partial_floats});
    return plan;
}

}  // namespace vkconv
