// Tiled passes for tensors too large to bind (tiled/tiled.hpp).
#include "conv/tiled/tiled.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <tuple>
#include <string>

#include "context/context_impl.hpp"
#include "context/element_build.hpp"
#include "conv/gemm_mapping.hpp"
#include "conv/heuristic.hpp"
#include "conv/lowered/lowered.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {
namespace {

int64_t ceil_div_nonnegative(int64_t a, int64_t b) {
    return a <= 0 ? 0 : (a + b - 1) / b;
}

// One tile: image n, a piece of the channels, and the rows it covers.
struct Tile {
    int64_t n = 0;
    TilePiece piece;
    int64_t p0 = 0, rows = 0;  // output (dy) rows the tile's problem has
    int64_t hs = 0, H = 0;     // its input rows: original rows [hs, hs + H), those outside [0, H) zero
    int64_t h0 = 0, h1 = 0;    // backward-data: the dx rows it writes
    bool first = true;         // backward-filter: the first tile of its piece (the sums start there)
    bool last = false;         // ... and the last (a 16-bit piece's fp32 sums are rounded into place there)
};

// (fp32 whatever the problem's type: the tile buffers hold fp32 values, tiled/tiled.hpp.)
ConvProblem tile_problem(const ConvProblem& p, const Tile& t) {
    ConvProblem q = p;
    q.data_type = DataType::F32;
    q.fp32_weight_gradients = false;
    q.N = 1;
    q.C = t.piece.c1 - t.piece.c0;
    q.K = t.piece.k1 - t.piece.k0;
    q.groups = t.piece.groups;
    q.H = t.H;
    q.pad_h = 0;  // the tile's rows hold the padding they read
    q.pad_h_end.reset();
    return q;
}

// A 16-bit dx summed over pieces of one group's filters: each (image, band) runs all the group's pieces in
// turn, adding up in an fp32 sum of the band (TileSlot::Sums) that is rounded into dx once, after the last.
bool dx_sums_over_pieces(const ConvProblem& p, Pass pass, const std::vector<TilePiece>& pieces) {
    return pass == Pass::BackwardData && p.data_type != DataType::F32 &&
           std::any_of(pieces.begin(), pieces.end(), [](const TilePiece& piece) { return !piece.first_of_channels; });
}

// Backward-data's tile of `piece` that writes dx rows [h0, min(H, h0 + band)) of image n.
Tile data_tile(const ConvProblem& p, const TilePiece& piece, int64_t n, int64_t h0, int64_t band) {
    Tile t{n, piece};
    t.h0 = h0, t.h1 = std::min(p.H, h0 + band);
    // The dy rows whose windows reach dx rows [h0, h1).
    t.p0 = ceil_div_nonnegative(h0 + p.pad_h - (p.R - 1) * p.dilation_h, p.stride_h);
    const int64_t p1 = std::min(p.P(), (t.h1 - 1 + p.pad_h) / p.stride_h + 1);
    t.rows = std::max<int64_t>(0, p1 - t.p0);
    t.hs = t.p0 * p.stride_h - p.pad_h;
    t.H = t.rows ? input_rows_read(p, t.rows) : 0;
    t.first = n == 0 && h0 == 0;
    t.last = n == p.N - 1 && t.h1 == p.H;
    return t;
}

// Calls visit(tile) for every tile in recording order: pieces, then images, then bands (with
// dx_sums_over_pieces, each run of one group's pieces inside the images and bands).
template <typename Visit>
void for_each_tile(const ConvProblem& p, Pass pass, const std::vector<TilePiece>& pieces, int64_t band, Visit&& visit) {
    const int64_t P = p.P();
    if (dx_sums_over_pieces(p, pass, pieces)) {
        for (size_t run = 0, end = 0; run < pieces.size(); run = end) {
            for (end = run + 1; end < pieces.size() && !pieces[end].first_of_channels;) ++end;
            for (int64_t n = 0; n < p.N; ++n)
                for (int64_t h0 = 0; h0 < p.H; h0 += band)
                    for (size_t i = run; i < end; ++i) visit(data_tile(p, pieces[i], n, h0, band));
        }
        return;
    }
    for (const TilePiece& piece : pieces) {
        bool first = true;
        for (int64_t n = 0; n < p.N; ++n) {
            if (pass == Pass::BackwardData) {
                for (int64_t h0 = 0; h0 < p.H; h0 += band) visit(data_tile(p, piece, n, h0, band));
            } else {
                for (int64_t p0 = 0; p0 < P; p0 += band) {
                    Tile t{n, piece};
                    t.p0 = p0, t.rows = std::min(band, P - p0);
                    t.hs = p0 * p.stride_h - p.pad_h;
                    t.H = input_rows_read(p, t.rows);
                    t.first = first;
                    t.last = n == p.N - 1 && p0 + t.rows == P;
                    first = false;
                    visit(t);
                }
            }
        }
    }
}

// The bytes the smallest copy of a band of `rows` rows binds in a tensor of the problem's extents (C, H, W)
// and type: one channel's rows in NCHW (copies go in runs of channels), one row of every channel in NHWC
// (runs of rows).
uint64_t band_span_bytes(const ConvProblem& p, int64_t C, int64_t rows, int64_t W) {
    return uint64_t(W) * (p.layout == Layout::NHWC ? uint64_t(C) : uint64_t(rows)) * element_bytes(p.data_type);
}

struct TileBuffers {
    uint64_t in = 0, filter = 0, bias = 0, out = 0, sums = 0;  // floats
};

TileBuffers buffers_of(const ConvProblem& p, Pass pass, const Tile& t) {
    const ConvProblem q = tile_problem(p, t);
    TileBuffers b;
    b.filter = uint64_t(q.filter_elements());
    if (p.has_bias && pass != Pass::BackwardData) b.bias = uint64_t(q.K);
    // A 16-bit dw and db: the piece's fp32 sums, dw's then db's.
    if (pass == Pass::BackwardFilter && p.weight_gradient_type() != DataType::F32) b.sums = b.filter + b.bias;
    // A 16-bit dx over pieces of one group's filters: the band's fp32 sum.
    if (pass == Pass::BackwardData && p.data_type != DataType::F32 && q.K < p.filters_per_group())
        b.sums = uint64_t(q.C * (t.h1 - t.h0) * p.W);
    b.in = uint64_t(q.C * q.H * q.W);        // x' (dx' for backward-data)
    b.out = uint64_t(q.K * t.rows * p.Q());  // y' (dy' for the backward passes)
    return b;
}

std::vector<TilePiece> make_pieces(const ConvProblem& p, int64_t filters_per_piece) {
    const int64_t Kg = p.filters_per_group(), Cg = p.channels_per_group();
    std::vector<TilePiece> pieces;
    if (filters_per_piece >= Kg) {  // runs of whole groups
        const int64_t groups = std::max<int64_t>(1, filters_per_piece / Kg);
        for (int64_t g = 0; g < p.groups; g += groups) {
            const int64_t g1 = std::min(p.groups, g + groups);
            pieces.push_back({g * Kg, g1 * Kg, g * Cg, g1 * Cg, g1 - g, true});
        }
    } else {  // runs of filters within a group: dx of the group's channels adds up over them
        for (int64_t g = 0; g < p.groups; ++g)
            for (int64_t k = 0; k < Kg; k += filters_per_piece)
                pieces.push_back(
                    {g * Kg + k, g * Kg + std::min(Kg, k + filters_per_piece), g * Cg, (g + 1) * Cg, 1, k == 0});
    }
    return pieces;
}

}  // namespace

