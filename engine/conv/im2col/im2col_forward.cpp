// im2col forward: lower a chunk into col[g][m][k], then one batched GEMM per group writes the output, with
// the epilogue (conv/epilogue.hpp).
#include <array>

#include "context/element_build.hpp"
#include "conv/constants.hpp"
#include "conv/epilogue.hpp"
#include "conv/gemm_mapping.hpp"
#include "conv/im2col/im2col.hpp"
#include "conv/lowered/lowered.hpp"
#include "gemm/gemm.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {
namespace {

struct LowerPush {
    uint32_t p0;  // the chunk's first output row
    uint32_t x_offset;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(LowerPush, im2col)
VKCONV_PUSH_MEMBER(LowerPush, im2col, x_offset)
VKCONV_PUSH_MEMBER(LowerPush, im2col, base)

}  // namespace

void record_im2col_lowering(ContextImpl& context, CommandStream& stream, const ConvProblem& p, bool transposed,
                            const Window& x, const BufferRange& col, DataType col_type, int64_t p0, int64_t rows,
                            int64_t images) {
    auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
    PipelineDesc desc;
    desc.shader = "im2col" + element_build(context, p.data_type);
    desc.bindings.assign(2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(LowerPush);
    using Id = contract::im2col::spec;
    Specialization<contract::im2col> spec;
    set_geometry(spec, p);
    spec.set(Id::TRANSPOSED, transposed).set(Id::C, p.C).set(Id::H, p.H).set(Id::W, p.W);
    spec.set(Id::CG, p.channels_per_group()).set(Id::Q, p.Q()).set(Id::ROWS, rows).set(Id::IMAGES, images);
    spec.set(Id::X_TYPE, element_constant(p.data_type)).set(Id::COL_TYPE, element_constant(col_type));
    desc.specialization = spec.values();
    const std::array<Binding, 2> bindings{Binding{x.range, false}, Binding{col, true}};
    const uint64_t floats = uint64_t(images * rows * p.Q()) * uint64_t(p.R * p.S * p.C);
    dispatch_elements(stream, context.pipelines->get(desc), bindings, LowerPush{u(p0), u(x.delta), 0, 0}, floats);
}

namespace {

// One chunk's GEMMs, a group each: col (the chunk lowered) times the filter into C, which is y's window, or
// (`wide`) the fp32 copy holding the chunk's images in y's layout, where the residual was widened first.
void record_chunk_gemms(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const ConvOperands& ops,
                        const LoweredPlan& plan, const Chunk& chunk, const BufferRange& col, const Window& z,
                        const Window* wide) {
    auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
    const int64_t Q = p.Q(), Kg = p.filters_per_group(), rows = chunk.rows;
    const uint64_t k_red = uint64_t(filter_taps(p)), m_chunk = uint64_t(chunk.images * rows * Q);
    const Window w = ops.filter.whole(), b = ops.bias_or(ops.filter);
    const DataType type = p.data_type;  // of every operand, col included; the copy is fp32
    const Window& out = wide ? *wide : chunk.output;
    // One image per batch entry: an NCHW output is not one matrix across images.
    for (int64_t g = 0; g < p.groups; ++g) {
        const GemmExtent shape = forward_gemm(p, rows * Q);  // per image, the batch runs over the chunk's
        GemmProblem gp;
        gp.M = u(shape.M), gp.N = u(shape.N), gp.K = u(shape.K);
        gp.batch_i = u(chunk.images);
        const uint64_t group_base = uint64_t(g) * m_chunk * k_red;
        if (plan.transposed)  // the layout the lowering wrote
            gp.a = {col, group_base, 1, m_chunk, uint64_t(rows * Q), 0, type};
        else
            gp.a = {col, group_base, k_red, 1, uint64_t(rows * Q) * k_red, 0, type};
        gp.b = {w.range, w.delta + uint64_t(g * Kg) * k_red, 1, k_red, 0, 0, type};
        const OutputMatrix at = output_matrix(p, out.delta, g, chunk.p0, rows);
        gp.c = {out.range, at.offset, at.row_stride, at.col_stride, at.image_stride, 0, wide ? DataType::F32 : type};
        if (ops.bias) gp.bias = b.range, gp.bias_offset = b.delta + uint64_t(g * Kg), gp.bias_type = type;
        // The GEMM writes y (or the copy): all of the epilogue; the copy is its own residual.
        set_gemm_epilogue(gp, ops.epilogue, out, wide ? out : z);
        record_gemm(context, stream, gp);
    }
}

}  // namespace

void record_im2col_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const ConvOperands& ops,
                           const LoweredPlan& plan, const Operand& scratch, const Operand& wide) {
    const uint64_t k_red = uint64_t(filter_taps(p)), y_image = uint64_t(p.K * p.P() * p.Q());
    const uint64_t align = context.pool->alignment();
    for_each_chunk(p, plan, align, ops.input, ops.output, [&](const Chunk& chunk) {
        const uint64_t first = uint64_t(chunk.n0) * y_image, count = uint64_t(chunk.images) * y_image;
        const Window z = residual_window(ops.epilogue, first, count, align, chunk.output);
        const uint64_t col_elements = uint64_t(chunk.images * chunk.rows * p.Q()) * k_red * uint64_t(p.groups);
        const BufferRange col{scratch.allocation.buffer, scratch.allocation.offset,
                              whole_words(col_elements * plan.lowered_bytes)};
        record_im2col_lowering(context, stream, p, plan.transposed, chunk.input, col, p.data_type, chunk.p0,
                               chunk.rows, chunk.images);
        if (!wide) return record_chunk_gemms(context, stream, p, ops, plan, chunk, col, z, nullptr);
        record_wide_chunk(context, stream, p, chunk, ops, wide, [&](const Window& copy) {
            record_chunk_gemms(context, stream, p, ops, plan, chunk, col, z, &copy);
        });
    });
}

}  // namespace vkconv::detail
