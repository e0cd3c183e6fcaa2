// Winograd's dispatches (winograd.hpp): the filter transform once, then per chunk the input transform, the
// batched GEMM over the transform positions and groups, and the output transform with the epilogue.
#include <array>
#include <string>

#include "context/element_build.hpp"
#include "conv/algorithm_plan.hpp"
#include "conv/epilogue.hpp"
#include "conv/winograd/winograd.hpp"
#include "gemm/gemm.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {
namespace {

struct InputPush {
    uint32_t x_offset, tile_row0, tile_rows, tiles;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(InputPush, winograd_input)
VKCONV_PUSH_MEMBER(InputPush, winograd_input, tiles)
VKCONV_PUSH_MEMBER(InputPush, winograd_input, base)

struct OutputPush {
    uint32_t y_offset, z_offset, bias_offset, tile_row0, tile_rows, tiles;
    float alpha, beta, negative_slope;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(OutputPush, winograd_output)
VKCONV_PUSH_MEMBER(OutputPush, winograd_output, tiles)
VKCONV_PUSH_MEMBER(OutputPush, winograd_output, alpha)
VKCONV_PUSH_MEMBER(OutputPush, winograd_output, base)

struct FilterPush {
    uint32_t w_offset;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(FilterPush, winograd_filter)
VKCONV_PUSH_MEMBER(FilterPush, winograd_filter, base)

uint32_t u32(int64_t v) {
    return static_cast<uint32_t>(v);
}

// The registry name of a shader's build for tile m, the access path (`access`: "" or "_texel") and the problem's
// element type ("winograd_input" -> "winograd_input_f4", "winograd_filter_f2_texel_s16").
std::string variant(const ContextImpl& context, const char* shader, int m, DataType type, const char* access = "") {
    return std::string(shader) + (m == 2 ? "_f2" : "_f4") + access + element_build(context, type);
}

PipelineDesc storage_desc(const std::string& shader, size_t bindings, uint32_t push_bytes) {
    PipelineDesc desc;
    desc.shader = shader;
    desc.bindings.assign(bindings, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = push_bytes;
    return desc;
}

// U for the input channels [c0, c0 + s.in_g) of the transformed conv (`s` that chunk's shape): the filter read
// from those channels on (forward: w's input channels; backward-data: its filters); `texels`: through a view of
// quads (WinogradPlan::filter_texels), else a storage buffer.
void record_filter_transform(ContextImpl& context, CommandStream& stream, const ConvProblem& p,
                             const WinogradShape& s, int64_t c0, const Window& w, const BufferRange& u, bool texels) {
    const int64_t taps = s.transposed ? p.channels_per_group() * 9 : s.nhwc ? 1 : 9;  // from one channel to the next
    const uint64_t w_offset = w.delta + uint64_t(c0 * taps);
    // (The view spans the binding from its start: within maxTexelBufferElements quads, which the plan checked
    // for the filter alone.)
    const uint64_t quad_bytes = 4 * element_bytes(p.data_type);
    texels = texels && w_offset % 4 == 0 && !context.device->foreign_buffer(w.range.buffer) &&
             (w.range.size + quad_bytes - 1) / quad_bytes <= context.device->limits().maxTexelBufferElements;
    PipelineDesc desc = storage_desc(variant(context, "winograd_filter", s.m, p.data_type, texels ? "_texel" : ""), 2,
                                     sizeof(FilterPush));
    if (texels) desc.bindings[0] = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
    using Id = contract::winograd_filter::spec;
    Specialization<contract::winograd_filter> spec;
    spec.set(Id::LOCAL_SIZE_X, kElementwiseWorkgroup).set(Id::NHWC, s.nhwc);
    spec.set(Id::CG, p.channels_per_group()).set(Id::KG, p.filters_per_group()).set(Id::GROUPS, p.groups);
    spec.set(Id::TRANSPOSED, s.transposed).set(Id::OUT_G, s.out_g).set(Id::IN_G, s.in_g).set(Id::IN_G4, s.in_g4);
    spec.set(Id::OUT_G4, s.out_g4).set(Id::TENSOR_TYPE, element_constant(p.data_type));
    desc.specialization = spec.values();
    const VkFormat quads = p.data_type == DataType::F32 ? VK_FORMAT_R32G32B32A32_SFLOAT : VK_FORMAT_R16G16B16A16_UINT;
    const std::array<Binding, 2> bindings{Binding{w.range, false, texels ? quads : VK_FORMAT_UNDEFINED},
                                          Binding{u, true}};
    const uint64_t invocations = uint64_t(s.groups * s.out_g4 * s.in_g4 / 4);
    dispatch_elements(stream, context.pipelines->get(desc), bindings, FilterPush{u32(w_offset), 0, 0}, invocations);
}

// One chunk: images [n0, n0 + images), tile rows [row0, row0 + rows) of each.
struct WinogradChunk {
    int64_t n0, images, row0, rows;
    int64_t tiles() const { return images * rows; }  // times tiles_w
};

// V for the chunk's tiles and the input channels [c0, c0 + s.in_g) (`s` that chunk's shape).
void record_input_transform(ContextImpl& context, CommandStream& stream, const WinogradShape& s,
                            const WinogradChunk& chunk, int64_t c0, const Window& x, const BufferRange& v) {
    PipelineDesc desc = storage_desc(variant(context, "winograd_input", s.m, s.type), 2, sizeof(InputPush));
    using Id = contract::winograd_input::spec;
    Specialization<contract::winograd_input> spec;
    spec.set(Id::LOCAL_SIZE_X, kElementwiseWorkgroup).set(Id::NHWC, s.nhwc);
    spec.set(Id::C, s.in_c).set(Id::H, s.in_h).set(Id::W, s.in_w).set(Id::CG, s.in_g).set(Id::CG4, s.in_g4);
    spec.set(Id::GROUPS, s.groups).set(Id::TILES_W, s.tiles_w);
    spec.set(Id::ORIGIN_H, s.origin_h).set(Id::ORIGIN_W, s.origin_w).set(Id::TENSOR_TYPE, element_constant(s.type));
    desc.specialization = spec.values();
    const int64_t tiles = chunk.tiles() * s.tiles_w;
    const std::array<Binding, 2> bindings{Binding{x.range, false}, Binding{v, true}};
    const int64_t channel = s.nhwc ? 1 : s.in_h * s.in_w;  // from one channel to the next
    const InputPush push{u32(x.delta + c0 * channel), u32(chunk.row0), u32(chunk.rows), u32(tiles), 0, 0};
    dispatch_elements(stream, context.pipelines->get(desc), bindings, push, uint64_t(s.groups * tiles * s.in_g4 / 4));
}

// M[ξ][g] = V[ξ][g] · U[ξ][g]: one GEMM, batched over ξ (batch_i) and the groups (batch_j); `accumulate`: added
// to M (an input-channel chunk after the first).
void record_products(ContextImpl& context, CommandStream& stream, const WinogradShape& s, int64_t tiles,
                     const BufferRange& v, const BufferRange& u, const BufferRange& m, bool accumulate) {
    const uint64_t g_in = uint64_t(s.in_g4), g_out = uint64_t(s.out_g4), t = uint64_t(tiles);
    const uint64_t groups = uint64_t(s.groups);
    GemmProblem gp;
    gp.M = u32(tiles), gp.N = u32(s.out_g4), gp.K = u32(s.in_g4);
    gp.batch_i = u32(s.alpha * s.alpha), gp.batch_j = u32(s.groups);
    gp.a = {v, 0, g_in, 1, groups * t * g_in, t * g_in};
    gp.b = {u, 0, 1, g_in, groups * g_out * g_in, g_out * g_in};
    gp.c = {m, 0, g_out, 1, groups * t * g_out, t * g_out};
    gp.beta = accumulate ? 1.0f : 0.0f;
    record_gemm(context, stream, gp);
}

// y from M for the chunk's tiles; `texels`: M read through an rgba32f view (WinogradPlan::product_texels).
void record_output_transform(ContextImpl& context, CommandStream& stream, const WinogradShape& s,
                             const WinogradChunk& chunk, const BufferRange& m, const Window& y, const Window& z,
                             const Window& bias, bool has_bias, const FusedEpilogue& epilogue, bool texels) {
    PipelineDesc desc = storage_desc(variant(context, "winograd_output", s.m, s.type, texels ? "_texel" : ""), 4,
                                     sizeof(OutputPush));
    if (texels) desc.bindings[0] = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
    using Id = contract::winograd_output::spec;
    Specialization<contract::winograd_output> spec;
    spec.set(Id::LOCAL_SIZE_X, kElementwiseWorkgroup).set(Id::NHWC, s.nhwc);
    spec.set(Id::K, s.out_c).set(Id::P, s.out_h).set(Id::Q, s.out_w).set(Id::KG, s.out_g);
    spec.set(Id::GROUPS, s.groups).set(Id::TILES_W, s.tiles_w).set(Id::HAS_BIAS, has_bias);
    spec.set(Id::ACTIVATION, activation_constant(epilogue.activation)).set(Id::HAS_RESIDUAL, epilogue.has_residual());
    spec.set(Id::KG4, s.out_g4).set(Id::TENSOR_TYPE, element_constant(s.type));
    desc.specialization = spec.values();
    const int64_t tiles = chunk.tiles() * s.tiles_w;
    const VkFormat m_format = texels ? VK_FORMAT_R32G32B32A32_SFLOAT : VK_FORMAT_UNDEFINED;
    const std::array<Binding, 4> bindings{Binding{m, false, m_format}, Binding{bias.range, false},
                                          Binding{y.range, true}, Binding{z.range, false}};
    const OutputPush push{u32(y.delta), u32(z.delta), u32(bias.delta), u32(chunk.row0), u32(chunk.rows), u32(tiles),
                          epilogue.alpha, epilogue.beta, epilogue.negative_slope, 0, 0};
    dispatch_elements(stream, context.pipelines->get(desc), bindings, push, uint64_t(s.groups * tiles * s.out_g4 / 4));
}

}  // namespace

void record_winograd(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                     const ConvOperands& ops, Workspace workspace) {
    const WinogradPlan& wp = plan.own_as<WinogradPlan>();
    const WinogradShape s = winograd_shape(p, plan.pass, wp.m);
    const bool backward = plan.pass == Pass::BackwardData;
    // The transformed convolution's input and output: x -> y, or dy -> dx.
    const Operand& in = backward ? ops.output : ops.input;
    const Operand& out = backward ? ops.input : ops.output;
    // Backward-data adding into dx (ConvOperands::add_into_dx) reads it as an in-place residual, beta = 1.
    FusedEpilogue epilogue = backward ? FusedEpilogue{} : ops.epilogue;
    if (backward && ops.add_into_dx) epilogue.beta = 1.0f, epilogue.residual = out;
    const bool has_bias = !backward && static_cast<bool>(ops.bias);
    const uint64_t align = context.pool->alignment();

    const Operand& lowered = workspace[Slot::Lowered];
    const Operand& filter_copy = workspace[Slot::FilterCopy];
    // An application's workspace buffer is never viewed as texels (its usage may not allow them).
    const bool product_texels = wp.product_texels && !context.device->foreign_buffer(lowered.allocation.buffer);
    // U once for all input channels, or (WinogradPlan::in_chunk) for each chunk of them as its turn comes.
    const bool split = wp.in_chunk < s.in_g;
    auto u_of = [&](const WinogradShape& cs) {
        return BufferRange{filter_copy.allocation.buffer, filter_copy.allocation.offset, cs.u_floats() * 4};
    };
    if (!split) record_filter_transform(context, stream, p, s, 0, ops.filter.whole(), u_of(s), wp.filter_texels);

    for (int64_t n0 = 0; n0 < p.N; n0 += wp.images) {
        const int64_t images = std::min(wp.images, p.N - n0);
        const Window x = window(in, uint64_t(n0) * s.in_image(), uint64_t(images) * s.in_image(), align);
        const Window y = window(out, uint64_t(n0) * s.out_image(), uint64_t(images) * s.out_image(), align);
        const Window z = residual_window(epilogue, uint64_t(n0) * s.out_image(), uint64_t(images) * s.out_image(),
                                         align, y);
        const Window bias = has_bias ? ops.bias.whole() : y;  // bound, never read without a bias
        for (int64_t row0 = 0; row0 < s.tiles_h; row0 += wp.tile_rows) {
            const WinogradChunk chunk{n0, images, row0, std::min(wp.tile_rows, s.tiles_h - row0)};
            const int64_t tiles = chunk.tiles() * s.tiles_w;
            const BufferRange m{lowered.allocation.buffer, lowered.allocation.offset + wp.m_offset * 4,
                                s.m_floats(tiles) * 4};
            for (int64_t c0 = 0; c0 < s.in_g; c0 += wp.in_chunk) {
                const WinogradShape cs = split ? s.input_chunk(std::min(wp.in_chunk, s.in_g - c0)) : s;
                const BufferRange v{lowered.allocation.buffer, lowered.allocation.offset, cs.v_floats(tiles) * 4};
                if (split)
                    record_filter_transform(context, stream, p, cs, c0, ops.filter.whole(), u_of(cs), wp.filter_texels);
                record_input_transform(context, stream, cs, chunk, c0, x, v);
                record_products(context, stream, cs, tiles, v, u_of(cs), m, c0 > 0);
            }
            record_output_transform(context, stream, s, chunk, m, y, z, bias, has_bias, epilogue, product_texels);
        }
    }
}

}  // namespace vkconv::detail