bool needs_tiling(ContextImpl& context, const ConvProblem& p, Algorithm algorithm, const PassOptions& options) {
    const uint64_t limit = storage_binding_limit(context, options), align = context.pool->alignment();
    const uint64_t bytes = element_bytes(p.data_type);
    // (A filter-shaped tensor in the wider of its types: dw may be fp32, ConvProblem::weight_gradient_type.)
    const uint64_t filter = uint64_t(p.filter_elements()) * std::max<uint64_t>(bytes, element_bytes(p.weight_gradient_type()));
    if (algorithm == Algorithm::Direct || algorithm == Algorithm::ImplicitGemm) {
        // Direct and implicit-gemm bind whole tensors; with a bias, backward-filter's bias gradient binds one image of dy at a
        // time within the (possibly lowered) binding limit.
        const uint64_t range = context.device->limits().maxStorageBufferRange;
        const uint64_t dy_image = uint64_t(p.K * p.P() * p.Q()) * bytes;
        return uint64_t(std::max(p.input_elements(), p.output_elements())) * bytes > range || filter > range ||
               (p.has_bias && dy_image + align > storage_binding_limit(context, options));
    }
    const uint64_t image = uint64_t(std::max(p.C * p.H * p.W, p.K * p.P() * p.Q())) * bytes;
    return image + align > limit || filter > limit;
}

