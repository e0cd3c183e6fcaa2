// Winograd's applicability, tile, error constants, and chunk plan with its exact workspace.
#include <algorithm>
#include <cmath>
#include <string>

#include "conv/lowered/lowered.hpp"
#include "conv/winograd/winograd.hpp"

namespace vkconv::detail {
namespace {

WinogradMatrices f4_matrices() {
    WinogradMatrices w;
    w.m = 4, w.alpha = 6;
    w.bt = {4, 0, -5, 0, 1, 0, 0, -4, -4, 1, 1, 0, 0, 4, -4, -1, 1, 0,
            0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0, 0, 4, 0, -5, 0, 1};
    w.g = {1.0 / 4, 0, 0, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6,
           1.0 / 24, 1.0 / 12, 1.0 / 6, 1.0 / 24, -1.0 / 12, 1.0 / 6, 0, 0, 1};
    w.at = {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1};
    return w;
}

WinogradMatrices f2_matrices() {
    WinogradMatrices w;
    w.m = 2, w.alpha = 4;
    const std::array<double, 16> bt{1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1};
    const std::array<double, 12> g{1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
    const std::array<double, 8> at{1, 1, 1, 0, 0, 1, -1, -1};
    std::copy(bt.begin(), bt.end(), w.bt.begin());
    std::copy(g.begin(), g.end(), w.g.begin());
    std::copy(at.begin(), at.end(), w.at.begin());
    return w;
}

int64_t round_up4(int64_t v) {
    return (v + 3) / 4 * 4;
}

}  // namespace

const WinogradMatrices& winograd_matrices(int m) {
    static const WinogradMatrices f4 = f4_matrices(), f2 = f2_matrices();
    return m == 2 ? f2 : f4;
}

double winograd_alpha(int m) {
    const WinogradMatrices& t = winograd_matrices(m);
    double alpha = 0;
    for (int i = 0; i < t.m; ++i) {
        double row = 0;
        for (int a = 0; a < t.alpha; ++a) {
            double g1 = 0, b1 = 0;
            for (int r = 0; r < 3; ++r) g1 += std::fabs(t.g[a * 3 + r]);
            for (int s = 0; s < t.alpha; ++s) b1 += std::fabs(t.bt[a * t.alpha + s]);
            row += std::fabs(t.at[i * t.alpha + a]) * g1 * b1;
        }
        alpha = std::max(alpha, row);
    }
    return alpha;
}

double winograd_relative_bound(int m, int64_t channels) {
    const double u = std::ldexp(1.0, -24);
    const double k = double(round_up4(channels) + kTransformRoundings);
    const double alpha = winograd_alpha(m);
    return k * u / (1.0 - k * u) * alpha * alpha / 9.0;
}

int winograd_tile(int64_t channels, int64_t f4_tiles) {
    return winograd_relative_bound(4, channels) <= kMaxRelativeBound && f4_tiles >= kMinF4Tiles ? 4 : 2;
}

std::optional<std::string> winograd_refusal(const ConvProblem& p, Pass pass) {
    const std::string where = " (" + p.str() + ")";
    if (pass == Pass::BackwardFilter)
        return "winograd: backward-filter is not supported: its product reduces over the N·P·Q output positions "
               "against dy as the filter, which no F(m×m, 3×3) transform of this pass shortens" + where;
    if (pass == Pass::BackwardBias) return "winograd: backward-bias has one algorithm, the bias-gradient kernel" + where;
    if (p.R != 3 || p.S != 3) return "winograd: only 3×3 filters (F(m×m, 3×3))" + where;
    if (p.stride_h != 1 || p.stride_w != 1) return "winograd: only stride 1" + where;
    if (p.dilation_h != 1 || p.dilation_w != 1) return "winograd: only dilation 1" + where;
    return std::nullopt;
}

bool winograd_preferred(const ContextImpl& context, const ConvProblem& p, Pass pass) {
    if (winograd_refusal(p, pass)) return false;
    if (context.device->properties().deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU) return false;  // measured there only
    const WinogradShape s = winograd_shape(p, pass);
    return s.in_g >= kMinRuleChannels && s.out_g >= kMinRuleChannels && p.N * s.tiles_h * s.tiles_w >= kMinRuleTiles;
}

WinogradShape winograd_shape(const ConvProblem& p, Pass pass, int tile) {
    WinogradShape s;
    s.type = p.data_type;
    s.nhwc = p.layout == Layout::NHWC;
    s.groups = p.groups;
    s.transposed = pass == Pass::BackwardData;
    if (!s.transposed) {
        s.in_c = p.C, s.in_h = p.H, s.in_w = p.W, s.in_g = p.channels_per_group();
        s.out_c = p.K, s.out_h = p.P(), s.out_w = p.Q(), s.out_g = p.filters_per_group();
        s.origin_h = -p.pad_top(), s.origin_w = -p.pad_left();
    } else {
        // dx(h) = Σ_r dy(h + pad - r)·w(r) = Σ_r' dy(h + r' - (2 - pad))·w(2 - r'): dy read from pad - 2 on.
        s.in_c = p.K, s.in_h = p.P(), s.in_w = p.Q(), s.in_g = p.filters_per_group();
        s.out_c = p.C, s.out_h = p.H, s.out_w = p.W, s.out_g = p.channels_per_group();
        s.origin_h = p.pad_top() - 2, s.origin_w = p.pad_left() - 2;
    }
    s.in_g4 = round_up4(s.in_g);
    s.out_g4 = round_up4(s.out_g);
    const int64_t f4_tiles = p.N * ((s.out_h + 3) / 4) * ((s.out_w + 3) / 4);
    s.m = tile == 2 || tile == 4 ? tile : winograd_tile(s.in_g, f4_tiles);
    s.alpha = s.m + 2;
    s.tiles_h = (s.out_h + s.m - 1) / s.m;
    s.tiles_w = (s.out_w + s.m - 1) / s.m;
    return s;
}

namespace {

// Whether a chunk of `images` images and `rows` tile rows fits the bindings and the workspace limit.
struct WinogradFit {
    ContextImpl& context;
    const WinogradShape& s;
    const PassOptions& options;
    uint64_t limit, align;

