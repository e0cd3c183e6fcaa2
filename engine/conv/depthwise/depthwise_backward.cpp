// Depthwise backward-data and backward-filter recording (see depthwise/depthwise.hpp).
#include <algorithm>
#include <array>
#include <span>

#include "conv/depthwise/depthwise_kernels.hpp"
#include "gemm/splitk_reduce.hpp"
#include "gemm/gemm_config.hpp"
#include "vulkan/shader_limits.hpp"

namespace vkconv::detail {
namespace {

struct DataPush {
    uint32_t dy_offset, dx_offset;
    uint32_t w_offset, accumulate;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(DataPush, depthwise_backward_data)
VKCONV_PUSH_MEMBER(DataPush, depthwise_backward_data, dx_offset)
VKCONV_PUSH_MEMBER(DataPush, depthwise_backward_data, w_offset)
VKCONV_PUSH_MEMBER(DataPush, depthwise_backward_data, accumulate)

struct FilterPush {
    uint32_t x_offset, dy_offset, units, units_per_piece;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(FilterPush, depthwise_backward_filter)
VKCONV_PUSH_MEMBER(FilterPush, depthwise_backward_filter, dy_offset)
VKCONV_PUSH_MEMBER(FilterPush, depthwise_backward_filter, units_per_piece)

// The largest multiple of `stride` up to `want`, at least `stride`.
uint32_t multiple_of(int64_t stride, int64_t want) {
    return static_cast<uint32_t>(std::max(stride, want / stride * stride));
}

// Backward-data blocks start on multiples of the strides so that the tap pattern is the same in every
// block (see the shader); vec4 dy segments also need the block's first dy column on a vec4 boundary.
// On a CPU device an NCHW layer with one filter per channel streams its rows: a strip 32 columns wide (16
// on narrower images) walks down the image, each dy row loaded once. On lavapipe (separable_dw_256) that
// took 0.74x the time of the blocks of 1 row of 16 in fp32 and 0.70x in fp16, where re-reading each dy row
// for 3 blocks made fp16's widening cost more than its halved traffic saved. Strips of 8, 16 or 64 columns
// were slower (16: 1.3x in fp32); whole images and 128 rows took about the same time. Other CPU blocks
// are one row of 16; GPUs keep the taller blocks of 8, which load each dy value fewer times.
// `rows_wanted`: streamed rows per block (tests), 0 to choose them.
DepthwiseTiles data_tiles(const ConvProblem& p, uint64_t wanted_invocations, bool cpu, uint32_t rows_wanted) {
    DepthwiseTiles t;
    t.channels4 = channels4(p);
    const bool nchw = p.layout == Layout::NCHW;
    t.vec4_y = nchw && p.Q() % 4 == 0;
    const uint32_t column_unit = static_cast<uint32_t>(t.vec4_y ? 4 * p.stride_w : p.stride_w);
    const bool wide_rows = cpu && nchw && p.W > 8;
    // (A ring of the rows one dy row's taps reach, or of a stride's, times S accumulators a column: larger
    // filters, dilations or strides keep the blocks.)
    const int64_t ring_rows = std::max((p.R - 1) * p.dilation_h + 1, p.stride_h);
    t.stream_rows = wide_rows && p.filters_per_group() == 1 && ring_rows * p.S <= kTapsInRegisters;
    t.tile_w = multiple_of(column_unit, t.stream_rows ? (p.W >= 32 ? 32 : 16) : wide_rows ? 16 : p.W > 8 ? 8 : 4);
    // Shorter blocks where the batch's blocks are too few invocations to keep the memory busy (as forward).
    const int64_t first_rows = t.stream_rows ? std::min<int64_t>(p.H, 4096) : wide_rows ? 1 : block_rows(p, p.H);
    const bool forced = rows_wanted && t.stream_rows;  // (the blocks' kernel unrolls its rows: never forced)
    for (int64_t rows = forced ? rows_wanted : first_rows;; rows /= 2) {
        t.tile_h = multiple_of(p.stride_h, rows);
        const uint64_t invocations = uint64_t(p.N) * uint64_t(p.C / t.lane_channels()) * ceil_div(p.H, t.tile_h) *
                                     ceil_div(p.W, t.tile_w);
        if (rows <= 1 || forced || invocations >= wanted_invocations) break;
    }
    t.vec4_x = nchw && p.W % 4 == 0 && t.tile_w % 4 == 0;
    t.vec8_y = t.vec4_y && p.data_type != DataType::F32 && p.Q() % 8 == 0 && t.tile_w % (8 * p.stride_w) == 0;
    return t;
}

// Backward-filter keeps at most kTapsInRegisters accumulators: larger filters are cut into blocks of whole
// filter rows, one block per invocation.
uint32_t filter_tap_rows(const ConvProblem& p) {
    return static_cast<uint32_t>(std::clamp<int64_t>(kTapsInRegisters / p.S, 1, p.R));
}

DepthwiseTiles filter_tiles(const ConvProblem& p) {
    DepthwiseTiles t;
    t.channels4 = channels4(p);
    const bool nchw = p.layout == Layout::NCHW;
    // Wider strips load fewer overlapping x columns per dy value (measured on lavapipe).
    t.tile_w = p.Q() <= 4 ? 4 : nchw && p.Q() >= 16 ? 16 : 8;
    t.vec4_x = nchw && p.W % 4 == 0;
    t.vec4_y = nchw && p.Q() % 4 == 0;
    // 16-bit rows 8 elements a fetch (texel views only; record_depthwise_backward_filter checks the chunks).
    const bool sixteen = p.data_type != DataType::F32;
    t.vec8_x = sixteen && nchw && p.W % 8 == 0 && (t.tile_w * p.stride_w) % 8 == 0;
    t.vec8_y = sixteen && nchw && p.Q() % 8 == 0 && t.tile_w % 8 == 0;
    return t;
}

// Invocations one piece of the reduction takes: filters (in lanes) times blocks of filter rows.
uint64_t filter_lanes(const ConvProblem& p, const DepthwiseTiles& t) {
    return uint64_t(p.K / t.lane_channels()) * ceil_div(p.R, filter_tap_rows(p));
}

}  // namespace

uint64_t depthwise_filter_unit_iterations(const ConvProblem& p, uint32_t column_parts) {
    return ceil_div(int64_t(ceil_div(p.Q(), filter_tiles(p).tile_w)), column_parts) + 1;
}

DepthwiseFilterSplit depthwise_filter_split(ContextImpl& context, const ConvProblem& p, int64_t images,
                                            uint64_t limit) {
    const uint64_t wanted = gemm_configs(context).wanted_invocations;
    const DepthwiseTiles tiles = filter_tiles(p);
    const uint64_t lanes = filter_lanes(p, tiles);
    const uint64_t rows = uint64_t(images * p.P());
    DepthwiseFilterSplit split;
    // Rows alone too few: cut each row's strips into parts (units of their own).
    const uint64_t strips = ceil_div(p.Q(), tiles.tile_w);
    if (rows * lanes < wanted)
        split.column_parts = static_cast<uint32_t>(std::min(strips, ceil_div(int64_t(wanted), int64_t(rows * lanes))));
    const uint64_t units = rows * split.column_parts;
    uint64_t splits = std::clamp<uint64_t>((wanted + lanes - 1) / lanes, 1, units);
    // Units per piece rounded down, so the pieces are at least as many as wanted (rounding up could leave
    // the last piece's worth of invocations missing); the recording's ceil(units / splits) gives them back.
    splits = ceil_div(int64_t(units), int64_t(std::max<uint64_t>(1, units / splits)));
    // Enough pieces that no invocation loops past lavapipe's cap (shader_limits.hpp).
    const uint64_t per_unit = depthwise_filter_unit_iterations(p, split.column_parts);
    splits = std::min(units, std::max(splits, ceil_div(int64_t(units * per_unit), kMaxLoopIterations)));
    while (splits > 1 && splits * uint64_t(p.filter_elements()) * 4 > limit) --splits;
    split.splits = static_cast<uint32_t>(splits);
    return split;
}

void record_depthwise_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& p,
                                    const Operand& grad_output, const Operand& filter, const Operand& grad_input,
                                    const DepthwisePlan& plan, bool add_into_dx) {
    const uint64_t wanted = gemm_configs(context).wanted_invocations;
    DepthwiseTiles tiles =
        vec4_safe(data_tiles(p, wanted, on_cpu(context), plan.data_rows), {&grad_output, &grad_input});
    // A texel view's reinterpretation, of dy's chunks from an 8-element boundary on.
    tiles.vec8_y = tiles.vec8_y && plan.texel && grad_output.first % 8 == 0;
    PipelineDesc desc;
    desc.shader = depthwise_shader(context, p, "backward_data", tiles, plan.texel);
    const VkDescriptorType read = read_descriptor(plan.texel);
    desc.bindings = {read, read, read, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    desc.push_constant_bytes = sizeof(DataPush);
    auto specialization = depthwise_specialization<contract::depthwise_backward_data>(p, tiles);
    specialization.set(contract::depthwise_backward_data::spec::VEC8_Y, tiles.vec8_y);
    specialization.set(contract::depthwise_backward_data::spec::STREAM_ROWS, tiles.stream_rows);
    desc.specialization = specialization.values();
    const Pipeline& pipeline = context.pipelines->get(desc);
    const uint64_t blocks =
        uint64_t(p.C / tiles.lane_channels()) * ceil_div(p.H, tiles.tile_h) * ceil_div(p.W, tiles.tile_w);
    const Window w = filter.whole();
    for_each_image_chunk(context, p, plan, grad_input, grad_output, [&](const ImageChunk& chunk) {
        Binding dy4 = read4(chunk.y.range, plan.texel, p.data_type);
        if (tiles.vec8_y) dy4.texel_format = VK_FORMAT_R32G32B32A32_UINT;  // 8 16-bit elements a texel
        const std::array<Binding, 4> bindings{dy4, read1(chunk.y.range, plan.texel, p.data_type),
                                              read1(w.range, plan.texel, p.data_type), Binding{chunk.x.range, true}};
        const DataPush push{u32(chunk.y.delta), u32(chunk.x.delta), u32(w.delta), add_into_dx ? 1u : 0u, 0, 0};
        const uint64_t macs = uint64_t(chunk.images) * uint64_t(p.K * p.P() * p.Q() * p.R * p.S);
        dispatch_elements(stream, pipeline, bindings, push, uint64_t(chunk.images) * blocks,
                          macs_over(macs, uint64_t(chunk.images) * blocks));
    });
}

void record_depthwise_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& p,
                                      const Operand& input, const Operand& grad_output, const Operand& grad_filter,
                                      const DepthwisePlan& plan, const Operand& workspace) {
    DepthwiseTiles tiles = vec4_safe(filter_tiles(p), {&input, &grad_output});
    // A texel view's reinterpretation, of each operand's chunks from an 8-element boundary on.
    tiles.vec8_x = tiles.vec8_x && tiles.vec4_x && plan.texel && input.first % 8 == 0;
    tiles.vec8_y = tiles.vec8_y && tiles.vec4_y && plan.texel && grad_output.first % 8 == 0;
    const VkDescriptorType read = read_descriptor(plan.texel);
    // Reading storage buffers on a device that allows fewer than their 5: the build with each operand's two
    // views on one binding.
    const bool four = !plan.texel && context.device->limits().maxPerStageDescriptorStorageBuffers < 5;
    PipelineDesc desc;
    desc.shader = depthwise_shader(context, p, "backward_filter", tiles, plan.texel, four);
    desc.bindings = {read, read, read, read, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    if (four) desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(FilterPush);
    auto spec = depthwise_specialization<contract::depthwise_backward_filter>(p, tiles);
    spec.set(contract::depthwise_backward_filter::spec::COLUMN_PARTS, plan.column_parts);
    spec.set(contract::depthwise_backward_filter::spec::VEC8_X, tiles.vec8_x);
    spec.set(contract::depthwise_backward_filter::spec::VEC8_Y, tiles.vec8_y);
    desc.specialization = spec.set(contract::depthwise_backward_filter::spec::TAP_ROWS, filter_tap_rows(p)).values();
    const Pipeline& partial_pipeline = context.pipelines->get(desc);

    const uint64_t filter_floats = uint64_t(p.filter_elements()), lanes = filter_lanes(p, tiles);
    // The fp32 copy of a 16-bit dw summed over several chunks, and after it the partial sums.
    const uint64_t accumulator_bytes = depthwise_accumulator_floats(context, p, plan.chunks) * 4;
    const BufferRange accumulator{workspace.allocation.buffer, workspace.allocation.offset,
                                  accumulator_bytes ? filter_floats * 4 : 0};
    for_each_image_chunk(context, p, plan, input, grad_output, [&](const ImageChunk& chunk) {
        // The chunk's units in at most plan.splits pieces (fewer where the last chunk is short).
        const int64_t units = chunk.images * p.P() * plan.column_parts;
        const int64_t per_piece = int64_t(ceil_div(units, plan.splits));
        const uint64_t pieces = ceil_div(units, per_piece);
        const BufferRange partials{workspace.allocation.buffer, workspace.allocation.offset + accumulator_bytes,
                                   pieces * filter_floats * 4};
        std::array<Binding, 5> all{read4(chunk.x.range, plan.texel, p.data_type), read1(chunk.x.range, plan.texel, p.data_type),
                                   read4(chunk.y.range, plan.texel, p.data_type), read1(chunk.y.range, plan.texel, p.data_type),
                                   Binding{partials, true}};
        if (tiles.vec8_x) all[0].texel_format = VK_FORMAT_R32G32B32A32_UINT;  // 8 16-bit elements a texel
        if (tiles.vec8_y) all[2].texel_format = VK_FORMAT_R32G32B32A32_UINT;
        const std::array<Binding, 3> compact{Binding{chunk.x.range, false}, Binding{chunk.y.range, false},
                                             Binding{partials, true}};
        const std::span<const Binding> bindings = four ? std::span<const Binding>(compact) : std::span<const Binding>(all);
        const FilterPush push{u32(chunk.x.delta), u32(chunk.y.delta), u32(units), u32(per_piece), 0, 0};
        const uint64_t macs = uint64_t(chunk.images) * uint64_t(p.K * p.P() * p.Q() * p.R * p.S);
        dispatch_elements(stream, partial_pipeline, bindings, push, pieces * lanes, macs_over(macs, pieces * lanes));
        // dw (+)= the pieces' partial sums in piece order; chunks add up in order: deterministic. A 16-bit dw
        // in several chunks: the sums add up in the fp32 copy after the pieces, rounded into dw at the end.
        if (!accumulator.size) {
            const Window dw = grad_filter.whole();
            record_splitk_reduce(context, stream, partials, dw.range, dw.delta, filter_floats, int64_t(pieces),
                                 !chunk.first, p.weight_gradient_type());
        } else {
            record_splitk_reduce(context, stream, partials, accumulator, 0, filter_floats, int64_t(pieces), !chunk.first);
        }
    });
    if (accumulator.size) {
        const Window dw = grad_filter.whole();
        record_splitk_reduce(context, stream, accumulator, dw.range, dw.delta, filter_floats, 1, false,
                             p.weight_gradient_type());
    }
}

}  // namespace vkconv::detail