namespace {

// The plan with pieces of at most `filters` filters and the largest band in [1, max_band] that fits, or
// nothing.
std::optional<TiledPlan> plan_with(ContextImpl& context, const ConvProblem& p, Pass pass, Algorithm algorithm,
                                   const PassOptions& options, int64_t filters, int64_t max_band) {
    const uint64_t limit = storage_binding_limit(context, options), align = context.pool->alignment();
    const uint64_t fits = limit > align ? limit - align : 0;  // a binding's bytes, offset rounding included
    TiledPlan plan;
    plan.pass = pass;
    plan.pieces = make_pieces(p, filters);
    plan.tile_options = options;
    plan.tile_options.auto_choice = AutoChoice::Heuristic;
    for (int64_t band = max_band; band >= 1; --band) {
        // Every tile's buffers and the windows its copies bind must fit; then the tile pass must plan.
        bool ok = true;
        TileBuffers largest;
        std::vector<ConvProblem> shapes;
        for_each_tile(p, pass, plan.pieces, band, [&](const Tile& t) {
            if (!ok || t.rows == 0) return;
            const TileBuffers b = buffers_of(p, pass, t);
            for (uint64_t floats : {b.in, b.filter, b.out, b.sums})
                if (floats * 4 > fits) ok = false;
            const int64_t x_rows = std::min(t.H, p.H), c_all = p.C, k_all = p.K;
            if (band_span_bytes(p, c_all, x_rows, p.W) > fits || band_span_bytes(p, k_all, t.rows, p.Q()) > fits ||
                (pass == Pass::BackwardData && band_span_bytes(p, c_all, t.h1 - t.h0, p.W) > fits))
                ok = false;
            largest.in = std::max(largest.in, b.in), largest.filter = std::max(largest.filter, b.filter);
            largest.bias = std::max(largest.bias, b.bias), largest.out = std::max(largest.out, b.out);
            largest.sums = std::max(largest.sums, b.sums);
            const ConvProblem q = tile_problem(p, t);
            // Tiles differ only in these fields (tile_problem): compare them, not formatted strings.
            if (std::none_of(shapes.begin(), shapes.end(), [&](const ConvProblem& s) {
                    return s.C == q.C && s.K == q.K && s.groups == q.groups && s.H == q.H;
                }))
                shapes.push_back(q);
        });
        if (!ok || shapes.empty()) continue;
        const uint64_t buffer_bytes = workspace_bytes_of(
            context, std::array{largest.in, largest.filter, largest.bias, largest.out, largest.sums});
        if (options.workspace_limit) {
            if (buffer_bytes >= options.workspace_limit) continue;
            plan.tile_options.workspace_limit = options.workspace_limit - buffer_bytes;
        }
        // The algorithm is the same for every tile: the one given, or the heuristic's for the first tile.
        if (algorithm == Algorithm::Auto) {
            auto first = heuristic_whole_plan(context, shapes.front(), pass, plan.tile_options);
            if (!first) continue;
            plan.algorithm = first->algorithm;
        } else {
            plan.algorithm = algorithm;
        }
        // Every shape's plan, kept for recording; the tile pass's slots are each the largest any shape needs.
        std::vector<uint64_t> own(kSlots, 0);
        plan.shapes.clear();
        plan.partial_products = plan.bias_pieces = 0;
        for (const ConvProblem& q : shapes) {
            auto tile_plan = plan_algorithm(context, q, pass, plan.algorithm, plan.tile_options);
            if (!tile_plan) {
                ok = false;
                break;
            }
            for (size_t i = 0; i < kSlots; ++i) own[i] = std::max(own[i], tile_plan->slots[i]);
            plan.partial_products = std::max(plan.partial_products, tile_plan->partial_products);
            plan.bias_pieces = std::max(plan.bias_pieces, tile_plan->bias_pieces(q));
            plan.shapes.push_back({q.C, q.K, q.groups, q.H, *tile_plan});
        }
        if (!ok) continue;
        plan.band = band;
        plan.slots = {largest.in, largest.filter, largest.bias, largest.out, largest.sums};
        plan.slots.insert(plan.slots.end(), own.begin(), own.end());
        // The tile pass's slots were each planned under the limit alone; their largest together must fit.
        plan.workspace_bytes = workspace_bytes_of(context, plan.slots);
        if (options.workspace_limit && plan.workspace_bytes > options.workspace_limit) continue;
        plan.tiles = 0;
        for_each_tile(p, pass, plan.pieces, band, [&](const Tile&) { ++plan.tiles; });
        return plan;
    }
    return std::nullopt;
}

}  // namespace

const AlgorithmPlan& TiledPlan::plan_of(const ConvProblem& tile) const {
    for (const TileShapePlan& shape : shapes)
        if (shape.is(tile)) return shape.plan;
    throw Error(ErrorCategory::InvalidArgument, "tiled plan: no plan for the tile " + tile.str());
}

Planned<TiledPlan> plan_tiled(ContextImpl& context, const ConvProblem& p, Pass pass, Algorithm algorithm,
                              const PassOptions& options) {
    const uint64_t limit = storage_binding_limit(context, options), align = context.pool->alignment();
    const uint64_t per_filter = uint64_t(filter_taps(p)) * 4;
    if (per_filter + align > limit)
        return unsupported("one filter (" + std::to_string(per_filter) + " bytes) exceeds the binding limit of " +
                           std::to_string(limit) + " bytes (" + p.str() + ")");
    const int64_t rows_total = pass == Pass::BackwardData ? p.H : p.P();
    // Pieces as large as a binding allows, halved until some band fits.
    for (int64_t filters = std::min<int64_t>(p.K, int64_t((limit - align) / per_filter));; filters /= 2) {
        if (auto plan = plan_with(context, p, pass, algorithm, options, std::max<int64_t>(1, filters), rows_total))
            return *plan;
        if (filters <= 1) break;
    }
    // Nothing fits. Under a workspace limit, say what the smallest tiles (one row, one filter) would need.
    const std::string where = " in " + std::string(to_string(pass)) + " (" + p.str() + ")";
    const std::string none = std::string("no tiling fits: ") +
                             (algorithm == Algorithm::Auto ? std::string("no algorithm") : to_string(algorithm)) +
                             " can run even tiles of one row and one filter whose bindings fit the limit of " +
                             std::to_string(limit) + " bytes" + where;
    if (!options.workspace_limit) return unsupported(none);
    PassOptions unlimited = options;
    unlimited.workspace_limit = 0;
    std::optional<TiledPlan> smallest;
    std::vector<Algorithm> candidates{algorithm};
    if (algorithm == Algorithm::Auto) {
        candidates.clear();
        for (Algorithm a : all_algorithms())
            if (algorithm_applies(a, p, pass)) candidates.push_back(a);
    }
    for (Algorithm a : candidates) {
        auto plan = plan_with(context, p, pass, a, unlimited, 1, 1);
        if (plan && (!smallest || plan->workspace_bytes < smallest->workspace_bytes)) smallest = plan;
    }
    if (!smallest) return unsupported(none);
    const std::string need = std::to_string(smallest->workspace_bytes) + " bytes (" + to_string(smallest->algorithm) +
                             ", in tiles of one row and one filter), the workspace limit is " +
                             std::to_string(options.workspace_limit) + " bytes";
    if (algorithm == Algorithm::Auto)
        return Refusal{ErrorCategory::InvalidArgument,
                       "no algorithm fits: the smallest workspace any algorithm needs is " + need + where};
    return unsupported(std::string(to_string(algorithm)) + ": its smallest tiles need " + need + where);
}