    uint64_t m_offset(int64_t tiles) const { return (s.v_floats(tiles) * 4 + align - 1) / align * align / 4; }
    uint64_t lowered(int64_t images, int64_t rows) const {
        const int64_t tiles = images * rows * s.tiles_w;
        return m_offset(tiles) + s.m_floats(tiles);
    }
    uint64_t workspace(int64_t images, int64_t rows) const {
        return context.pool->round(lowered(images, rows) * 4) + context.pool->round(s.u_floats() * 4);
    }
    bool binding_fits(int64_t images, int64_t rows) const {
        const int64_t tiles = images * rows * s.tiles_w;
        const uint64_t bytes = element_bytes(s.type);  // of x, y (dy, dx)
        return images * s.in_image() * bytes + align <= limit && images * s.out_image() * bytes + align <= limit &&
               s.v_floats(tiles) * 4 <= limit && s.m_floats(tiles) * 4 <= limit;
    }
    bool fits(int64_t images, int64_t rows) const {
        return binding_fits(images, rows) && (!options.workspace_limit || workspace(images, rows) <= options.workspace_limit);
    }
};

// A 16-bit pass's V and M (fp32, as its fp32 twin's) take at most half the twin's bytes, so that the pool's
// peak halves with the tensors (16-bit chunks, as large as the bindings allow, would otherwise hold twice
// the images): fewer images a chunk, then fewer tile rows, down to one tile row. (U is the twin's size.)
void within_half_of_fp32(ContextImpl& context, const ConvProblem& p, Pass pass, const PassOptions& options,
                         const WinogradFit& fit, WinogradPlan& plan) {
    ConvProblem twin = p;
    twin.data_type = DataType::F32;
    PassOptions twin_options = options;
    twin_options.variant = winograd_variant(plan.m);
    auto fp32 = plan_winograd(context, twin, pass, twin_options);
    if (!fp32) return;
    const uint64_t budget = fp32->lowered_floats / 2;
    while (plan.images > 1 && fit.lowered(plan.images, plan.tile_rows) > budget) --plan.images;
    if (plan.images == 1)
        while (plan.tile_rows > 1 && fit.lowered(1, plan.tile_rows) > budget) --plan.tile_rows;
    const int64_t bands = (fit.s.tiles_h + plan.tile_rows - 1) / plan.tile_rows;  // of tile rows, an image
    plan.chunks = static_cast<uint32_t>((p.N + plan.images - 1) / plan.images * bands);
}

}  // namespace

namespace {

// The input channels a GEMM sums at a time (WinogradPlan::in_chunk): all of them, or in a 16-bit pass of one
// group the largest multiple of 4 within half of them rounded up to 4, so U takes at most half its fp32 twin's
// bytes. (With groups the input transform's channel offset would be the group's: not split.)
int64_t input_chunk_channels(const ConvProblem& p, const WinogradShape& s) {
    if (p.data_type == DataType::F32 || s.groups != 1 || s.in_g4 < 8) return s.in_g;
    return s.in_g4 / 8 * 4;
}

// The texel views of WinogradPlan: CPU devices only, where texel fetches beat storage-buffer loads (lavapipe:
// 4x on cv12's filter transform, 1.5-2x on cv8's output transform); on GPUs unmeasured, they keep storage
// buffers.
bool cpu_device(const ContextImpl& context) {
    return context.device->properties().deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
}

// WinogradPlan::filter_texels: w viewed as quads (rgba32f, or R16G16B16A16_UINT of the 16-bit bits).
bool filter_texels(const ContextImpl& context, const ConvProblem& p, Pass pass, const PassOptions& options) {
    const bool f32 = p.data_type == DataType::F32;
    const DeviceModel& model = context.device->model();
    const uint32_t texel_bytes = f32 ? 16 : 8;
    return cpu_device(context) && pass == Pass::Forward && p.channels_per_group() % 4 == 0 &&
           (f32 ? model.uniform_texel_buffers : model.uniform_texel_16bit) &&
           uint64_t(p.filter_elements()) * element_bytes(p.data_type) <=
               texel_binding_limit(context, options, texel_bytes);
}

// WinogradPlan::product_texels, for a largest chunk's M of `m_floats`.
bool product_texels(const ContextImpl& context, const PassOptions& options, uint64_t m_floats) {
    return cpu_device(context) && context.device->model().uniform_texel_buffers &&
           m_floats * 4 <= texel_binding_limit(context, options, 16);
}

}  // namespace

const char* winograd_variant(int m) {
    return m == 2 ? "F(2x2,3x3)" : "F(4x4,3x3)";
}

Planned<WinogradPlan> plan_winograd(ContextImpl& context, const ConvProblem& p, Pass pass, const PassOptions& options) {
    if (auto refusal = winograd_refusal(p, pass)) return unsupported(*refusal);
    const int asked = options.variant == winograd_variant(4) ? 4 : options.variant == winograd_variant(2) ? 2 : 0;
    const WinogradShape whole = winograd_shape(p, pass, asked);
    const int64_t in_chunk = input_chunk_channels(p, whole);
    const WinogradShape s = whole.input_chunk(in_chunk);  // U and V of one input-channel chunk
    const WinogradFit fit{context, s, options, storage_binding_limit(context, options), context.pool->alignment()};
    const std::string where = " (" + p.str() + ")";
    if (asked == 4 && winograd_relative_bound(4, whole.in_g) > kMaxRelativeBound)
        return unsupported("winograd: F(4x4,3x3) over " + std::to_string(whole.in_g) +
                           " channels per group has an error bound of " +
                           std::to_string(winograd_relative_bound(4, whole.in_g) * 100) + "% of n·max|w|·max|x|, past " +
                           std::to_string(kMaxRelativeBound * 100) + "%: F(2x2,3x3) runs it" + where);
    if (s.u_floats() * 4 > fit.limit || uint64_t(p.filter_elements()) * element_bytes(p.data_type) > fit.limit)
        return unsupported("winograd: the filter or its transform (" + std::to_string(s.u_floats() * 4) +
                           " bytes) exceeds the binding limit of " + std::to_string(fit.limit) + " bytes" + where);
    WinogradPlan plan;
    plan.m = s.m;
    plan.in_chunk = in_chunk;
    plan.filter_texels = filter_texels(context, p, pass, options);
    if (fit.fits(1, s.tiles_h)) {
        while (plan.images < p.N && fit.fits(plan.images + 1, s.tiles_h)) ++plan.images;
        plan.tile_rows = s.tiles_h;
        plan.chunks = static_cast<uint32_t>((p.N + plan.images - 1) / plan.images);
    } else {
        if (!fit.binding_fits(1, 1))
            return unsupported("winograd: one tile row of one image needs bindings beyond the limit of " +
                               std::to_string(fit.limit) + " bytes" + where);
        if (!fit.fits(1, 1))
            return unsupported("winograd: its smallest chunk (one tile row of one image) needs " +
                               std::to_string(fit.workspace(1, 1)) + " bytes of workspace, above the workspace limit of " +
                               std::to_string(options.workspace_limit) + " bytes" + where);
        while (plan.tile_rows < s.tiles_h && fit.fits(1, plan.tile_rows + 1)) ++plan.tile_rows;
        plan.chunks = static_cast<uint32_t>(p.N * ((s.tiles_h + plan.tile_rows - 1) / plan.tile_rows));
    }
    if (p.data_type != DataType::F32) within_half_of_fp32(context, p, pass, options, fit, plan);
    plan.m_offset = fit.m_offset(plan.images * plan.tile_rows * s.tiles_w);
    plan.lowered_floats = fit.lowered(plan.images, plan.tile_rows);
    plan.product_texels = product_texels(context, options, plan.lowered_floats - plan.m_offset);
    plan.filter_floats = s.u_floats();
    return plan;
}

}  // namespace vkconv::detail
