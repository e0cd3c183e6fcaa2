// The depthwise algorithm's chunk plan, exact workspace and forward recording (see depthwise/depthwise.hpp);
// the backward passes are in depthwise/depthwise_backward.cpp.
#include <algorithm>
#include <array>
#include <span>
#include <string>

#include "conv/constants.hpp"
#include "conv/depthwise/depthwise_kernels.hpp"
#include "conv/epilogue.hpp"
#include "conv/lowered/lowered.hpp"
#include "vulkan/shader_limits.hpp"

namespace vkconv::detail {
namespace {

struct ForwardPush {
    uint32_t x_offset, y_offset;
    uint32_t w_offset, b_offset;
    uint32_t z_offset;
    float alpha, beta, negative_slope;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(ForwardPush, depthwise_forward)
VKCONV_PUSH_MEMBER(ForwardPush, depthwise_forward, x_offset)
VKCONV_PUSH_MEMBER(ForwardPush, depthwise_forward, y_offset)
VKCONV_PUSH_MEMBER(ForwardPush, depthwise_forward, w_offset)
VKCONV_PUSH_MEMBER(ForwardPush, depthwise_forward, b_offset)
VKCONV_PUSH_MEMBER(ForwardPush, depthwise_forward, z_offset)
VKCONV_PUSH_MEMBER(ForwardPush, depthwise_forward, alpha)
VKCONV_PUSH_MEMBER(ForwardPush, depthwise_forward, negative_slope)

}  // namespace

Planned<DepthwisePlan> plan_depthwise(ContextImpl& context, const ConvProblem& p, Pass pass,
                                      const PassOptions& options) {
    DepthwisePlan plan;
    const uint64_t limit = storage_binding_limit(context, options);
    const uint64_t align = context.pool->alignment();
    const uint64_t element = element_bytes(p.data_type);
    const uint64_t image = std::max(uint64_t(p.C * p.H * p.W), uint64_t(p.K * p.P() * p.Q())) * element;
    const uint64_t filter = uint64_t(p.filter_elements()) * element;
    if (filter > limit || image + align > limit)
        return unsupported("depthwise: " + std::string(filter > limit ? "the filter" : "one image") + " (" +
                           std::to_string(filter > limit ? filter : image) + " bytes) exceeds the binding limit of " +
                           std::to_string(limit) + " bytes (" + p.str() + ")");
    plan.images = std::min<int64_t>(p.N, int64_t((limit - align) / image));
    plan.chunks = static_cast<uint32_t>((p.N + plan.images - 1) / plan.images);
    if (pass == Pass::BackwardFilter) {
        const DepthwiseFilterSplit split = depthwise_filter_split(context, p, plan.images, limit);
        plan.splits = split.splits;
        plan.column_parts = split.column_parts;
        // Under a workspace limit, fewer pieces; even one piece's sums are workspace.
        // (With a 16-bit dw in several chunks, also their fp32 sum: depthwise_accumulator_floats.)
        auto bytes = [&](uint64_t splits) {
            return context.pool->round(
                (splits * uint64_t(p.filter_elements()) + depthwise_accumulator_floats(context, p, plan.chunks)) * 4);
        };
        while (options.workspace_limit && plan.splits > 1 && bytes(plan.splits) > options.workspace_limit)
            --plan.splits;
        if (options.workspace_limit && bytes(plan.splits) > options.workspace_limit)
            return unsupported("depthwise: backward-filter needs " + std::to_string(bytes(1)) +
                               " bytes of workspace, above the workspace limit of " +
                               std::to_string(options.workspace_limit) + " bytes (" + p.str() + ")");
        // Where the pieces cannot grow (binding or workspace limit), chunks of fewer images keep every
        // invocation's loop under lavapipe's cap (shader_limits.hpp).
        const uint64_t per_unit = depthwise_filter_unit_iterations(p, plan.column_parts);
        auto loop_fits = [&] {
            return ceil_div(uint64_t(plan.images * p.P() * plan.column_parts), plan.splits) * per_unit <=
                   kMaxLoopIterations;
        };
        while (!loop_fits() && plan.images > 1) plan.images = (plan.images + 1) / 2;
        if (!loop_fits())
            return unsupported(
                "depthwise: backward-filter needs more reduction pieces than the workspace and binding limits allow (" +
                p.str() + ")");
        plan.chunks = static_cast<uint32_t>((p.N + plan.images - 1) / plan.images);
        plan.workspace_floats = uint64_t(plan.splits) * uint64_t(p.filter_elements()) +
                                depthwise_accumulator_floats(context, p, plan.chunks);
        if (options.workspace_limit && bytes(plan.splits) > options.workspace_limit)
            return unsupported("depthwise: backward-filter in chunks of images needs " + std::to_string(bytes(plan.splits)) +
                               " bytes of workspace for its partial sums and an fp32 copy of dw, above the workspace limit of " +
                               std::to_string(options.workspace_limit) + " bytes (" + p.str() + ")");
    }
    plan.workspace_bytes = plan.workspace_floats ? context.pool->round(plan.workspace_floats * 4) : 0;
    // CPU implementations (lavapipe) read texel buffers much faster than storage buffers; GPUs take the
    // plain storage-buffer path, and so does a chunk too large for texel views (maxTexelBufferElements
    // decides the path, never the chunks).
    const uint64_t chunk_binding = uint64_t(plan.images) * image + align;
    // (16-bit tensors through views of their 16-bit bits.)
    const bool views = p.data_type == DataType::F32 ? context.device->model().uniform_texel_buffers
                                                    : context.device->model().uniform_texel_16bit;
    const uint64_t texel_limit = texel_binding_limit(context, options, uint32_t(element));
    plan.texel = on_cpu(context) && views && chunk_binding <= texel_limit && filter <= texel_limit;
    return plan;
}

std::string depthwise_shader(ContextImpl& context, const ConvProblem& p, const std::string& pass,
                             const DepthwiseTiles& tiles, bool texel, bool four) {
    return "depthwise_" + pass + (tiles.channels4 ? "_c4" : "") + (texel ? "_texel" : "_ssbo") + (four ? "4" : "") +
           element_build(context, p.data_type);
}

uint32_t block_rows(const ConvProblem& p, int64_t rows) {
    if (p.R * p.S > kTapsInRegisters) return 1;  // a large filter reuses each loaded row across its taps
    return rows > 8 ? 4 : 2;
}

bool channels4(const ConvProblem& p) {
    return p.layout == Layout::NHWC && p.filters_per_group() == 1 && p.C % 4 == 0;
}

// On a CPU device an NCHW block of a wide output is 2 rows of 16: on lavapipe that took 0.72-0.94x the
// time of 4 rows of 8 in fp32 and fp16 (separable_dw_256, mobilenet_dw_112 at batch 32).
DepthwiseTiles forward_tiles(const ConvProblem& p, uint64_t wanted_invocations, bool cpu) {
    DepthwiseTiles t;
    t.channels4 = channels4(p);
    const bool wide_rows = cpu && p.layout == Layout::NCHW && p.Q() > 16;
    t.tile_w = wide_rows ? 16 : p.Q() > 8 ? 8 : 4;
    t.tile_h = static_cast<uint32_t>(std::min<int64_t>(block_rows(p, p.P()), p.P()));
    if (wide_rows) t.tile_h = std::min<uint32_t>(t.tile_h, 2);
    // A memory-bound pass wants many loads in flight: shorter blocks where the batch's blocks are too few
    // invocations to keep the device's memory busy (docs/device_model.md).
    auto invocations = [&] {
        return uint64_t(p.N) * uint64_t(p.K / t.lane_channels()) * ceil_div(p.P(), t.tile_h) * ceil_div(p.Q(), t.tile_w);
    };
    while (t.tile_h > 1 && invocations() < wanted_invocations) t.tile_h /= 2;
    if (p.layout == Layout::NCHW) {
        t.vec4_x = p.W % 4 == 0;  // tile_w % 4 == 0: every block's first column, times the stride, too
        t.vec4_y = p.Q() % 4 == 0;
    }
    return t;
}

void record_depthwise_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& p,
                              const ConvOperands& ops, const DepthwisePlan& plan) {
    const DepthwiseTiles tiles =
        vec4_safe(forward_tiles(p, gemm_configs(context).wanted_invocations, on_cpu(context)),
                  {&ops.input, &ops.output});
    const FusedEpilogue& epilogue = ops.epilogue;
    using Id = contract::depthwise_forward::spec;
    // Reading storage buffers on a device that allows fewer than their 6: the 4-binding build, which reads
    // the residual from y (copied there first; nothing to copy in place).
    const bool four = !plan.texel && context.device->limits().maxPerStageDescriptorStorageBuffers < 6;
    if (four) copy_residual_into_output(context, stream, epilogue, ops.output, p.data_type);
    PipelineDesc desc;
    desc.shader = depthwise_shader(context, p, "forward", tiles, plan.texel, four);
    const VkDescriptorType read = read_descriptor(plan.texel);
    desc.bindings = {read, read, read, read, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    if (four) desc.bindings.assign(4, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(ForwardPush);
    auto spec = depthwise_specialization<contract::depthwise_forward>(p, tiles);
    spec.set(Id::HAS_BIAS, p.has_bias).set(Id::ACTIVATION, activation_constant(epilogue.activation));
    desc.specialization = spec.set(Id::HAS_RESIDUAL, epilogue.has_residual()).values();
    const Pipeline& pipeline = context.pipelines->get(desc);
    const uint64_t blocks =
        uint64_t(p.K / tiles.lane_channels()) * ceil_div(p.P(), tiles.tile_h) * ceil_div(p.Q(), tiles.tile_w);
    // Without a bias (a residual) the shader never reads binding 3 (5), but Vulkan wants it bound: the filter
    // (the chunk's y) stands in.
    const Window w = ops.filter.whole(), b = ops.bias_or(ops.filter);
    const uint64_t y_image = uint64_t(p.K * p.P() * p.Q());
    for_each_image_chunk(context, p, plan, ops.input, ops.output, [&](const ImageChunk& chunk) {
        const Window z = residual_window(epilogue, uint64_t(chunk.n0) * y_image, uint64_t(chunk.images) * y_image,
                                         context.pool->alignment(), chunk.y);
        const std::array<Binding, 6> all{read4(chunk.x.range, plan.texel, p.data_type), read1(chunk.x.range, plan.texel, p.data_type),
                                         read1(w.range, plan.texel, p.data_type),       read1(b.range, plan.texel, p.data_type),
                                         Binding{chunk.y.range, true},     Binding{z.range, false}};
        const std::array<Binding, 4> compact{Binding{chunk.x.range, false}, Binding{w.range, false},
                                             Binding{b.range, false}, Binding{chunk.y.range, true}};
        const std::span<const Binding> bindings = four ? std::span<const Binding>(compact) : std::span<const Binding>(all);
        const ForwardPush push{u32(chunk.x.delta),
                               u32(chunk.y.delta),
                               u32(w.delta),
                               u32(b.delta),
                               u32(four ? chunk.y.delta : z.delta),
                               epilogue.alpha,
                               epilogue.beta,
                               epilogue.negative_slope,
                               0,
                               0};
        const uint64_t macs = uint64_t(chunk.images) * y_image * uint64_t(p.R * p.S);
        dispatch_elements(stream, pipeline, bindings, push, uint64_t(chunk.images) * blocks,
                          macs_over(macs, uint64_t(chunk.images) * blocks));
    });
}

}  // namespace vkconv::detail