std::optional<TiledPlan> fp32_tiles_for(ContextImpl& context, const ConvProblem& problem, Pass pass,
                                        Algorithm algorithm, const PassOptions& options, const Refusal& refusal) {
    if (!refusal.fp32_tiles_run_it) return std::nullopt;
    auto tiles = plan_tiled(context, problem, pass, algorithm, options);
    if (!tiles) return std::nullopt;
    return std::move(*tiles);
}

namespace {

// One image of an operand (a user tensor, or a compact tile with n = 0) as copy_box sees it.
struct ImageRef {
    const Operand* operand;
    int64_t n, C, H, W;
    uint64_t image() const { return uint64_t(C * H * W); }
};

struct BoxPush {
    uint32_t box_c, box_h, box_w;
    uint32_t src_c, src_h, src_w;
    int32_t src_c0, src_h0;
    uint32_t src_shift;
    uint32_t dst_c, dst_h, dst_w;
    int32_t dst_c0, dst_h0;
    uint32_t dst_shift;
    uint32_t accumulate;
    uint32_t residual_shift = 0;
    float beta = 0.0f, negative_slope = 0.0f;
    uint32_t base = 0, count = 0;
};
VKCONV_PUSH_SIZE(BoxPush, copy_box)
VKCONV_PUSH_MEMBER(BoxPush, copy_box, residual_shift)
VKCONV_PUSH_MEMBER(BoxPush, copy_box, negative_slope)
VKCONV_PUSH_MEMBER(BoxPush, copy_box, base)
VKCONV_PUSH_MEMBER(BoxPush, copy_box, src_c)
VKCONV_PUSH_MEMBER(BoxPush, copy_box, src_c0)
VKCONV_PUSH_MEMBER(BoxPush, copy_box, src_shift)
VKCONV_PUSH_MEMBER(BoxPush, copy_box, dst_c)
VKCONV_PUSH_MEMBER(BoxPush, copy_box, dst_shift)
VKCONV_PUSH_MEMBER(BoxPush, copy_box, accumulate)

// copy_box, applying `epilogue`'s residual and activation as it writes (its alpha is the tile pass's), from
// elements of `src_type` to elements of `dst_type` (the residual's too).
const Pipeline& copy_box_pipeline(ContextImpl& context, Layout layout, const FusedEpilogue& epilogue = {},
                                  DataType src_type = DataType::F32, DataType dst_type = DataType::F32) {
    using Id = contract::copy_box::spec;
    PipelineDesc desc;
    desc.shader = "copy_box" + element_build(context, src_type == DataType::F32 ? dst_type : src_type);
    desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(BoxPush);
    desc.specialization = Specialization<contract::copy_box>()
                              .set(Id::LOCAL_SIZE_X, kElementwiseWorkgroup)
                              .set(Id::NHWC, layout == Layout::NHWC)
                              .set(Id::ACTIVATION, activation_constant(epilogue.activation))
                              .set(Id::HAS_RESIDUAL, epilogue.has_residual())
                              .set(Id::SRC_TYPE, element_constant(src_type))
                              .set(Id::DST_TYPE, element_constant(dst_type))
                              .values();
    return context.pipelines->get(desc);
}

// Image-relative flat range [lo, hi) that channels [c0, c1) x rows [h0, h1) span (all columns).
std::pair<uint64_t, uint64_t> span_of(Layout layout, const ImageRef& r, int64_t c0, int64_t c1, int64_t h0,
                                      int64_t h1) {
    if (layout == Layout::NHWC)
        return {uint64_t((h0 * r.W) * r.C + c0), uint64_t(((h1 - 1) * r.W + r.W - 1) * r.C + c1)};
    return {uint64_t((c0 * r.H + h0) * r.W), uint64_t(((c1 - 1) * r.H + h1 - 1) * r.W + r.W)};
}

// dst box (+)= src box: channels [c, c + box_c) and rows [h, h + box_h) from each origin; source positions
// outside the source image read as zero. NCHW boxes go in runs of channels whose windows fit `limit`.
// Into a forward pass's y, `epilogue` adds beta * z (its residual, shaped as dst's tensor) and applies the
// activation (FusedEpilogue::write_part). Elements of `types.first` (src) to `types.second` (dst and the
// residual): widened, or rounded once as they are written.
void record_box(ContextImpl& context, CommandStream& stream, Layout layout, const ImageRef& src, int64_t src_c0,
                int64_t src_h0, const ImageRef& dst, int64_t dst_c0, int64_t dst_h0, int64_t box_c, int64_t box_h,
                bool accumulate, uint64_t limit, const FusedEpilogue& epilogue = {},
                std::pair<DataType, DataType> types = {DataType::F32, DataType::F32}) {
    if (box_c <= 0 || box_h <= 0) return;
    const uint64_t align = context.pool->alignment();
    const Pipeline& pipeline = copy_box_pipeline(context, layout, epilogue, types.first, types.second);

    // Runs that keep both windows within the limit: of channels in NCHW (m channels of a box span
    // ((m - 1) * H + box_h) * W floats), of rows in NHWC (m rows span at most m * W * C).
    const int64_t H = std::max(src.H, dst.H), W = std::max(src.W, dst.W), C = std::max(src.C, dst.C);
    const uint64_t fit = (limit > align ? limit - align : 0) / 4;
    int64_t channel_run = box_c, row_run = box_h;
    if (layout == Layout::NCHW) {
        const uint64_t extra = fit > uint64_t(box_h * W) ? fit - uint64_t(box_h * W) : 0;
        channel_run = std::max<int64_t>(1, std::min<int64_t>(box_c, 1 + int64_t(extra / (uint64_t(H) * W))));
    } else {
        row_run = std::max<int64_t>(1, std::min<int64_t>(box_h, int64_t(fit / (uint64_t(W) * C))));
    }
    // One copy of channels [c, c + count_c) and rows [h, h + count_h) of the box; halved (channels first,
    // then rows) where a window would cross a page boundary of a paged tensor. Pages hold whole rows
    // (memory/paging.hpp), so a copy of one row of one channel (NCHW) or of one row (NHWC) always fits one.
    auto copy = [&](auto&& self, int64_t c, int64_t count_c, int64_t h, int64_t count_h) -> void {
        // Source: the part of the run inside the source image (nothing inside: any valid float).
        const int64_t sc0 = std::max<int64_t>(0, src_c0 + c), sc1 = std::min(src.C, src_c0 + c + count_c);
        const int64_t sh0 = std::max<int64_t>(0, src_h0 + h), sh1 = std::min(src.H, src_h0 + h + count_h);
        const bool src_inside = sc0 < sc1 && sh0 < sh1;
        uint64_t src_lo = 0, src_hi = 1;
        if (src_inside) std::tie(src_lo, src_hi) = span_of(layout, src, sc0, sc1, sh0, sh1);
        const uint64_t src_first = src_inside ? uint64_t(src.n) * src.image() + src_lo : 0;
        auto [dlo, dhi] = span_of(layout, dst, dst_c0 + c, dst_c0 + c + count_c, dst_h0 + h, dst_h0 + h + count_h);
        const uint64_t dst_first = uint64_t(dst.n) * dst.image() + dlo;
        const bool fits = in_one_page(*src.operand, src_first, src_hi - src_lo) &&
                          in_one_page(*dst.operand, dst_first, dhi - dlo) &&
                          (!epilogue.has_residual() || in_one_page(epilogue.residual, dst_first, dhi - dlo));
        if (!fits && (count_c > 1 || count_h > 1)) {
            if (count_c > 1) {
                self(self, c, count_c / 2, h, count_h);
                self(self, c + count_c / 2, count_c - count_c / 2, h, count_h);
            } else {
                self(self, c, count_c, h, count_h / 2);
                self(self, c, count_c, h + count_h / 2, count_h - count_h / 2);
            }
            return;
        }
        const Window sw = window(*src.operand, src_first, src_hi - src_lo, align);
        const Window dw = window(*dst.operand, dst_first, dhi - dlo, align);
        // The residual over the same elements (dst's window itself, unread, without one).
        const Window zw = residual_window(epilogue, dst_first, dhi - dlo, align, dw);
        BoxPush push{uint32_t(count_c),
                     uint32_t(count_h),
                     uint32_t(src.W),
                     uint32_t(src.C),
                     uint32_t(src.H),
                     uint32_t(src.W),
                     int32_t(src_c0 + c),
                     int32_t(src_h0 + h),
                     uint32_t(sw.delta - src_lo),
                     uint32_t(dst.C),
                     uint32_t(dst.H),
                     uint32_t(dst.W),
                     int32_t(dst_c0 + c),
                     int32_t(dst_h0 + h),
                     uint32_t(dw.delta - dlo),
                     accumulate ? 1u : 0u,
                     uint32_t(zw.delta - dlo),
                     epilogue.beta,
                     epilogue.negative_slope,
                     0,
                     0};
        const std::array<Binding, 3> bindings{Binding{sw.range, false}, Binding{dw.range, true},
                                              Binding{zw.range, false}};
        dispatch_elements(stream, pipeline, bindings, push, uint64_t(count_c * count_h * src.W));
    };
    for (int64_t c = 0; c < box_c; c += channel_run)
        for (int64_t h = 0; h < box_h; h += row_run)
            copy(copy, c, std::min(channel_run, box_c - c), h, std::min(row_run, box_h - h));
}

}  // namespace

