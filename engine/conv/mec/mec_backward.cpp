// MEC backward-data and backward-filter (see lowered/lowered.hpp), in the forward's chunks and on its
// lowered matrix L[g][n][q][h][s][c]: output row p of an image reads the window of lowered rows
// [p*sh, p*sh + (R-1)*dh] in every q, so
//   backward-data:   dL(window of p) += dy(p) * w   (Q x R*S*C/G per row), then dx gathers from dL;
//   backward-filter: dw += sum over p of window(p)^T * dy(p), one GEMM whose reduction runs over (p, q).
// Windows of neighbouring rows overlap, so several output rows add into one row of dL. Backward-data
// therefore gathers rather than scatters: row h of dL is one GEMM over the (tap r, filter k) pairs that
// reach it, dL(h) = sum over r with sh | h - r*dh of dy((h - r*dh) / sh) * w(r), its reduction running
// down dy's rows through segmented K against a copy of w with its taps reordered; every dL value is
// written once, by one invocation, in a fixed order (no atomics, no zero fill, no zero-dilated dy).
#include <algorithm>
#include <array>
#include <numeric>
#include <vector>

#include "context/element_build.hpp"
#include "conv/gemm_mapping.hpp"
#include "conv/lowered/lowered.hpp"
#include "conv/mec/mec.hpp"
#include "conv/shared/wide_output.hpp"
#include "conv/tiled/copy_run.hpp"
#include "gemm/gemm.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {
namespace {

struct GatherPush {
    uint32_t h0;
    uint32_t dx_offset;
    uint32_t row_first, row_count;
    uint32_t accumulate;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(GatherPush, mec_gather)
VKCONV_PUSH_MEMBER(GatherPush, mec_gather, dx_offset)
VKCONV_PUSH_MEMBER(GatherPush, mec_gather, row_first)
VKCONV_PUSH_MEMBER(GatherPush, mec_gather, accumulate)

uint32_t u(int64_t v) {
    return static_cast<uint32_t>(v);
}

constexpr int64_t kChannelBlock = 16;  // mec_gather's NCHW channel block: one 64-byte cache line of dL

// dx (the chunk's images, input rows [row_first, row_first + row_count)) from dL.
void record_mec_gather(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const BufferRange& lowered,
                       const Window& dx, DataType dx_type, int64_t p0, int64_t rows, int64_t images, int64_t row_first,
                       int64_t row_count, bool accumulate) {
    PipelineDesc desc;
    desc.shader = "mec_gather" + element_build(context, p.data_type);
    desc.bindings.assign(2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(GatherPush);
    auto spec = mec_specialization<contract::mec_gather>(p, input_rows_read(p, rows), images);
    spec.set(contract::mec_gather::spec::DX_TYPE, element_constant(dx_type));
    desc.specialization = spec.set(contract::mec_gather::spec::CHANNEL_BLOCK, kChannelBlock).values();
    const std::array<Binding, 2> bindings{Binding{lowered, false}, Binding{dx.range, true}};
    const int64_t channels = p.layout == Layout::NHWC ? p.C : (p.C + kChannelBlock - 1) / kChannelBlock * kChannelBlock;
    dispatch_elements(stream, context.pipelines->get(desc), bindings,
                      GatherPush{u(p0 * p.stride_h), u(dx.delta), u(row_first), u(row_count), accumulate, 0, 0},
                      uint64_t(images * channels * row_count * p.W));
}

// dx of the chunk from its dL: all input rows of whole images (rows no window reaches get 0), else the
// band's rows, added to what earlier bands left where their windows overlap.
// (The first band writes every row of dx; with `add_into_dx` it too adds to what dx holds.) A 16-bit dx in
// bands adds up in its image's fp32 copy `wide_image` (starting from the bias dx holds, with add_into_dx),
// rounded into dx after the last band.
void record_dx_from_dl(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const Chunk& chunk,
                       const BufferRange& lowered, bool add_into_dx, const Operand& grad_input,
                       const Operand& wide_image) {
    const uint64_t x_image = uint64_t(p.C * p.H * p.W), image_at = uint64_t(chunk.n0) * x_image;
    const bool wide = static_cast<bool>(wide_image);
    if (wide && chunk.p0 == 0 && add_into_dx)
        record_run(context, stream, grad_input, image_at, wide_image, 0, x_image, false, p.data_type, DataType::F32);
    const bool later_band = chunk.p0 > 0;
    const int64_t first_padded_row = chunk.p0 * p.stride_h;
    int64_t row_first = 0, row_count = p.H;
    if (later_band) {
        row_first = std::max<int64_t>(0, first_padded_row - p.pad_h);
        row_count = std::min<int64_t>(p.H, first_padded_row - p.pad_h + input_rows_read(p, chunk.rows)) - row_first;
    }
    if (row_count > 0)
        record_mec_gather(context, stream, p, lowered, wide ? wide_image.whole() : chunk.input,
                          wide ? DataType::F32 : p.data_type, chunk.p0, chunk.rows, chunk.images, row_first, row_count,
                          later_band || add_into_dx);
    if (wide && chunk.p0 + chunk.rows == p.P())
        record_run(context, stream, wide_image, 0, grad_input, image_at, x_image, false, DataType::F32, p.data_type);
}

// Taps are counted reversed, r' = R-1-r, so that a row's taps meet dy's rows in increasing order. The
// taps reaching a lowered row form a progression r' = first, first + t, ... with t = sh / gcd(sh, dh); the
// filter copy orders them by (r' mod t, r' div t) so that any such progression is consecutive rows of it.
struct TapOrder {
    int64_t step = 1;               // t
    std::vector<int64_t> position;  // position[r']: row block of r' in the copy
};

TapOrder tap_order(const ConvProblem& p) {
    TapOrder order;
    order.step = p.stride_h / std::gcd(p.stride_h, p.dilation_h);
    order.position.resize(size_t(p.R));
    int64_t next = 0;
    for (int64_t residue = 0; residue < order.step; ++residue)
        for (int64_t rr = residue; rr < p.R; rr += order.step) order.position[size_t(rr)] = next++;
    return order;
}

// W'[g][position(r')][k][s][c] = w[g*Kg + k] at tap (R-1-r', s, c).
void record_reordered_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const TapOrder& order,
                             const Operand& filter, const BufferRange& reordered) {
    const int64_t R = p.R, S = p.S, Cg = p.channels_per_group(), Kg = p.filters_per_group();
    const int64_t taps = R * S * Cg;
    const Window w = filter.whole();
    for (int64_t g = 0; g < p.groups; ++g) {
        for (int64_t rr = 0; rr < R; ++rr) {
            const int64_t r = R - 1 - rr;
            const uint64_t out = uint64_t((g * R + order.position[size_t(rr)]) * Kg * S * Cg);
            if (p.layout == Layout::NHWC)
                record_permute(context, stream, w.range, w.delta + uint64_t(g * Kg * taps + r * S * Cg), reordered, out,
                               {1, Kg, S, Cg}, {0, taps, Cg, 1}, {}, p.data_type, p.data_type);
            else
                record_permute(context, stream, w.range, w.delta + uint64_t(g * Kg * taps + r * S), reordered, out,
                               {1, Kg, S, Cg}, {0, taps, 1, R * S}, {}, p.data_type, p.data_type);
        }
    }
}

// dL row h of the chunk = sum over the taps r that reach it of dy(p0 + (h - r*dh) / sh) * w(r).
void record_dl_gather(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const TapOrder& order,
                      const Chunk& chunk, const MecLowered& l, const BufferRange& reordered) {
    const bool nhwc = p.layout == Layout::NHWC;
    const int64_t P = p.P(), Q = p.Q(), G = p.groups, Kg = p.filters_per_group();
    const int64_t R = p.R, sh = p.stride_h, dh = p.dilation_h;
    const int64_t images = chunk.images, p0 = chunk.p0, rows = chunk.rows;
    const MecWindows& window = l.windows;
    const uint64_t row_floats = window.row, y_image = uint64_t(p.K * P * Q);
    const uint64_t dy_row = uint64_t(Q * (nhwc ? p.K : 1));  // floats from one output row of dy to the next
    const Window& dy = chunk.output;
    // The taps of row h: (first reversed tap, count), with output row (h - r*dh) / sh inside the chunk.
    auto taps_of = [&](int64_t h) {
        int64_t first = -1, count = 0;
        for (int64_t rr = 0; rr < R; ++rr) {
            const int64_t t = h - (R - 1 - rr) * dh;
            if (t < 0 || t % sh != 0 || t / sh >= rows) continue;
            if (first < 0) first = rr;
            ++count;
        }
        return std::pair{first, count};
    };
    // Rows h and h + sh have the same taps, one output row further down dy: runs of them (within one
    // residue of h mod sh) are one batched GEMM.
    for (int64_t residue = 0; residue < std::min(sh, l.rows); ++residue) {
        for (int64_t h0 = residue; h0 < l.rows;) {
            const auto [first, count] = taps_of(h0);
            int64_t h1 = h0 + sh;
            while (h1 < l.rows && taps_of(h1) == std::pair{first, count}) h1 += sh;
            // dy row of the first tap and k = 0; each further tap is dh/gcd(sh, dh) output rows down.
            const int64_t first_row = count ? p0 + (h0 - (R - 1 - first) * dh) / sh : 0;
            const int64_t tap_rows = order.step * dh / sh;
            for (int64_t g = 0; g < G; ++g) {
                GemmProblem gp;
                gp.M = u(images * Q), gp.N = u(int64_t(row_floats)), gp.K = u(count * Kg);
                // A = dy from the first tap's row: rows (image, q), one row of dy per batch entry.
                const OutputMatrix v = output_matrix(p, dy.delta, g, first_row, 1);
                gp.a = {dy.range, v.offset, v.row_stride, v.col_stride, dy_row, 0, p.data_type};
                // k = (tap, filter): each tap one segment of Kg filters.
                gp.a_k_segment = u(Kg), gp.a_k_segment_stride = u(tap_rows * int64_t(dy_row));
                if (images > 1) gp.a_m_segment = u(Q), gp.a_m_segment_stride = u(int64_t(y_image));
                const int64_t block = count ? order.position[size_t(first)] : 0;
                gp.b = {reordered, uint64_t((g * R + block) * Kg) * row_floats, row_floats, 1, 0, 0, p.data_type};
                // C = dL rows h0, h0 + sh, ...: one row per batch entry, a window_step apart.
                gp.c = {l.range,
                        uint64_t(g) * l.group_floats + uint64_t(h0) * row_floats,
                        window.column,
                        1,
                        window.window_step,
                        0};
                gp.batch_i = u((h1 - h0) / sh);
                record_gemm(context, stream, gp);  // count 0: rows no output row reaches are written as 0
            }
            h0 = h1;
        }
    }
}

}  // namespace

void record_mec_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& p,
                              const Operand& grad_output, const Operand& filter, const Operand& grad_input,
                              const LoweredPlan& plan, const Operand& scratch, const Operand& filter_copy,
                              bool add_into_dx, const Operand& wide_image) {
    const TapOrder order = tap_order(p);
    // The copy is workspace: its element 0 is at its start.
    const BufferRange reordered = filter_copy.whole().range;
    record_reordered_filter(context, stream, p, order, filter, reordered);
    for_each_chunk(p, plan, context.pool->alignment(), grad_input, grad_output, [&](const Chunk& chunk) {
        const MecLowered l = mec_lowered(p, chunk, scratch, DataType::F32);  // dL: fp32 sums, summed again
        record_dl_gather(context, stream, p, order, chunk, l, reordered);
        record_dx_from_dl(context, stream, p, chunk, l.range, add_into_dx, grad_input, wide_image);
    });
}

