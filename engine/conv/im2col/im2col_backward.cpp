// im2col backward-data and backward-filter (see lowered/lowered.hpp).
#include <algorithm>
#include <array>

#include "context/element_build.hpp"
#include "conv/constants.hpp"
#include "conv/gemm_mapping.hpp"
#include "conv/im2col/im2col.hpp"
#include "conv/lowered/lowered.hpp"
#include "conv/shared/wide_output.hpp"
#include "conv/tiled/copy_run.hpp"
#include "gemm/gemm.hpp"

namespace vkconv::detail {
namespace {

struct Col2imPush {
    uint32_t p0;  // the chunk's first output row
    uint32_t dx_offset;
    uint32_t accumulate;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(Col2imPush, col2im)
VKCONV_PUSH_MEMBER(Col2imPush, col2im, dx_offset)
VKCONV_PUSH_MEMBER(Col2imPush, col2im, accumulate)

uint32_t u(int64_t v) {
    return static_cast<uint32_t>(v);
}

// Positions per split: any count where the positions are uniformly strided (NHWC, or one NCHW image);
// whole images where NCHW's positions jump from image to image.
int64_t split_unit(const ConvProblem& p, int64_t rows, int64_t images) {
    return p.layout == Layout::NHWC || images == 1 ? 1 : rows * p.Q();
}

}  // namespace

uint32_t backward_filter_splits(ContextImpl& context, const ConvProblem& p, const LoweredPlan& plan,
                                uint64_t binding_limit) {
    const uint64_t kg = uint64_t(p.filters_per_group()), k_red = uint64_t(filter_taps(p));
    const GemmConfigTable& table = gemm_configs(context);
    const GemmConfig& config = pick_gemm_config(table, kg, k_red, 1);
    const uint64_t tiles =
        (kg + config.tile_m() - 1) / config.tile_m() * ((k_red + config.tile_n() - 1) / config.tile_n());
    const uint64_t positions = uint64_t(plan.images * plan.rows * p.Q());
    const uint64_t units = positions / uint64_t(split_unit(p, plan.rows, plan.images));
    uint64_t splits = (table.wanted_workgroups + tiles - 1) / tiles;
    const uint64_t most = std::min(units, std::max<uint64_t>(1, positions / 64));  // at least 64 positions a split
    splits = std::min(splits, most);
    // The pieces' GEMM covers the full pieces in one dispatch (the shorter last one runs apart): take more
    // splits until the full ones alone give the wanted workgroups.
    auto full_pieces = [&](uint64_t s) { return units / ((units + s - 1) / s); };
    while (splits < most && full_pieces(splits) * tiles < table.wanted_workgroups) ++splits;
    while (splits > 1 && splits * kg * k_red * 4 > binding_limit) --splits;
    return static_cast<uint32_t>(std::max<uint64_t>(splits, 1));
}

namespace {

// col2im: the chunk's dx (`dx`, of `dx_type`) from dcol, added to what dx holds with `accumulate`.
void record_col2im(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const BufferRange& dcol,
                   const Window& dx, DataType dx_type, const Chunk& chunk, bool accumulate) {
    const uint64_t x_image = uint64_t(p.C * p.H * p.W), k_red = uint64_t(filter_taps(p));
    const uint64_t m_chunk = uint64_t(chunk.images * chunk.rows * p.Q());
    PipelineDesc desc;
    desc.shader = "col2im" + element_build(context, p.data_type);
    desc.bindings.assign(2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(Col2imPush);
    using Id = contract::col2im::spec;
    Specialization<contract::col2im> spec;
    set_geometry(spec, p);
    spec.set(Id::C, p.C).set(Id::H, p.H).set(Id::W, p.W).set(Id::CG, p.channels_per_group()).set(Id::Q, p.Q());
    spec.set(Id::ROWS, chunk.rows).set(Id::IMAGES, chunk.images).set(Id::DX_TYPE, element_constant(dx_type));
    desc.specialization = spec.values();
    const std::array<Binding, 2> bindings{Binding{dcol, false}, Binding{dx.range, true}};
    const uint64_t outputs = uint64_t(chunk.images) * x_image, adds = m_chunk * k_red * uint64_t(p.groups);
    dispatch_elements(stream, context.pipelines->get(desc), bindings,
                      Col2imPush{u(chunk.p0), u(dx.delta), accumulate ? 1u : 0u, 0, 0}, outputs,
                      ElementWork{double(adds) / double(outputs), (adds + outputs - 1) / outputs});
}

}  // namespace

void record_im2col_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& p,
                                 const Operand& grad_output, const Operand& filter, const Operand& grad_input,
                                 const LoweredPlan& plan, const Operand& scratch, bool add_into_dx,
                                 const Operand& wide_image) {
    const int64_t Q = p.Q(), G = p.groups, Kg = p.filters_per_group();
    const uint64_t k_red = uint64_t(filter_taps(p));
    const uint64_t x_image = uint64_t(p.C * p.H * p.W);
    for_each_chunk(p, plan, context.pool->alignment(), grad_input, grad_output, [&](const Chunk& chunk) {
        const int64_t images = chunk.images, p0 = chunk.p0, rows = chunk.rows;
        const Window& dy = chunk.output;
        const Window& dx = chunk.input;
        const uint64_t m_chunk = uint64_t(images * rows * Q);
        const BufferRange dcol{scratch.allocation.buffer, scratch.allocation.offset, m_chunk * k_red * G * 4};
        for (int64_t g = 0; g < G; ++g) {
            // A = dy: rows are the chunk's output positions, the reduction runs over the group's filters.
            const OutputMatrix v = output_matrix(p, dy.delta, g, p0, rows);
            const GemmExtent shape = backward_data_gemm(p, int64_t(m_chunk));
            GemmProblem gp;
            gp.M = u(shape.M), gp.N = u(shape.N), gp.K = u(shape.K);
            gp.a = {dy.range, v.offset, v.row_stride, v.col_stride, 0, 0, p.data_type};
            gp.a_m_segment = u(v.segment), gp.a_m_segment_stride = u(v.segment_stride);
            const Window w = filter.whole();
            gp.b = {w.range, w.delta + uint64_t(g * Kg) * k_red, k_red, 1, 0, 0, p.data_type};
            gp.c = {dcol, uint64_t(g) * m_chunk * k_red, k_red, 1, 0, 0, DataType::F32};  // summed again by col2im
            record_gemm(context, stream, gp);
        }
        if (!wide_image) {  // bands add into dx, an fp32 one (or whole images, each value written once)
            record_col2im(context, stream, p, dcol, dx, p.data_type, chunk, p0 > 0 || add_into_dx);
            return;
        }
        // A 16-bit dx in bands: the image's bands add up in its fp32 copy (starting from the bias dx holds,
        // with add_into_dx), rounded into dx after the last band.
        const uint64_t image_at = uint64_t(chunk.n0) * x_image;
        if (p0 == 0 && add_into_dx)
            record_run(context, stream, grad_input, image_at, wide_image, 0, x_image, false, p.data_type, DataType::F32);
        record_col2im(context, stream, p, dcol, wide_image.whole(), DataType::F32, chunk, p0 > 0 || add_into_dx);
        if (p0 + rows == p.P())
            record_run(context, stream, wide_image, 0, grad_input, image_at, x_image, false, DataType::F32, p.data_type);
    });
}

void record_im2col_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& p,
                                   const Operand& input, const Operand& grad_output, const Operand& grad_filter,
                                   const LoweredPlan& plan, const Operand& scratch, uint32_t splits,
                                   const Operand& partials, const Operand& wide_filter) {
    const int64_t Q = p.Q(), G = p.groups, Kg = p.filters_per_group();
    const uint64_t k_red = uint64_t(filter_taps(p));
    const DataType type = p.data_type;  // x, dy and col
    const SumTarget dw_all = sum_target(grad_filter, wide_filter, p.weight_gradient_type());
    for_each_chunk(p, plan, context.pool->alignment(), input, grad_output, [&](const Chunk& chunk) {
        const int64_t images = chunk.images, p0 = chunk.p0, rows = chunk.rows;
        const bool first = chunk.first;
        const Window& x = chunk.input;
        const Window& dy = chunk.output;
        const uint64_t m_chunk = uint64_t(images * rows * Q);
        const BufferRange col{scratch.allocation.buffer, scratch.allocation.offset,
                              whole_words(m_chunk * k_red * G * plan.lowered_bytes)};
        record_im2col_lowering(context, stream, p, plan.transposed, x, col, type, p0, rows, images);
        // Split the chunk's positions into pieces of `piece` (whole NCHW images), the last one shorter.
        const int64_t unit = split_unit(p, rows, images);
        const int64_t units = int64_t(m_chunk) / unit;
        const int64_t piece = (units + splits - 1) / splits * unit;
        const int64_t full = int64_t(m_chunk) / piece, rest = int64_t(m_chunk) - full * piece;
        const bool split = splits > 1 && full + (rest > 0) > 1;
        for (int64_t g = 0; g < G; ++g) {
            const OutputMatrix v = output_matrix(p, dy.delta, g, p0, rows);
            const GemmExtent shape = backward_filter_gemm(p, int64_t(m_chunk));
            GemmProblem gp;
            gp.M = u(shape.M), gp.N = u(shape.N), gp.K = u(shape.K);
            // A = dy^T: rows are filters, the reduction runs over the chunk's output positions.
            gp.a = {dy.range, v.offset, v.col_stride, v.row_stride, 0, 0, type};
            gp.a_k_segment = u(v.segment), gp.a_k_segment_stride = u(v.segment_stride);
            const uint64_t col_base = uint64_t(g) * m_chunk * k_red;
            if (plan.transposed)
                gp.b = {col, col_base, 1, m_chunk, 0, 0, type};
            else
                gp.b = {col, col_base, k_red, 1, 0, 0, type};
            const GemmMatrix dw{dw_all.window.range, dw_all.window.delta + uint64_t(g * Kg) * k_red, k_red, 1, 0, 0,
                                dw_all.type};
            if (!split) {
                gp.c = dw;
                gp.beta = first ? 0.0f : 1.0f;  // chunks add up in order
                record_gemm(context, stream, gp);
                continue;
            }
            // Offsets of one piece along the reduction, in A (dy) and B (col).
            const uint64_t a_piece =
                unit == 1 ? uint64_t(piece) * v.row_stride : uint64_t(piece / unit) * v.segment_stride;
            const uint64_t b_piece = plan.transposed ? uint64_t(piece) : uint64_t(piece) * k_red;
            const uint64_t product = uint64_t(Kg) * k_red;
            gp.c = {partials.whole().range, 0, k_red, 1, product, 0};  // workspace: element 0 at its start
            GemmProblem pieces = gp;
            pieces.K = u(piece), pieces.batch_i = u(full);
            pieces.a.batch_i = a_piece, pieces.b.batch_i = b_piece;
            record_gemm(context, stream, pieces);
            if (rest > 0) {
                GemmProblem last = gp;
                last.K = u(rest);
                last.a.offset += uint64_t(full) * a_piece, last.b.offset += uint64_t(full) * b_piece;
                last.c.offset = uint64_t(full) * product;
                record_gemm(context, stream, last);
            }
            record_splitk_reduce(context, stream, partials.whole().range, dw.range, dw.offset, product,
                                 full + (rest > 0), !first, dw.type);
        }
    });
    round_wide_output(context, stream, wide_filter, grad_filter, uint64_t(p.filter_elements()), p.weight_gradient_type());
}

}  // namespace vkconv::detail