// dst[dst_first, + count) (+)= src[src_first, + count): a run of floats, as a box of one row.
void record_run(ContextImpl& context, CommandStream& stream, const Operand& src, uint64_t src_first, const Operand& dst,
                uint64_t dst_first, uint64_t count, bool accumulate, DataType type) {
    record_run(context, stream, src, src_first, dst, dst_first, count, accumulate, type, type);
}

void record_run(ContextImpl& context, CommandStream& stream, const Operand& src, uint64_t src_first, const Operand& dst,
                uint64_t dst_first, uint64_t count, bool accumulate, DataType src_type, DataType dst_type) {
    const uint64_t align = context.pool->alignment();
    // A run crossing a page boundary of either operand goes in parts, each inside one page of both.
    auto page_end = [](const Operand& op, uint64_t first) {
        const OperandPage* page = page_holding(op, first, 1);
        return page ? page->end : UINT64_MAX;
    };
    // ... and within one binding (elements of at most 4 bytes).
    const uint64_t range = context.device->limits().maxStorageBufferRange;
    const uint64_t most = std::max<uint64_t>(1, (range > 2 * align ? range - 2 * align : range) / 4);
    for (uint64_t done = 0; done < count;) {
        const uint64_t part = std::min({count - done, most, page_end(src, src_first + done) - (src_first + done),
                                        page_end(dst, dst_first + done) - (dst_first + done)});
        const Window sw = window(src, src_first + done, part, align), dw = window(dst, dst_first + done, part, align);
        const uint32_t n = uint32_t(part);
        const BoxPush push{
            1, 1, n, 1, 1, n, 0, 0, uint32_t(sw.delta), 1, 1, n, 0, 0, uint32_t(dw.delta), accumulate ? 1u : 0u};
        // (No residual: the source stands in for binding 2.)
        const std::array<Binding, 3> bindings{Binding{sw.range, false}, Binding{dw.range, true},
                                              Binding{sw.range, false}};
        dispatch_elements(stream, copy_box_pipeline(context, Layout::NCHW, {}, src_type, dst_type), bindings, push,
                          part);
        done += part;
    }
}

