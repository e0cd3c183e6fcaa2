#include "conv_direct.hpp"

#include <array>

#include "elementwise.hpp"

namespace vkconv::detail {
namespace {

struct DirectPush {
    uint32_t N, C, H, W, K, P, Q;
    uint32_t channels_per_group, filters_per_group;
    uint32_t base, count;
};

}  // namespace

void record_direct_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& problem,
                           const ForwardOperands& operands) {
    auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
    PipelineDesc desc;
    desc.shader = "conv2d_direct";
    desc.bindings.assign(4, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(DirectPush);
    desc.specialization = {kElementwiseWorkgroup,
                           u(problem.R),
                           u(problem.S),
                           u(problem.stride_h),
                           u(problem.stride_w),
                           u(problem.pad_h),
                           u(problem.pad_w),
                           u(problem.dilation_h),
                           u(problem.dilation_w),
                           problem.layout == Layout::NHWC ? 1u : 0u,
                           problem.has_bias ? 1u : 0u};
    const Pipeline& pipeline = context.pipelines->get(desc);

    // Without a bias the shader never reads binding 2, but Vulkan wants it bound: the filter stands in.
    const std::array<Binding, 4> bindings{
        Binding{operands.input.whole(), false}, Binding{operands.filter.whole(), false},
        Binding{operands.bias_or(operands.filter), false}, Binding{operands.output.whole(), true}};
    DirectPush push{u(problem.N),
                    u(problem.C),
                    u(problem.H),
                    u(problem.W),
                    u(problem.K),
                    u(problem.P()),
                    u(problem.Q()),
                    u(problem.channels_per_group()),
                    u(problem.filters_per_group()),
                    0,
                    0};
    dispatch_elements(context, stream, pipeline, bindings, push, static_cast<uint64_t>(problem.output_elements()));
}

}  // namespace vkconv::detail