MecFilterSplit mec_backward_filter_split(ContextImpl& context, const ConvProblem& p, const LoweredPlan& plan,
                                         uint64_t binding_limit) {
    const uint64_t kg = uint64_t(p.filters_per_group()), k_red = uint64_t(filter_taps(p));
    const uint64_t product = kg * k_red;
    const GemmConfigTable& table = gemm_configs(context);
    const GemmConfig& config = pick_gemm_config(table, k_red, kg, 1);
    const uint64_t tiles =
        (k_red + config.tile_m() - 1) / config.tile_m() * ((kg + config.tile_n() - 1) / config.tile_n());
    // (A 16-bit problem's partial products, fp32 as its fp32 twin's, take half the twin's: half the slots.)
    const uint64_t fill = (table.wanted_workgroups + tiles - 1) / tiles;
    const uint64_t wanted = p.data_type == DataType::F32 ? fill : std::max<uint64_t>(1, fill / 2);
    MecFilterSplit split;
    split.piece_rows = plan.rows;
    if (wanted <= 1) return split;  // one GEMM per image fills the device
    const uint64_t max_slots = std::max<uint64_t>(1, binding_limit / (product * 4));
    split.images_at_once = int64_t(std::min<uint64_t>({uint64_t(plan.images), wanted, max_slots}));
    // Pieces of at least 64 reduction positions (p, q) each.
    const int64_t max_pieces = std::max<int64_t>(1, std::min<int64_t>(plan.rows, plan.rows * p.Q() / 64));
    int64_t pieces = int64_t(std::min<uint64_t>((wanted + split.images_at_once - 1) / split.images_at_once,
                                                max_slots / uint64_t(split.images_at_once)));
    pieces = std::clamp<int64_t>(pieces, 1, max_pieces);
    split.piece_rows = (plan.rows + pieces - 1) / pieces;
    pieces = (plan.rows + split.piece_rows - 1) / split.piece_rows;
    const uint64_t slots = uint64_t(split.images_at_once * pieces);
    split.slots = slots > 1 ? slots : 0;
    return split;
}