namespace {

// The tile's problem run on the tile buffers, by the plan made for its shape; a forward tile applies
// `epilogue` (alpha alone: the copy into y applies the rest).
void record_tile_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& q, const TiledPlan& plan,
                      bool with_bias, std::span<const Operand> workspace, const FusedEpilogue& epilogue = {}) {
    auto buffer = [&](TileSlot slot, int64_t floats) {
        return Operand{workspace[static_cast<size_t>(slot)].allocation, uint64_t(floats)};
    };
    ConvOperands tile;
    tile.input = buffer(TileSlot::Input, q.input_elements());
    tile.filter = buffer(TileSlot::Filter, q.filter_elements());
    if (with_bias) tile.bias = buffer(TileSlot::Bias, q.K);
    tile.output = buffer(TileSlot::Output, q.output_elements());
    tile.epilogue = epilogue;
    record_algorithm(context, stream, q, plan.plan_of(q), tile, Workspace{workspace.subspan(kTileSlots)});
}

const Operand& slot_of(std::span<const Operand> workspace, TileSlot slot) {
    return workspace[static_cast<size_t>(slot)];
}

void record_tiled_forward(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const TiledPlan& plan,
                          const ConvOperands& ops, std::span<const Operand> workspace) {
    const uint64_t limit = storage_binding_limit(context, plan.tile_options);
    const int64_t per_filter = filter_taps(p);
    const Operand &x_tile = slot_of(workspace, TileSlot::Input), &w_tile = slot_of(workspace, TileSlot::Filter);
    const Operand &b_tile = slot_of(workspace, TileSlot::Bias), &y_tile = slot_of(workspace, TileSlot::Output);
    const DataType type = p.data_type, f32 = DataType::F32;
    int64_t loaded_k0 = -1;
    for_each_tile(p, Pass::Forward, plan.pieces, plan.band, [&](const Tile& t) {
        const ConvProblem q = tile_problem(p, t);
        if (loaded_k0 != t.piece.k0) {  // a piece's filters (and bias) once, for all its tiles
            record_run(context, stream, ops.filter, uint64_t(t.piece.k0 * per_filter), w_tile, 0,
                       uint64_t(q.filter_elements()), false, type, f32);
            if (ops.bias)
                record_run(context, stream, ops.bias, uint64_t(t.piece.k0), b_tile, 0, uint64_t(q.K), false, type, f32);
            loaded_k0 = t.piece.k0;
        }
        const ImageRef x{&ops.input, t.n, p.C, p.H, p.W}, x_box{&x_tile, 0, q.C, q.H, q.W};
        record_box(context, stream, p.layout, x, t.piece.c0, t.hs, x_box, 0, 0, q.C, q.H, false, limit, {}, {type, f32});
        // The tile's pass applies alpha and the bias, the copy into y the residual and the activation: each
        // value of y is written once, by that copy (rounded there, for a 16-bit y).
        record_tile_pass(context, stream, q, plan, static_cast<bool>(ops.bias), workspace, ops.epilogue.scale_part());
        const ImageRef y_box{&y_tile, 0, q.K, t.rows, p.Q()}, y{&ops.output, t.n, p.K, p.P(), p.Q()};
        record_box(context, stream, p.layout, y_box, 0, 0, y, t.piece.k0, t.p0, q.K, t.rows, false, limit,
                   ops.epilogue.write_part(), {f32, type});
    });
}

