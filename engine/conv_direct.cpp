#include "conv_direct.hpp"

#include <algorithm>
#include <array>

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
    const uint32_t workgroup = std::min<uint32_t>(64, context.device->info().max_workgroup_invocations);
    auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
    PipelineDesc desc;
    desc.shader = "conv2d_direct";
    desc.bindings.assign(4, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(DirectPush);
    desc.specialization = {workgroup,
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
    const BufferRange bias = problem.has_bias ? operands.bias : operands.filter;
    const std::array<Binding, 4> bindings{Binding{operands.input, false}, Binding{operands.filter, false},
                                          Binding{bias, false}, Binding{operands.output, true}};
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
    const uint64_t total = static_cast<uint64_t>(problem.output_elements());
    const uint64_t per_dispatch = static_cast<uint64_t>(context.max_workgroups(0)) * workgroup;
    for (uint64_t base = 0; base < total; base += per_dispatch) {
        const uint64_t count = std::min(per_dispatch, total - base);
        push.base = static_cast<uint32_t>(base);
        push.count = static_cast<uint32_t>(count);
        stream.dispatch(pipeline, bindings, &push, static_cast<uint32_t>((count + workgroup - 1) / workgroup));
    }
}

}  // namespace vkconv::detail