namespace {

// The filters of a group whose dw a pass builds at a time: [first, first + count) (MecFilterSplit::filters).
struct FilterChunk {
    int64_t first = 0, count = 0;
};

// One group's dw from one chunk, for the filter chunk f: A = window^T, B = dy(p, q; k) of f's filters of the
// group, before any split.
GemmProblem window_by_dy(const ConvProblem& p, const Chunk& chunk, const MecLowered& l, const MecFilterSplit& split,
                         int64_t g, const FilterChunk& f) {
    const int64_t Q = p.Q();
    const uint64_t k_red = uint64_t(filter_taps(p));
    const MecWindows& window = l.windows;
    const int64_t p0 = chunk.p0;
    const Window& dy = chunk.output;
    // A = window^T: rows m = (r, s, c) of a window, reduction k = (p, q): k's q steps a whole L row
    // of lowered_rows (stride), its p steps sh lowered rows (segments of Q).
    GemmProblem gp;
    gp.M = u(k_red), gp.N = u(f.count);
    gp.a = {l.range,
            uint64_t(g) * l.group_floats,
            1,
            window.column,
            window.image,
            uint64_t(split.piece_rows) * window.window_step,
            p.data_type};
    gp.a_k_segment = u(Q), gp.a_k_segment_stride = u(window.window_step);
    if (!window.taps_contiguous()) gp.a_m_segment = u(window.row), gp.a_m_segment_stride = u(window.tap_step);
    // B = dy(p, q; k) of the group: batch i steps images, batch j a piece of output rows.
    const OutputMatrix v = output_matrix(p, dy.delta, g, p0, chunk.rows);
    gp.b = {dy.range,     v.offset + uint64_t(f.first) * v.col_stride, v.row_stride,
            v.col_stride, v.image_stride, uint64_t(split.piece_rows * Q) * v.row_stride, p.data_type};
    return gp;
}

// No split: each image's product adds into dw in order (`at` starts at the first of `count` images).
void record_images_in_order(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const GemmProblem& at,
                            const GemmMatrix& target, int64_t rows, int64_t count, uint64_t image_floats, bool first) {
    const uint64_t y_image = uint64_t(p.K * p.P() * p.Q());
    for (int64_t i = 0; i < count; ++i) {
        GemmProblem one = at;
        one.K = u(rows * p.Q());
        one.a.offset += uint64_t(i) * image_floats, one.b.offset += uint64_t(i) * y_image;
        one.c = target;
        one.beta = first && i == 0 ? 0.0f : 1.0f;
        record_gemm(context, stream, one);
    }
}

// Partial products in slots [image][piece], summed in that order into group g of dw (of `dw_type`).
void record_pieces_then_reduce(ContextImpl& context, CommandStream& stream, const ConvProblem& p, GemmProblem at,
                               const MecFilterSplit& split, const Operand& partials, const Window& dw,
                               DataType dw_type, int64_t g, int64_t rows, int64_t count, bool first) {
    const int64_t Q = p.Q();
    const uint64_t k_red = uint64_t(filter_taps(p));
    const uint64_t product = uint64_t(at.N) * k_red;  // (the filter chunk's)
    const int64_t full = rows / split.piece_rows, rest = rows % split.piece_rows;
    const int64_t pieces = full + (rest > 0);
    at.c = {partials.whole().range, 0, 1, k_red, uint64_t(pieces) * product, product};  // workspace
    if (full > 0) {
        GemmProblem whole_pieces = at;
        whole_pieces.K = u(split.piece_rows * Q);
        whole_pieces.batch_i = u(count), whole_pieces.batch_j = u(full);
        record_gemm(context, stream, whole_pieces);
    }
    if (rest > 0) {
        GemmProblem last = at;
        last.K = u(rest * Q);
        last.a.offset += uint64_t(full) * at.a.batch_j, last.b.offset += uint64_t(full) * at.b.batch_j;
        last.c.offset = uint64_t(full) * product;
        last.batch_i = u(count);
        record_gemm(context, stream, last);
    }
    record_splitk_reduce(context, stream, partials.whole().range, dw.range, dw.delta + uint64_t(g) * product, product,
                         count * pieces, !first, dw_type);
}

// Group g of dw from one lowered chunk, split.images_at_once images at a time.
void record_group_filter_grad(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const Chunk& chunk,
                              const MecLowered& l, const MecFilterSplit& split, const Operand& partials,
                              const Window& dw, DataType dw_type, int64_t g, const FilterChunk& f) {
    const uint64_t k_red = uint64_t(filter_taps(p));
    const uint64_t product = uint64_t(f.count) * k_red;
    const uint64_t y_image = uint64_t(p.K * p.P() * p.Q());
    const int64_t images = chunk.images;
    const GemmProblem gp = window_by_dy(p, chunk, l, split, g, f);
    const GemmMatrix target{dw.range, dw.delta + uint64_t(g) * product, 1, k_red, 0, 0, dw_type};
    for (int64_t i0 = 0; i0 < images; i0 += split.images_at_once) {
        const int64_t count = std::min(split.images_at_once, images - i0);
        const bool first = chunk.first && i0 == 0;
        GemmProblem at = gp;
        at.a.offset += uint64_t(i0) * l.image_floats;
        at.b.offset += uint64_t(i0) * y_image;
        if (!split.slots)
            record_images_in_order(context, stream, p, at, target, chunk.rows, count, l.image_floats, first);
        else
            record_pieces_then_reduce(context, stream, p, at, split, partials, dw, dw_type, g, chunk.rows, count, first);
    }
}

}  // namespace