void record_tiled_backward_data(ContextImpl& context, CommandStream& stream, const ConvProblem& p,
                                const TiledPlan& plan, const ConvOperands& ops, std::span<const Operand> workspace) {
    const uint64_t limit = storage_binding_limit(context, plan.tile_options);
    const int64_t per_filter = filter_taps(p);
    const Operand &dx_tile = slot_of(workspace, TileSlot::Input), &w_tile = slot_of(workspace, TileSlot::Filter);
    const Operand& dy_tile = slot_of(workspace, TileSlot::Output);
    const DataType type = p.data_type, f32 = DataType::F32;
    const bool sums = dx_sums_over_pieces(p, Pass::BackwardData, plan.pieces);
    int64_t loaded_k0 = -1;
    for_each_tile(p, Pass::BackwardData, plan.pieces, plan.band, [&](const Tile& t) {
        const int64_t channels = t.piece.c1 - t.piece.c0;
        const ImageRef dx_image{&ops.input, t.n, p.C, p.H, p.W};
        // Later pieces of a group's filters add to dx; so does the first where dx holds a bias already
        // (ConvOperands::add_into_dx), each value then rounded once.
        const bool accumulate = !t.piece.first_of_channels || ops.add_into_dx;
        if (t.rows == 0) {  // no dy row reaches these dx rows: zeros (nothing to add for later pieces)
            if (!accumulate) {
                const ImageRef nothing{&dx_tile, 0, channels, 0, p.W};
                record_box(context, stream, p.layout, nothing, 0, 0, dx_image, t.piece.c0, t.h0, channels, t.h1 - t.h0,
                           false, limit, {}, {f32, type});
            }
            return;
        }
        const ConvProblem q = tile_problem(p, t);
        if (loaded_k0 != t.piece.k0) {
            record_run(context, stream, ops.filter, uint64_t(t.piece.k0 * per_filter), w_tile, 0,
                       uint64_t(q.filter_elements()), false, type, f32);
            loaded_k0 = t.piece.k0;
        }
        const ImageRef dy_image{&ops.output, t.n, p.K, p.P(), p.Q()}, dy_box{&dy_tile, 0, q.K, t.rows, p.Q()};
        record_box(context, stream, p.layout, dy_image, t.piece.k0, t.p0, dy_box, 0, 0, q.K, t.rows, false, limit, {},
                   {type, f32});
        record_tile_pass(context, stream, q, plan, false, workspace);
        // dx rows [h0, h1) are tile rows [h0 - hs, h1 - hs); tile rows past its extent read as zero.
        const ImageRef dx_box{&dx_tile, 0, q.C, q.H, q.W};
        if (!sums) {
            record_box(context, stream, p.layout, dx_box, 0, t.h0 - t.hs, dx_image, t.piece.c0, t.h0, channels,
                       t.h1 - t.h0, accumulate, limit, {}, {f32, type});
            return;
        }
        // The band's fp32 sum over the group's pieces, rounded into dx (or onto its bias) after the last.
        const ImageRef sum{&slot_of(workspace, TileSlot::Sums), 0, channels, t.h1 - t.h0, p.W};
        record_box(context, stream, p.layout, dx_box, 0, t.h0 - t.hs, sum, 0, 0, channels, t.h1 - t.h0,
                   !t.piece.first_of_channels, limit);
        if (t.piece.k1 % p.filters_per_group() == 0)
            record_box(context, stream, p.layout, sum, 0, 0, dx_image, t.piece.c0, t.h0, channels, t.h1 - t.h0,
                       ops.add_into_dx, limit, {}, {f32, type});
    });
}

void record_tiled_backward_filter(ContextImpl& context, CommandStream& stream, const ConvProblem& p,
                                  const TiledPlan& plan, const ConvOperands& ops, std::span<const Operand> workspace) {
    const uint64_t limit = storage_binding_limit(context, plan.tile_options);
    const int64_t per_filter = filter_taps(p);
    const Operand &x_tile = slot_of(workspace, TileSlot::Input), &dw_tile = slot_of(workspace, TileSlot::Filter);
    const Operand &db_tile = slot_of(workspace, TileSlot::Bias), &dy_tile = slot_of(workspace, TileSlot::Output);
    const DataType type = p.data_type, gradient = p.weight_gradient_type(), f32 = DataType::F32;
    // A 16-bit dw and db add up over the piece's tiles in fp32 sums, rounded into place after its last tile.
    const Operand& sums = slot_of(workspace, TileSlot::Sums);
    for_each_tile(p, Pass::BackwardFilter, plan.pieces, plan.band, [&](const Tile& t) {
        const ConvProblem q = tile_problem(p, t);
        const ImageRef x_image{&ops.input, t.n, p.C, p.H, p.W}, x_box{&x_tile, 0, q.C, q.H, q.W};
        record_box(context, stream, p.layout, x_image, t.piece.c0, t.hs, x_box, 0, 0, q.C, q.H, false, limit, {},
                   {type, f32});
        const ImageRef dy_image{&ops.output, t.n, p.K, p.P(), p.Q()}, dy_box{&dy_tile, 0, q.K, t.rows, p.Q()};
        record_box(context, stream, p.layout, dy_image, t.piece.k0, t.p0, dy_box, 0, 0, q.K, t.rows, false, limit, {},
                   {type, f32});
        record_tile_pass(context, stream, q, plan, static_cast<bool>(ops.bias), workspace);
        const uint64_t dw_count = uint64_t(q.filter_elements()), dw_at = uint64_t(t.piece.k0 * per_filter);
        if (gradient == f32) {
            record_run(context, stream, dw_tile, 0, ops.filter, dw_at, dw_count, !t.first);
            if (ops.bias) record_run(context, stream, db_tile, 0, ops.bias, uint64_t(t.piece.k0), uint64_t(q.K), !t.first);
            return;
        }
        const uint64_t db_at = dw_count;  // (the sums: dw's, then db's)
        record_run(context, stream, dw_tile, 0, sums, 0, dw_count, !t.first);
        if (ops.bias) record_run(context, stream, db_tile, 0, sums, db_at, uint64_t(q.K), !t.first);
        if (!t.last) return;
        record_run(context, stream, sums, 0, ops.filter, dw_at, dw_count, false, f32, gradient);
        if (ops.bias) record_run(context, stream, sums, db_at, ops.bias, uint64_t(t.piece.k0), uint64_t(q.K), false, f32, gradient);
    });
}

}  // namespace

