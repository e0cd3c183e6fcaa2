// MEC forward (Cho & Brand 2017): lower a chunk into L[g][n][q][h][s][c], then every output row is a GEMM
// over an overlapping window of L, all rows of all images in one strided-batched dispatch per group.
//   Solution B: batch (image, output row), each writing its Q x K/G block straight into the output.
//   Solution A: batch (output row), each a (images*Q) x K/G GEMM, the result in (P, N, Q, K) order parked
//   in the output, copied into L's buffer (no longer needed) and transposed back into place.
// The epilogue (conv/epilogue.hpp) goes where y is written: all of it in Solution B's GEMM; in Solution A,
// alpha and the bias in the GEMM and the residual and activation in the permute that moves the result into
// place. An in-place residual (z is y) would be overwritten by the parked result, so Solution A then first
// moves z itself into (P, N, Q, K) order within y (a copy into L's buffer and a permute back, before the
// lowering), and the GEMM applies the whole epilogue to the parked values, the permute only moving them.
// 16-bit tensors do the same with every residual (z permuted straight into y), so each value is rounded once.
// (One NHWC image needs no permute: its GEMM writes y in place and applies all of it.)
#include <array>

#include "context/element_build.hpp"
#include "conv/epilogue.hpp"
#include "conv/gemm_mapping.hpp"
#include "conv/lowered/lowered.hpp"
#include "conv/mec/mec.hpp"
#include "gemm/gemm.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {
namespace {

struct LowerPush {
    uint32_t h0;  // the chunk's first padded input row
    uint32_t x_offset;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(LowerPush, mec_lower)
VKCONV_PUSH_MEMBER(LowerPush, mec_lower, h0)
VKCONV_PUSH_MEMBER(LowerPush, mec_lower, x_offset)

uint32_t u(int64_t v) {
    return static_cast<uint32_t>(v);
}

}  // namespace

MecLowered mec_lowered(const ConvProblem& p, const Chunk& chunk, const Operand& scratch, DataType l_type) {
    MecLowered l;
    l.rows = input_rows_read(p, chunk.rows);
    l.windows = mec_windows(p, l.rows);
    l.image_floats = l.windows.image;
    l.group_floats = uint64_t(chunk.images) * l.image_floats;
    // L holds x's elements for the lowering (forward, backward-filter), fp32 sums for backward-data's dL.
    l.range = {scratch.allocation.buffer, scratch.allocation.offset,
               whole_words(l.group_floats * uint64_t(p.groups) * element_bytes(l_type))};
    return l;
}

void record_mec_lowering(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const Window& x,
                         const BufferRange& lowered, int64_t p0, int64_t rows, int64_t images) {
    const int64_t lowered_rows = input_rows_read(p, rows);
    PipelineDesc desc;
    desc.shader = "mec_lower" + element_build(context, p.data_type);
    desc.bindings.assign(2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(LowerPush);
    using Id = contract::mec_lower::spec;
    auto spec = mec_specialization<contract::mec_lower>(p, lowered_rows, images);
    spec.set(Id::X_TYPE, element_constant(p.data_type)).set(Id::L_TYPE, element_constant(p.data_type));
    desc.specialization = spec.values();
    const std::array<Binding, 2> bindings{Binding{x.range, false}, Binding{lowered, true}};
    const uint64_t floats = uint64_t(p.groups * images * p.Q() * lowered_rows * p.S * p.channels_per_group());
    dispatch_elements(stream, context.pipelines->get(desc), bindings, LowerPush{u(p0 * p.stride_h), u(x.delta), 0, 0},
                      floats);
}

namespace {

// The GEMM reads filter taps in L's (r, s, c) order: OHWI as given, OIHW through a copy.
Window filter_in_tap_order(ContextImpl& context, CommandStream& stream, const ConvProblem& p,
                           const ConvOperands& ops, const Operand& filter_copy) {
    Window filter = ops.filter.whole();
    if (p.layout != Layout::NHWC) {
        const Window given = filter;
        filter = filter_copy.whole();
        const int64_t R = p.R, S = p.S, Cg = p.channels_per_group();
        record_permute(context, stream, given.range, given.delta, filter.range, filter.delta, {p.K, R, S, Cg},
                       {Cg * R * S, S, 1, R * S}, {}, p.data_type, p.data_type);
    }
    return filter;
}

// What one chunk's group GEMMs share: the lowered matrix, the operands and where the result goes.
struct MecChunkGemm {
    const ConvProblem& p;
    const Chunk& chunk;
    const MecLowered& l;
    const Window& filter;
    const Window& bias;
    bool has_bias;
    bool solution_a;
    bool permuted;                 // the result reaches y through a permute
    const FusedEpilogue& epilogue;  // the part the GEMM applies
    const Window& z;
    const Window* wide = nullptr;   // Solution B into the fp32 copy of the chunk's images, its own residual
};

// The GEMM of group g of a chunk: the rows of one schedule's product over L's windows and the filters.
GemmProblem mec_group_gemm(const MecChunkGemm& c, int64_t g) {
    const ConvProblem& p = c.p;
    const int64_t images = c.chunk.images, p0 = c.chunk.p0, rows = c.chunk.rows;
    const int64_t Q = p.Q(), Kg = p.filters_per_group();
    const uint64_t k_red = uint64_t(filter_taps(p));
    const MecWindows& window = c.l.windows;
    const Window& y = c.chunk.output;
    // M is set per schedule below (the rows of one product), N and K are the forward pass's.
    const GemmExtent shape = forward_gemm(p, 0);
    GemmProblem gp;
    gp.N = u(shape.N), gp.K = u(shape.K);
    // A = the windows: rows q a column apart, the next output row's window a window_step on.
    const uint64_t lda = window.column, window_step = window.window_step;
    if (!window.taps_contiguous()) gp.a_k_segment = u(window.row), gp.a_k_segment_stride = u(window.tap_step);
    const DataType type = p.data_type;  // of L, the filter (and its copy), the bias and y
    gp.b = {c.filter.range, c.filter.delta + uint64_t(g * Kg) * k_red, 1, k_red, 0, 0, type};
    if (c.has_bias) gp.bias = c.bias.range, gp.bias_offset = c.bias.delta + uint64_t(g * Kg), gp.bias_type = type;
    if (c.solution_a) {
        // Rows m = (image, q) are uniformly strided because L[g][n][q] is contiguous in (n, q).
        gp.M = u(images * Q), gp.batch_i = u(rows);
        gp.a = {c.l.range, uint64_t(g) * c.l.group_floats, lda, 1, window_step, 0, type};
        if (images == 1) {
            // One image: the P row products are Q rows each; stacking them as row segments of one
            // product fills the tiles, and (P, 1, Q, K) order is unchanged.
            gp.M = u(rows * Q), gp.batch_i = 1;
            gp.a_m_segment = u(Q), gp.a_m_segment_stride = u(window_step);
        }
        // (p0 > 0 only for a band of one NHWC image, where (P, N, Q, K) order is already the final one.)
        gp.c = {y.range, y.delta + uint64_t(p0 * Q * p.K + g * Kg), uint64_t(p.K), 1, uint64_t(images * Q * p.K), 0, type};
        // Parked in place, the residual is at the value's own position (z moved there above); one NHWC
        // image writes y's own order, the residual's too.
        set_gemm_epilogue(gp, c.epilogue, y, c.permuted ? y : c.z);
    } else {
        // One Q-row GEMM per (image, output row). The rows of an image go in one product's M
        // dimension (row segments of Q, one window each) rather than the batch, so late layers
        // with a handful of output columns still fill whole tiles.
        gp.M = u(rows * Q), gp.batch_i = u(images);
        gp.a_m_segment = u(Q), gp.a_m_segment_stride = u(window_step);
        gp.a = {c.l.range, uint64_t(g) * c.l.group_floats, lda, 1, c.l.image_floats, 0, type};
        const Window& target = c.wide ? *c.wide : y;
        const OutputMatrix out = output_matrix(p, target.delta, g, p0, rows);
        gp.c = {target.range, out.offset, out.row_stride, out.col_stride, out.image_stride, 0,
                c.wide ? DataType::F32 : type};
        set_gemm_epilogue(gp, c.epilogue, target, c.wide ? target : c.z);
    }
    return gp;
}

// Solution A's residual where the GEMM applies the whole epilogue (in place, or 16-bit tensors): z moved into
// the (P, N, Q, K) order the GEMM parks its result in, within y, where the GEMM reads it. In place z is y's
// contents, so it goes through `copy` (L's buffer) first.
void park_residual(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const Window& y,
                   const Window& z, bool in_place, const BufferRange& copy, int64_t images) {
    const int64_t P = p.P(), Q = p.Q();
    const uint64_t count = uint64_t(images) * uint64_t(p.K * P * Q), bytes = element_bytes(p.data_type);
    // The chunk's y in (P, N, Q, K) order, and the strides of y's own order along those dimensions.
    const std::array<int64_t, 4> parked_dims{P, images, Q, p.K};
    const std::array<int64_t, 4> final_strides = p.layout == Layout::NHWC
                                                     ? std::array<int64_t, 4>{Q * p.K, P * Q * p.K, p.K, 1}
                                                     : std::array<int64_t, 4>{Q, p.K * P * Q, 1, P * Q};
    Window source = z;
    if (in_place) {
        const BufferRange chunk_y{y.range.buffer, y.range.offset + y.delta * bytes, count * bytes};
        stream.copy(chunk_y, {copy.buffer, copy.offset, count * bytes});
        source = {copy, 0};
    }
    record_permute(context, stream, source.range, source.delta, y.range, y.delta, parked_dims, final_strides, {},
                   p.data_type, p.data_type);
}

// Solution A's result sits in (P, N, Q, K) order; move it through L's buffer (`copy`) into place, the
// permute applying `write` (the residual and the activation, unless the GEMM applied them).
void unpark_output(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const Window& y,
                   const BufferRange& copy, int64_t images, const PermuteEpilogue& epilogue) {
    const int64_t P = p.P(), Q = p.Q();
    const uint64_t count = uint64_t(images) * uint64_t(p.K * P * Q), bytes = element_bytes(p.data_type);
    const int64_t row_stride = images * Q * p.K;  // one output row of every image in the chunk
    const BufferRange parked{y.range.buffer, y.range.offset + y.delta * bytes, count * bytes};
    stream.copy(parked, {copy.buffer, copy.offset, count * bytes});
    if (p.layout == Layout::NHWC)
        record_permute(context, stream, copy, 0, y.range, y.delta, {images, P, Q, p.K}, {Q * p.K, row_stride, p.K, 1},
                       epilogue, p.data_type, p.data_type);
    else
        record_permute(context, stream, copy, 0, y.range, y.delta, {images, p.K, P, Q}, {Q * p.K, 1, row_stride, p.K},
                       epilogue, p.data_type, p.data_type);
}

}  // namespace

void record_mec_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const ConvOperands& ops,
                        const LoweredPlan& plan, const Operand& scratch, const Operand& filter_copy,
                        const Operand& wide) {
    const bool nhwc = p.layout == Layout::NHWC;
    const Window filter = filter_in_tap_order(context, stream, p, ops, filter_copy);
    const Window bias = ops.bias_or(ops.filter);
    const uint64_t y_image = uint64_t(p.K * p.P() * p.Q());
    for_each_chunk(p, plan, context.pool->alignment(), ops.input, ops.output, [&](const Chunk& chunk) {
        const int64_t images = chunk.images;
        const Window& y = chunk.output;
        const MecLowered l = mec_lowered(p, chunk, scratch, p.data_type);
        const Window z = residual_window(ops.epilogue, uint64_t(chunk.n0) * y_image, uint64_t(images) * y_image,
                                         context.pool->alignment(), y);
        const bool solution_a = plan.schedule == MecSchedule::A;
        const bool permuted = solution_a && !(nhwc && images == 1);  // the result reaches y through a permute
        const bool in_place = residual_in_place(ops.epilogue, ops.output);
        // The GEMM applies the whole epilogue to the parked values, the permute only moving them, where the
        // residual is in place or a 16-bit result would otherwise be rounded twice (by the GEMM, then by a
        // permute applying the rest).
        const bool gemm_applies_all = in_place || p.data_type != DataType::F32;
        // (Bound in whole words: the packed 16-bit builds read an odd count's last element from one.)
        const BufferRange copy{scratch.allocation.buffer, scratch.allocation.offset,
                               whole_words(uint64_t(images) * y_image * element_bytes(p.data_type))};
        if (permuted && gemm_applies_all && ops.epilogue.has_residual())
            park_residual(context, stream, p, y, z, in_place, copy, images);
        record_mec_lowering(context, stream, p, chunk.input, l.range, chunk.p0, chunk.rows, images);
        // What the GEMM applies: all of the epilogue unless a permute writes y and can apply the rest.
        const FusedEpilogue gemm_epilogue = permuted && !gemm_applies_all ? ops.epilogue.scale_part() : ops.epilogue;
        auto record_gemms = [&](const Window* copy) {
            const MecChunkGemm gemm{p, chunk, l, filter, bias, bool(ops.bias), solution_a, permuted, gemm_epilogue, z,
                                    copy};
            for (int64_t g = 0; g < p.groups; ++g) record_gemm(context, stream, mec_group_gemm(gemm, g));
        };
        if (wide)
            record_wide_chunk(context, stream, p, chunk, ops, wide, [&](const Window& copy) { record_gemms(&copy); });
        else
            record_gemms(nullptr);
        if (permuted) {
            const FusedEpilogue write = gemm_applies_all ? FusedEpilogue{} : ops.epilogue.write_part();
            unpark_output(context, stream, p, y, copy, images, PermuteEpilogue{write, z});
        }
    });
}

}  // namespace vkconv::detail