void record_mec_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const Operand& input,
                                const Operand& grad_output, const Operand& grad_filter, const LoweredPlan& plan,
                                const Operand& scratch, const Operand& filter_copy, const MecFilterSplit& split,
                                const Operand& partials, const Operand& wide_filter) {
    const bool nhwc = p.layout == Layout::NHWC;
    const int64_t Cg = p.channels_per_group(), R = p.R, S = p.S;
    const uint64_t k_red = uint64_t(R * S * Cg);
    // dw is produced in L's (r, s, c) tap order: into OHWI directly (a 16-bit one into its fp32 copy), into an
    // fp32 copy permuted to OIHW at the end (rounding a 16-bit dw once).
    const SumTarget target =
        nhwc ? sum_target(grad_filter, wide_filter, p.weight_gradient_type()) : SumTarget{filter_copy.whole(), DataType::F32};
    const Window& dw = target.window;

    // All filters at once, or (split.filters, one group) a chunk of them at a time, lowering x again for each.
    const int64_t Kg = p.filters_per_group(), per = split.filters ? split.filters : Kg;
    for (int64_t k0 = 0; k0 < Kg; k0 += per) {
        const FilterChunk f{k0, std::min(per, Kg - k0)};
        for_each_chunk(p, plan, context.pool->alignment(), input, grad_output, [&](const Chunk& chunk) {
            const MecLowered l = mec_lowered(p, chunk, scratch, p.data_type);
            record_mec_lowering(context, stream, p, chunk.input, l.range, chunk.p0, chunk.rows, chunk.images);
            for (int64_t g = 0; g < p.groups; ++g)
                record_group_filter_grad(context, stream, p, chunk, l, split, partials, dw, target.type, g, f);
        });
        // The OHWI copy (of the chunk's filters) permuted into OIHW, or NHWC's copy of a chunk rounded into its
        // filters of dw, each value rounded once.
        if (!nhwc)
            record_permute(context, stream, dw.range, dw.delta, grad_filter.whole().range,
                           grad_filter.whole().delta + uint64_t(k0) * k_red, {split.filters ? f.count : p.K, Cg, R, S},
                           {int64_t(k_red), 1, int64_t(S * Cg), Cg}, {}, DataType::F32, p.weight_gradient_type());
        else if (split.filters)
            record_run(context, stream, wide_filter, 0, grad_filter, uint64_t(k0) * k_red, uint64_t(f.count) * k_red,
                       false, DataType::F32, p.weight_gradient_type());
    }
    if (nhwc && !split.filters)
        round_wide_output(context, stream, wide_filter, grad_filter, uint64_t(p.filter_elements()),
                          p.weight_gradient_type());
}

}  // namespace vkconv::detail