void record_tiled(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const TiledPlan& plan,
                  const ConvOperands& operands, std::span<const Operand> workspace) {
    switch (plan.pass) {
        case Pass::Forward:
            record_tiled_forward(context, stream, p, plan, operands, workspace);
            break;
        case Pass::BackwardData:
            record_tiled_backward_data(context, stream, p, plan, operands, workspace);
            break;
        case Pass::BackwardFilter:
            record_tiled_backward_filter(context, stream, p, plan, operands, workspace);
            break;
        case Pass::BackwardBias:
            throw Error(ErrorCategory::InvalidArgument, "backward-bias tiles are a TiledBiasPlan");
    }
}

namespace {

// A run of `channels` output channels and `rows` output rows of one image, as a problem of its own whose
// output is that box: what the bias-gradient kernel sums.
ConvProblem bias_tile(const ConvProblem& p, int64_t channels, int64_t rows) {
    ConvProblem q;
    q.N = 1, q.C = 1, q.H = rows, q.W = p.Q(), q.K = channels, q.R = 1, q.S = 1;
    q.layout = p.layout, q.has_bias = true;
    return q;
}

}  // namespace

bool bias_needs_tiling(ContextImpl& context, const ConvProblem& p) {
    const uint64_t limit = context.device->limits().maxStorageBufferRange, align = context.pool->alignment();
    return uint64_t(p.K * p.P() * p.Q()) * element_bytes(p.data_type) + align > limit;
}

Planned<TiledBiasPlan> plan_tiled_bias(ContextImpl& context, const ConvProblem& p) {
    const uint64_t limit = context.device->limits().maxStorageBufferRange, align = context.pool->alignment();
    const uint64_t fits = limit > align ? limit - align : 0;
    const int64_t P = p.P(), Q = p.Q();
    for (int64_t channels = p.K; channels >= 1; channels = channels > 1 ? (channels + 1) / 2 : 0) {
        for (int64_t band = P; band >= 1; --band) {
            if (uint64_t(channels * band * Q) * 4 > fits || band_span_bytes(p, p.K, band, Q) > fits) continue;
            TiledBiasPlan plan;
            plan.channels = channels, plan.band = band;
            // The partial sums of the largest of the four tile shapes (full or last run of channels, full
            // or last band): a narrower run can take more pieces.
            uint64_t partials = 0;
            for (int64_t c : {channels, p.K - (p.K - 1) / channels * channels})
                for (int64_t b : {band, P - (P - 1) / band * band}) {
                    // A tile's dy fits one binding (checked above): its plan is never refused.
                    const BiasPlan tile = plan_bias_grad(context, bias_tile(p, c, b), 0).value();
                    partials = std::max(partials, tile.partial_floats);
                    plan.bias_pieces = std::max(plan.bias_pieces, static_cast<uint32_t>(tile.pieces));
                }
            // (A 16-bit db: the run's fp32 sum, rounded into db after its last tile.)
            const bool sums = p.weight_gradient_type() != DataType::F32;
            plan.slots = {uint64_t(channels * band * Q), uint64_t(channels), partials, sums ? uint64_t(channels) : 0};
            plan.workspace_bytes = workspace_bytes_of(context, plan.slots);
            plan.tiles = uint32_t((p.K + channels - 1) / channels * p.N * ((P + band - 1) / band));
            return plan;
        }
        if (channels == 1) break;
    }
    return unsupported(std::string("backward_bias: one row of grad_output (") +
                       (p.layout == Layout::NHWC ? "all channels" : "one channel") + ") exceeds the binding limit of " +
                       std::to_string(limit) + " bytes (" + p.str() + ")");
}

void record_tiled_bias(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const TiledBiasPlan& plan,
                       const Operand& dy, const Operand& db, std::span<const Operand> workspace) {
    const uint64_t limit = context.device->limits().maxStorageBufferRange;
    const int64_t P = p.P(), Q = p.Q();
    // Tiles are fp32 (dy widened as it is copied in); a 16-bit db's run adds up in an fp32 sum, rounded once.
    const DataType type = p.data_type, gradient = p.weight_gradient_type(), f32 = DataType::F32;
    for (int64_t k0 = 0; k0 < p.K; k0 += plan.channels) {
        const int64_t channels = std::min(plan.channels, p.K - k0);
        const Operand sum = gradient == f32 ? db : Operand{workspace[3].allocation, uint64_t(channels)};
        const uint64_t sum_at = gradient == f32 ? uint64_t(k0) : 0;
        bool first = true;
        for (int64_t n = 0; n < p.N; ++n)
            for (int64_t p0 = 0; p0 < P; p0 += plan.band) {
                const int64_t rows = std::min(plan.band, P - p0);
                const ConvProblem q = bias_tile(p, channels, rows);
                const ImageRef dy_image{&dy, n, p.K, P, Q}, dy_tile{&workspace[0], 0, channels, rows, Q};
                record_box(context, stream, p.layout, dy_image, k0, p0, dy_tile, 0, 0, channels, rows, false, limit, {},
                           {type, f32});
                const Operand dy_op{workspace[0].allocation, uint64_t(channels * rows * Q)};
                const Operand db_tile{workspace[1].allocation, uint64_t(channels)};
                record_bias_grad(context, stream, q, plan_bias_grad(context, q, 0).value(), dy_op, db_tile,
                                 workspace[2]);
                record_run(context, stream, db_tile, 0, sum, sum_at, uint64_t(channels), !first);
                first = false;
            }
        if (gradient != f32) record_run(context, stream, sum, 0, db, uint64_t(k0), uint64_t(channels), false, f32, gradient);
    }
}

}  // namespace vkconv::detail
