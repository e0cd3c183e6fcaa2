// Workspace sizes checked against formulas written here from the problem's sizes (see docs/testing.md).
//
// Every expected figure below is stated from the problem's sizes and the device's binding limits alone: the
// lowered matrix of a chunk, MEC's filter copy, split partial products, the bias gradient's partial sums,
// the tile buffers. Each allocation is rounded by the pool's alignment (PoolStats::rounded, the pool's own
// rounding), and the sum is compared with the workspace query, with RunStats::workspace_bytes of a run and
// with the run's pool peak (what was live before plus the workspace); every run's result is checked against
// the CPU reference. The engine's planner is never asked, so a planner bug that moves the query and the run
// alike fails here.
//
// How many pieces a split reduction takes depends on the device's size (im2col's split-K, MEC's partial
// slots, depthwise's pieces, the bias gradient's pieces). The tests do not model that choice: they read the
// count from RunStats (partial_products, bias_pieces), put it in the formula and bound it, and pin the
// no-split case with a workspace limit that leaves no room for partial products.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "conv_cases.hpp"
#include "test_util.hpp"

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Layout;
using vkconv::PassOptions;
using vkconv::RunStats;

namespace {

constexpr uint64_t kFloat = 4;  // bytes
constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

// ---------------------------------------------------------------------------------------------------------
// Sizes and formulas, from the problem alone.

struct Sizes {
    int64_t N = 0, C = 0, H = 0, W = 0, K = 0, R = 0, S = 0, P = 0, Q = 0, Cg = 0, Kg = 0, sh = 1, dh = 1, ph = 0;
    explicit Sizes(const ConvProblem& p) {
        N = p.N, C = p.C, H = p.H, W = p.W, K = p.K, R = p.R, S = p.S, P = p.P(), Q = p.Q();
        Cg = p.C / p.groups, Kg = p.K / p.groups, sh = p.stride_h, dh = p.dilation_h, ph = p.pad_h;
    }

    uint64_t x_image() const { return uint64_t(C * H * W); }
    uint64_t y_image() const { return uint64_t(K * P * Q); }
    uint64_t filter() const { return uint64_t(K * Cg * R * S); }
    // One group's dw, K/G x R*S*C/G: the unit of im2col's and MEC's partial products.
    uint64_t group_product() const { return uint64_t(Kg * R * S * Cg); }
    // Padded input rows the windows of `rows` consecutive output rows read (MEC lowers just these).
    int64_t rows_read(int64_t rows) const { return (rows - 1) * sh + (R - 1) * dh + 1; }
    // im2col's col of a chunk: one row of R*S*C taps (all groups) per output position.
    uint64_t im2col(int64_t images, int64_t rows) const { return uint64_t(images * rows * Q) * uint64_t(R * S * C); }
    // MEC's L of a chunk: per image and output column, the rows read, each S*C wide.
    uint64_t mec(int64_t images, int64_t rows) const {
        return uint64_t(images * Q * rows_read(rows)) * uint64_t(S * C);
    }
    // Solution A also parks the chunk's output (images x rows x Q x K) in the same buffer.
    uint64_t mec_a(int64_t images, int64_t rows) const {
        return std::max(mec(images, rows), uint64_t(images * rows * Q * K));
    }
};

enum class Lowering { Im2col, MecA, MecB };

uint64_t scratch_floats(const Sizes& z, Lowering l, int64_t images, int64_t rows) {
    switch (l) {
        case Lowering::Im2col:
            return z.im2col(images, rows);
        case Lowering::MecA:
            return z.mec_a(images, rows);
        case Lowering::MecB:
            return z.mec(images, rows);
    }
    return 0;
}

// One workspace allocation of `floats` as the pool counts it (nothing for an empty slot).
uint64_t slot(const vkconv::PoolStats& pool, uint64_t floats) {
    return floats ? pool.rounded(floats * kFloat) : 0;
}

// Binding limits of the device (as reported, or as the context lowers them) and the options.
uint64_t storage_limit(const vkconv::Context& context, const PassOptions& options) {
    const uint64_t range = context.device().max_storage_buffer_range;
    return options.max_binding_bytes ? std::min(range, options.max_binding_bytes) : range;
}

// The largest chunk of a lowering: as many whole images as every binding allows (the chunk's x and y are
// bound as windows whose start is aligned down, so each may take up to `align` bytes more; the scratch is
// an allocation of its own) and the workspace room allows; when not even one image fits, one image in the
// tallest band of output rows that fits.
struct Chunking {
    int64_t images = 0, rows = 0;
    uint32_t chunks = 0;
};

// `room`: bytes the scratch may take under a workspace limit (kNone: no limit).
Chunking lowered_chunk(const Sizes& z, Lowering l, uint64_t limit, uint64_t align, uint64_t room) {
    const uint64_t cap = std::min(limit, room);  // the scratch's bytes
    Chunking c;
    const uint64_t per_image = scratch_floats(z, l, 1, z.P) * kFloat;  // linear in images, all three
    const uint64_t by_x = limit > align ? (limit - align) / (z.x_image() * kFloat) : 0;
    const uint64_t by_y = limit > align ? (limit - align) / (z.y_image() * kFloat) : 0;
    const uint64_t images = std::min({uint64_t(z.N), by_x, by_y, cap / per_image});
    if (images >= 1) {
        c.images = int64_t(images), c.rows = z.P;
        c.chunks = uint32_t((z.N + c.images - 1) / c.images);
        return c;
    }
    REQUIRE(by_x >= 1);  // the tests' chunked problems keep one image of x and y bindable
    REQUIRE(by_y >= 1);
    int64_t rows = 0;
    if (l == Lowering::Im2col) {
        rows = int64_t(cap / (uint64_t(z.Q * z.R * z.S * z.C) * kFloat));
    } else {
        // Q * S*C * ((rows - 1)*sh + (R - 1)*dh + 1) floats fit `cap`.
        const int64_t lowered_rows = int64_t(cap / (uint64_t(z.Q * z.S * z.C) * kFloat));
        const int64_t first = (z.R - 1) * z.dh + 1;
        rows = lowered_rows >= first ? (lowered_rows - first) / z.sh + 1 : 0;
        if (l == Lowering::MecA) rows = std::min(rows, int64_t(cap / (uint64_t(z.Q * z.K) * kFloat)));
    }
    REQUIRE(rows >= 1);
    c.images = 1, c.rows = std::min(rows, z.P);
    c.chunks = uint32_t(z.N * ((z.P + c.rows - 1) / c.rows));
    return c;
}

// Room for the scratch under `workspace_limit` beside `fixed` bytes of other slots: round(scratch) fits
// when the scratch's bytes fit the room rounded down to the alignment.
uint64_t room_for(uint64_t workspace_limit, uint64_t fixed, uint64_t align) {
    if (!workspace_limit) return kNone;
    return workspace_limit > fixed ? (workspace_limit - fixed) / align * align : 0;
}

// ---------------------------------------------------------------------------------------------------------
// Expected workspaces of the untiled passes.

struct Expected {
    uint64_t bytes = 0;
    uint32_t chunks = 1;
};

Lowering forward_lowering(Algorithm a, const std::string& s) {
    if (a == Algorithm::Im2col) return Lowering::Im2col;
    return s == "A" ? Lowering::MecA : Lowering::MecB;
}

// MEC with OIHW filters reads them through an OHWI copy (forward), builds dw in OHWI (backward-filter).
uint64_t mec_filter_copy(const vkconv::Context& context, const ConvProblem& p) {
    return p.layout == Layout::NCHW ? slot(context.pool_stats(), Sizes(p).filter()) : 0;
}

// Forward: the chunk's lowered matrix (im2col: col; MEC: L, Solution A's sized to park the output too),
// plus MEC's OIHW filter copy. direct, depthwise and implicit-gemm: nothing.
Expected forward_expected(const vkconv::Context& context, const ConvProblem& p, Algorithm a,
                          const PassOptions& options) {
    const auto pool = context.pool_stats();
    const Sizes z(p);
    if (a == Algorithm::Direct || a == Algorithm::Depthwise || a == Algorithm::ImplicitGemm) return {0, 1};
    const Lowering l = forward_lowering(a, options.variant);
    const uint64_t copy = a == Algorithm::Mec ? mec_filter_copy(context, p) : 0;
    const Chunking c = lowered_chunk(z, l, storage_limit(context, options), pool.alignment,
                                     room_for(options.workspace_limit, copy, pool.alignment));
    return {slot(pool, scratch_floats(z, l, c.images, c.rows)) + copy, c.chunks};
}

// Backward runs MEC's Solution B chunks. Backward-data reads w through a copy with its taps reordered (both
// layouts), a slot beside dL.
Expected backward_data_expected(const vkconv::Context& context, const ConvProblem& p, Algorithm a,
                                const PassOptions& options) {
    const auto pool = context.pool_stats();
    const Sizes z(p);
    if (a == Algorithm::Direct || a == Algorithm::Depthwise || a == Algorithm::ImplicitGemm) return {0, 1};
    const Lowering l = a == Algorithm::Im2col ? Lowering::Im2col : Lowering::MecB;
    const uint64_t copy = a == Algorithm::Mec ? slot(pool, z.filter()) : 0;
    const Chunking c = lowered_chunk(z, l, storage_limit(context, options), pool.alignment,
                                     room_for(options.workspace_limit, copy, pool.alignment));
    return {slot(pool, scratch_floats(z, l, c.images, c.rows)) + copy, c.chunks};
}

// The bias gradient's partial sums: `pieces` per channel, nothing when one piece sums straight into db.
uint64_t bias_partials(const vkconv::Context& context, const ConvProblem& p, uint32_t pieces) {
    return p.has_bias && pieces > 1 ? slot(context.pool_stats(), uint64_t(pieces) * uint64_t(p.K)) : 0;
}

// Backward-filter: the chunk's lowered x (and MEC's OHWI dw for OIHW filters), `partials` partial products
// of one group's dw (depthwise: of the whole filter, and at least one), the bias gradient's partial sums.
Expected backward_filter_expected(const vkconv::Context& context, const ConvProblem& p, Algorithm a,
                                  const PassOptions& options, uint32_t partials, uint32_t bias_pieces) {
    const auto pool = context.pool_stats();
    const Sizes z(p);
    const uint64_t bias = bias_partials(context, p, bias_pieces);
    if (a == Algorithm::Direct) return {bias, 1};
    if (a == Algorithm::Depthwise || a == Algorithm::ImplicitGemm)  // partial products of the whole filter
        return {slot(pool, uint64_t(partials) * z.filter()) + bias, 1};
    const Lowering l = a == Algorithm::Im2col ? Lowering::Im2col : Lowering::MecB;
    const uint64_t copy = a == Algorithm::Mec ? mec_filter_copy(context, p) : 0;
    const Chunking c = lowered_chunk(z, l, storage_limit(context, options), pool.alignment,
                                     room_for(options.workspace_limit, copy, pool.alignment));
    return {slot(pool, scratch_floats(z, l, c.images, c.rows)) + copy +
                slot(pool, uint64_t(partials) * z.group_product()) + bias,
            c.chunks};
}

// A layer step shares one workspace: each slot (lowered matrix, filter copy, partial products, bias partial
// sums) as large as the larger pass needs.
uint64_t layer_expected(const vkconv::Context& context, const ConvProblem& p, Algorithm a, uint32_t partials,
                        uint32_t bias_pieces) {
    const auto pool = context.pool_stats();
    const Sizes z(p);
    const uint64_t bias = bias_partials(context, p, bias_pieces);
    if (a == Algorithm::Direct) return bias;
    if (a == Algorithm::Depthwise || a == Algorithm::ImplicitGemm) return slot(pool, uint64_t(partials) * z.filter()) + bias;
    const Lowering l = a == Algorithm::Im2col ? Lowering::Im2col : Lowering::MecB;
    const Chunking c = lowered_chunk(z, l, storage_limit(context, {}), pool.alignment, kNone);
    const uint64_t copy = a == Algorithm::Mec ? slot(pool, z.filter()) : 0;  // backward-data's, both layouts
    return slot(pool, scratch_floats(z, l, c.images, c.rows)) + copy +
           slot(pool, uint64_t(partials) * z.group_product()) + bias;
}

// ---------------------------------------------------------------------------------------------------------
// Bounds on the reported split counts (never their exact value: that is the device's choice).

// im2col and MEC backward-filter over chunks of `images` images and `rows` output rows.
void check_partial_bounds(const vkconv::Context& context, const ConvProblem& p, Algorithm a, int64_t images,
                          int64_t rows, uint32_t partials, const PassOptions& options) {
    const Sizes z(p);
    INFO("partial products " << partials << ", chunk of " << images << " images x " << rows << " rows");
    if (a == Algorithm::Direct) {
        CHECK(partials == 0);
        return;
    }
    if (a == Algorithm::Depthwise) {
        CHECK(partials >= 1);
        CHECK(int64_t(partials) <= z.N * z.P);  // each piece at least one output row
        CHECK(uint64_t(partials) * z.filter() * kFloat <= storage_limit(context, options));
        return;
    }
    if (partials == 0) return;
    CHECK(partials >= 2);  // one piece is no split
    if (a == Algorithm::ImplicitGemm) {
        // Slices of the whole N*P*Q reduction, each at least one 16-long K step, within the binding limit.
        CHECK(uint64_t(partials) * z.filter() * kFloat <= storage_limit(context, options));
        CHECK(int64_t(partials) * 16 <= z.N * z.P * z.Q + 15 * int64_t(partials));
        return;
    }
    CHECK(uint64_t(partials) * z.group_product() * kFloat <= storage_limit(context, options));
    const int64_t positions = images * rows * z.Q;
    if (a == Algorithm::Im2col) {
        CHECK(int64_t(partials) * 64 <= positions);  // each piece at least 64 positions
    } else {
        // MEC: slots of (image, piece of rows); an image cut into pieces gives each at least 64 positions.
        const int64_t pieces_per_image = std::max<int64_t>(1, std::min<int64_t>(rows, rows * z.Q / 64));
        CHECK(int64_t(partials) <= images * pieces_per_image);
    }
}

// The bias gradient: pieces of positions of a chunk of whole images within the binding limit.
void check_bias_bounds(const vkconv::Context& context, const ConvProblem& p, uint32_t pieces,
                       const PassOptions& options) {
    const Sizes z(p);
    INFO("bias pieces " << pieces);
    if (!p.has_bias) {
        CHECK(pieces == 0);
        return;
    }
    const uint64_t limit = storage_limit(context, options), align = context.pool_stats().alignment;
    const int64_t images = std::min<int64_t>(z.N, int64_t((limit - align) / (z.y_image() * kFloat)));
    const int64_t positions = images * z.P * z.Q;
    CHECK(pieces >= 1);
    // No invocation sums more than 16384 positions (lavapipe's loop limit), each piece at least 256 unless
    // that limit asks for more.
    CHECK(int64_t(pieces) >= (positions + 16383) / 16384);
    CHECK(int64_t(pieces) <= std::max<int64_t>({1, positions / 256, (positions + 16383) / 16384}));
}

// ---------------------------------------------------------------------------------------------------------
// Runs. The backward passes run in a vkt::BackwardCheck: one layer's operands, each pass on poisoned outputs and
// checked against the reference, with the pool bytes live just before it (CheckedRun::live). Set up with
// {.bias_always = false}, backward-filter and the step write db exactly when the problem has a bias, as the
// formulas assume.

// The run's memory: its workspace is the formula, and its peak is what was live plus that workspace.
void check_run_memory(const RunStats& stats, uint64_t live, uint64_t expected) {
    CHECK(stats.workspace_bytes == expected);
    CHECK(stats.peak_bytes == live + expected);
}

// Forward through vkt::check_forward (reference-checked), its operands' pool bytes computed here.
RunStats forward_checked(vkconv::Context& context, const ConvProblem& p, Algorithm a, uint32_t seed,
                         const PassOptions& options, uint64_t expected) {
    const auto pool = context.pool_stats();
    const uint64_t operands = slot(pool, uint64_t(p.input_elements())) + slot(pool, uint64_t(p.filter_elements())) +
                              slot(pool, uint64_t(p.output_elements())) + (p.has_bias ? slot(pool, uint64_t(p.K)) : 0);
    const RunStats stats = vkt::check_forward(context, p, a, seed, options);
    CHECK(stats.operand_bytes == operands);
    check_run_memory(stats, pool.in_use + operands, expected);
    return stats;
}

struct Named {
    const char* name;
    ConvProblem p;
};

// Odd problems for the untiled passes, with reductions (N*P*Q) long enough that backward-filter splits.
std::vector<Named> problems() {
    return {
        // P = 20, Q = 18: 1080 positions into a dw of 3 x 12 per group.
        {"3x2 kernel, 2 groups, dilation 2,1, padding 2,1",
         vkt::problem().batch(3).channels(4).image(20, 17).filters(6).kernel(3, 2).pad(2, 1).dilation(2, 1).groups(2)},
        // P = 9, Q = 8: 144 positions, one input channel per group.
        {"depthwise multiplier 2, stride 2",
         vkt::problem().batch(2).channels(3).image(18, 16).filters(6).kernel(3, 3).pad(1).stride(2).groups(3)},
        // P = 10, Q = 17 from pads that differ between the sides: 340 positions an image.
        {"pads 0,2,1,3, stride 2,1",
         vkt::problem().batch(2).channels(4).image(19, 15).filters(6).kernel(3, 3).pads(0, 2, 1, 3).stride(2, 1)},
    };
}

}  // namespace

TEST_CASE("forward workspaces equal the lowered matrix and filter copy of the problem's sizes", "[workspace][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // Many filters over a small lowered matrix: Solution A's parked output outweighs MEC's L.
    const ConvProblem many_filters = vkt::problem().batch(2).channels(2).image(9, 8).filters(16).kernel(2, 2).pad(0, 1);
    CHECK(Sizes(many_filters).y_image() > Sizes(many_filters).mec(1, many_filters.P()));
    struct Case {
        Named named;
        std::vector<Layout> layouts;
        std::vector<Algorithm> algorithms;
    };
    const std::vector<Case> cases{
        {problems()[0], {Layout::NCHW, Layout::NHWC}, {Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec}},
        {{"16 filters, 2 channels, 2x2", many_filters}, {Layout::NCHW}, {Algorithm::Im2col, Algorithm::Mec}},
        {problems()[1], {Layout::NCHW, Layout::NHWC}, {Algorithm::Direct, Algorithm::Depthwise}},
        {problems()[2],
         {Layout::NCHW, Layout::NHWC},
         {Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec, Algorithm::ImplicitGemm}},
    };
    uint32_t seed = 100;
    for (const auto& [named, layouts, algorithms] : cases)
        for (Layout layout : layouts) {
            auto p = named.p;
            p.layout = layout;
            p.has_bias = layout == Layout::NHWC;
            for (Algorithm a : algorithms)
                for (std::string schedule : {"A", "B"}) {
                    if (a != Algorithm::Mec && schedule == "B") continue;
                    PassOptions options;
                    if (a == Algorithm::Mec) options.variant = schedule;
                    INFO(named.name << ": " << p.str() << " " << vkconv::to_string(a)
                                    << (a == Algorithm::Mec ? schedule : ""));
                    const Expected e = forward_expected(*context, p, a, options);
                    CHECK(vkconv::forward_workspace_bytes(*context, p, a, options) == e.bytes);
                    const RunStats s = forward_checked(*context, p, a, seed++, options, e.bytes);
                    CHECK(s.algorithm == a);
                    if (a == Algorithm::Mec) CHECK(s.variant == schedule);
                    if (a != Algorithm::Direct) CHECK(s.chunks == e.chunks);
                }
        }
}

TEST_CASE("forward chunks hold the most images or rows whose bindings and workspace fit", "[workspace][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const uint64_t align = context->pool_stats().alignment;
    // P = 7, Q = 7
    ConvProblem p = vkt::problem()
                        .batch(5)
                        .channels(3)
                        .image(13, 11)
                        .filters(4)
                        .kernel(3, 3)
                        .pad(1, 0)
                        .stride(2, 1)
                        .dilation(1, 2)
                        .bias();
    const Sizes z(p);
    uint32_t seed = 200;
    struct Variant {
        Algorithm a;
        std::string schedule;
    };
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
        for (const Variant& v : {Variant{Algorithm::Im2col, ""}, Variant{Algorithm::Mec, "A"},
                                Variant{Algorithm::Mec, "B"}}) {
            p.layout = layout;
            const Lowering l = forward_lowering(v.a, v.schedule);
            const uint64_t one_image = scratch_floats(z, l, 1, z.P) * kFloat;
            const uint64_t copy = v.a == Algorithm::Mec ? mec_filter_copy(*context, p) : 0;
            // Binding caps: room for two images' scratch (and x, y); for 3 rows of one image.
            std::vector<std::pair<const char*, PassOptions>> variants;
            PassOptions two_images;
            two_images.max_binding_bytes = 2 * one_image + 8;
            variants.push_back({"binding cap: two images", two_images});
            PassOptions rows;
            rows.max_binding_bytes = std::max(
                {scratch_floats(z, l, 1, 3) * kFloat + 4, z.x_image() * kFloat + align, z.y_image() * kFloat + align});
            variants.push_back({"binding cap: bands of rows", rows});
            // Workspace limits: room for three images' scratch beside the filter copy; for two rows.
            PassOptions three_images;
            three_images.workspace_limit = copy + 3 * one_image + align;
            variants.push_back({"workspace limit: three images", three_images});
            PassOptions two_rows;
            two_rows.workspace_limit = copy + slot(context->pool_stats(), scratch_floats(z, l, 1, 2));
            variants.push_back({"workspace limit: two rows", two_rows});
            for (auto& [what, options] : variants) {
                options.variant = v.schedule;
                INFO(what << ": " << p.str() << " " << vkconv::to_string(v.a) << " " << v.schedule
                          << " max_binding_bytes " << options.max_binding_bytes << " workspace_limit "
                          << options.workspace_limit);
                const Expected e = forward_expected(*context, p, v.a, options);
                CHECK(e.chunks > 1);
                CHECK(vkconv::forward_workspace_bytes(*context, p, v.a, options) == e.bytes);
                const RunStats s = forward_checked(*context, p, v.a, seed++, options, e.bytes);
                CHECK(s.chunks == e.chunks);
                if (options.workspace_limit) CHECK(s.workspace_bytes <= options.workspace_limit);
            }
        }
}

namespace {

// db alone: pieces * K partial sums when it takes several pieces.
void check_bias_alone(vkconv::Context& context, const ConvProblem& p, vkt::BackwardCheck& layer) {
    const vkt::CheckedRun b = layer.bias();
    check_run_memory(b.stats, b.live, bias_partials(context, p, b.stats.bias_pieces));
    check_bias_bounds(context, p, b.stats.bias_pieces, {});
    CHECK(b.stats.partial_products == 0);
}

// Backward-data: no split reductions. Returns the expected workspace.
Expected check_backward_data(vkconv::Context& context, const ConvProblem& p, vkt::BackwardCheck& layer,
                             Algorithm a) {
    const Expected de = backward_data_expected(context, p, a, {});
    CHECK(vkconv::backward_data_workspace_bytes(context, p, a) == de.bytes);
    const vkt::CheckedRun d = layer.data(a);
    CHECK(d.stats.algorithm == a);
    check_run_memory(d.stats, d.live, de.bytes);
    if (a == Algorithm::Im2col || a == Algorithm::Mec) CHECK(d.stats.chunks == de.chunks);
    CHECK(d.stats.partial_products == 0);
    CHECK(d.stats.bias_pieces == 0);
    return de;
}

// Backward-filter's default plan: its split counts as reported, in the formula and bounded. Returns the
// run's stats and the expected workspace.
std::pair<RunStats, Expected> check_backward_filter(vkconv::Context& context, const ConvProblem& p,
                                                    vkt::BackwardCheck& layer, Algorithm a) {
    const uint64_t align = context.pool_stats().alignment;
    const vkt::CheckedRun r = layer.filter(a);
    const RunStats& s = r.stats;
    const Expected e = backward_filter_expected(context, p, a, {}, s.partial_products, s.bias_pieces);
    CHECK(vkconv::backward_filter_workspace_bytes(context, p, a) == e.bytes);
    check_run_memory(s, r.live, e.bytes);
    CHECK(s.algorithm == a);
    if (a == Algorithm::Im2col || a == Algorithm::Mec) CHECK(s.chunks == e.chunks);
    const Lowering l = a == Algorithm::Mec ? Lowering::MecB : Lowering::Im2col;
    const Chunking c = lowered_chunk(Sizes(p), l, storage_limit(context, {}), align, kNone);
    check_partial_bounds(context, p, a, c.images, c.rows, s.partial_products, {});
    check_bias_bounds(context, p, s.bias_pieces, {});
    // These problems reduce over enough positions, into a dw small enough for one GEMM tile,
    // that every device splits im2col's and MEC's reductions.
    if (a == Algorithm::Im2col || a == Algorithm::Mec) CHECK(s.partial_products >= 2);
    return {s, e};
}

// The layer step: each shared slot the larger pass's.
void check_layer_step(vkconv::Context& context, const ConvProblem& p, vkt::BackwardCheck& layer, Algorithm a,
                      const RunStats& s, const Expected& de, const Expected& e) {
    const auto checked_step = layer.step(a);
    const auto& step = checked_step.stats;
    const uint64_t live = checked_step.live;
    CHECK(step.data_algorithm == a);
    CHECK(step.filter_algorithm == a);
    CHECK(step.step.partial_products == s.partial_products);
    CHECK(step.step.bias_pieces == s.bias_pieces);
    CHECK(step.data_workspace_bytes == de.bytes);
    CHECK(step.filter_workspace_bytes == e.bytes);
    const uint64_t shared = layer_expected(context, p, a, s.partial_products, s.bias_pieces);
    CHECK(vkconv::layer_backward_workspace_bytes(context, p, a) == shared);
    check_run_memory(step.step, live, shared);
}

// The unsplit workspace as the limit leaves no room for partial products or bias partial
// sums: the reductions add straight into dw and db (depthwise keeps its one piece's sums).
// Direct's unsplit workspace is nothing: a limit of one byte.
void check_unsplit_limit(vkconv::Context& context, const ConvProblem& p, vkt::BackwardCheck& layer, Algorithm a,
                         bool bias, const RunStats& s) {
    if (a == Algorithm::Direct && !bias) return;  // nothing to pin
    const uint32_t floor_pieces = a == Algorithm::Depthwise ? 1 : 0;
    const uint64_t unsplit = backward_filter_expected(context, p, a, {}, floor_pieces, 1).bytes;
    PassOptions tight;
    tight.workspace_limit = std::max<uint64_t>(unsplit, 1);
    INFO("workspace limit " << tight.workspace_limit);
    CHECK(vkconv::backward_filter_workspace_bytes(context, p, a, tight) == unsplit);
    const vkt::CheckedRun pinned = layer.filter(a, tight);
    check_run_memory(pinned.stats, pinned.live, unsplit);
    CHECK(pinned.stats.partial_products == floor_pieces);
    CHECK(pinned.stats.bias_pieces == (bias ? 1u : 0u));
    CHECK(pinned.stats.chunks == s.chunks);
}

}  // namespace

TEST_CASE("backward workspaces equal the lowered matrix, filter copy, partial products and bias sums",
          "[workspace][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 300;
    int splits_seen = 0, bias_splits_seen = 0;
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
        for (const auto& [name, problem] : problems())
            for (bool bias : {false, true}) {
                auto p = problem;
                p.layout = layout;
                p.has_bias = bias;
                vkt::BackwardCheck layer(*context, p, seed += 3, {.bias_always = false});
                INFO(name << ": " << p.str());
                if (bias) check_bias_alone(*context, p, layer);
                for (Algorithm a : vkt::algorithms_for(p)) {
                    INFO(vkconv::to_string(a));
                    const Expected de = check_backward_data(*context, p, layer, a);
                    const auto [s, e] = check_backward_filter(*context, p, layer, a);
                    splits_seen += s.partial_products >= 2;
                    bias_splits_seen += s.bias_pieces >= 2;
                    check_layer_step(*context, p, layer, a, s, de, e);
                    check_unsplit_limit(*context, p, layer, a, bias, s);
                }
            }
    // The split branches of the formulas were exercised, not only their zero terms.
    CHECK(splits_seen > 0);
    CHECK(bias_splits_seen > 0);
}

TEST_CASE("backward chunks and partial products follow a capped binding or workspace", "[workspace][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const uint64_t align = context->pool_stats().alignment;
    auto p = problems().front().p;  // 3 images of 20 output rows
    p.has_bias = true;
    uint32_t seed = 500;
    for (const auto& [a, layout] : {std::pair{Algorithm::Im2col, Layout::NHWC}, std::pair{Algorithm::Mec, Layout::NCHW},
                                    std::pair{Algorithm::Mec, Layout::NHWC}}) {
        p.layout = layout;
        const Sizes z(p);
        const Lowering l = a == Algorithm::Im2col ? Lowering::Im2col : Lowering::MecB;
        vkt::BackwardCheck layer(*context, p, seed += 3, {.bias_always = false});
        std::vector<std::pair<const char*, PassOptions>> variants(3);
        // One image's scratch a binding: chunks of one image.
        variants[0].first = "binding cap: one image";
        variants[0].second.max_binding_bytes = scratch_floats(z, l, 1, z.P) * kFloat + align;
        // Room for 7 rows' scratch, and one image of x and dy: bands of rows.
        variants[1].first = "binding cap: bands of rows";
        variants[1].second.max_binding_bytes =
            std::max({scratch_floats(z, l, 1, 7) * kFloat, z.x_image() * kFloat + align, z.y_image() * kFloat + align});
        // A workspace just short of 6 rows' scratch beside MEC's filter copy: bands of 5 rows, which would be
        // 6 if the copy were left out. Backward-data's copy is workspace in both layouts, backward-filter's
        // only for OIHW filters (NHWC bands may be taller).
        variants[2].first = "workspace limit: bands of rows";
        variants[2].second.workspace_limit = (a == Algorithm::Mec ? slot(context->pool_stats(), z.filter()) : 0) +
                                             (scratch_floats(z, l, 1, 6) * kFloat - 1) / align * align;
        for (const auto& [what, options] : variants) {
            INFO(what << ": " << p.str() << " " << vkconv::to_string(a) << " max_binding_bytes "
                      << options.max_binding_bytes << " workspace_limit " << options.workspace_limit);
            const Expected d = backward_data_expected(*context, p, a, options);
            CHECK(d.chunks > 1);
            CHECK(vkconv::backward_data_workspace_bytes(*context, p, a, options) == d.bytes);
            const vkt::CheckedRun data = layer.data(a, options);
            CHECK(data.stats.chunks == d.chunks);
            check_run_memory(data.stats, data.live, d.bytes);

            const vkt::CheckedRun r = layer.filter(a, options);
            const Expected e =
                backward_filter_expected(*context, p, a, options, r.stats.partial_products, r.stats.bias_pieces);
            CHECK(e.chunks > 1);
            CHECK(r.stats.chunks == e.chunks);
            CHECK(vkconv::backward_filter_workspace_bytes(*context, p, a, options) == e.bytes);
            check_run_memory(r.stats, r.live, e.bytes);
            const uint64_t copy = a == Algorithm::Mec ? mec_filter_copy(*context, p) : 0;
            const Chunking c = lowered_chunk(z, l, storage_limit(*context, options), align,
                                             room_for(options.workspace_limit, copy, align));
            check_partial_bounds(*context, p, a, c.images, c.rows, r.stats.partial_products, options);
            check_bias_bounds(*context, p, r.stats.bias_pieces, options);
            if (options.workspace_limit) {
                CHECK(d.bytes <= options.workspace_limit);
                CHECK(e.bytes <= options.workspace_limit);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Tiles: a context whose binding range is 4 KiB runs these problems in tiles of one image, a band of rows
// and (here) all the filters. A tile's workspace is its operand buffers (input band with the padding's
// rows, filter, bias, output band), each the largest any tile needs, plus the tile pass's own workspace for
// the largest tile problem (N = 1, the band's rows, pad_h = 0).

namespace {

constexpr uint64_t kTileLimit = 4096;

enum class TilePass { Forward, Data, Filter };

struct TileModel {
    int64_t band = 0;
    uint32_t tiles = 0;
    // Floats, by the role of the tile buffer in the convolution: x-shaped (x', or dx' for backward-data),
    // filter, bias, y-shaped (y', or dy' for the backward passes), then the tile pass's own.
    std::vector<uint64_t> slots;
};

// The tallest band of rows (output rows; backward-data: dx rows) whose tiles fit: every tile buffer within a
// binding (less the window alignment), the copies' windows too (NCHW: one channel's rows of a band; NHWC:
// one row of all channels), and the tile pass able to run the tile (im2col: one output row's col fits).
TileModel tile_model(const vkconv::Context& context, const ConvProblem& p, TilePass pass, Algorithm a,
                     uint32_t partials, uint32_t bias_pieces) {
    const Sizes z(p);
    const uint64_t limit = storage_limit(context, {}), fits = limit - context.pool_stats().alignment;
    REQUIRE(z.filter() * kFloat <= fits);  // one piece of all the filters
    const bool nhwc = p.layout == Layout::NHWC;
    const uint64_t col_row = uint64_t(z.Q * z.R * z.S * z.C);  // im2col floats of one output row
    const int64_t total = pass == TilePass::Data ? z.H : z.P;
    for (int64_t band = total; band >= 1; --band) {
        bool ok = a != Algorithm::Im2col || col_row * kFloat <= limit;
        uint64_t x_tile = 0, y_tile = 0, own_lowered = 0;
        for (int64_t first = 0; first < total; first += band) {
            const int64_t last = std::min(total, first + band);
            int64_t rows = last - first;  // output rows of the tile
            if (pass == TilePass::Data) {
                // The dy rows whose windows reach dx rows [first, last).
                const int64_t top = first + z.ph - (z.R - 1) * z.dh;
                const int64_t p0 = top <= 0 ? 0 : (top + z.sh - 1) / z.sh;
                const int64_t p1 = std::min(z.P, (last - 1 + z.ph) / z.sh + 1);
                rows = std::max<int64_t>(0, p1 - p0);
                if (nhwc ? uint64_t(z.W * z.C) * kFloat > fits : uint64_t(z.W * (last - first)) * kFloat > fits)
                    ok = false;
                if (rows == 0) continue;
            }
            const int64_t tile_h = z.rows_read(rows);  // input rows of the tile, padding included
            const uint64_t x = uint64_t(z.C * tile_h * z.W), y = uint64_t(z.K * rows * z.Q);
            if (x * kFloat > fits || y * kFloat > fits) ok = false;
            const uint64_t x_span = nhwc ? uint64_t(z.W * z.C) : uint64_t(z.W * std::min(tile_h, z.H));
            const uint64_t y_span = nhwc ? uint64_t(z.Q * z.K) : uint64_t(z.Q * rows);
            if (x_span * kFloat > fits || y_span * kFloat > fits) ok = false;
            x_tile = std::max(x_tile, x), y_tile = std::max(y_tile, y);
            // im2col in the tile: the tallest chunk of its rows whose col fits a binding.
            if (a == Algorithm::Im2col)
                own_lowered =
                    std::max(own_lowered, col_row * uint64_t(std::min<int64_t>(rows, limit / (col_row * kFloat))));
        }
        if (!ok) continue;
        TileModel m;
        m.band = band;
        m.tiles = uint32_t(z.N * ((total + band - 1) / band));
        const uint64_t bias = p.has_bias && pass != TilePass::Data ? uint64_t(z.K) : 0;
        m.slots = {x_tile, z.filter(), bias, y_tile, own_lowered, 0};
        if (pass != TilePass::Forward) {
            m.slots.push_back(pass == TilePass::Filter ? uint64_t(partials) * z.group_product() : 0);
            m.slots.push_back(
                pass == TilePass::Filter && p.has_bias && bias_pieces > 1 ? uint64_t(bias_pieces) * uint64_t(z.K) : 0);
        }
        return m;
    }
    FAIL("no band fits");
    return {};
}

uint64_t bytes_of(const vkconv::Context& context, const std::vector<uint64_t>& slots) {
    uint64_t bytes = 0;
    for (uint64_t floats : slots) bytes += slot(context.pool_stats(), floats);
    return bytes;
}

// One layout each (both are covered, at half the time).
std::vector<Named> tiled_problems() {
    return {
        // 7.8 KB an image
        {"image beyond the limit, padding 1",
         vkt::problem().batch(2).channels(5).image(23, 17).filters(6).kernel(3, 3).pad(1)},
        // one dx row needs 17 input rows of its tile
        {"stride 2, dilation 2, padding 3", vkt::problem()
                                                .batch(1)
                                                .channels(2)
                                                .image(40, 13)
                                                .filters(4)
                                                .kernel(5, 3)
                                                .pad(3, 1)
                                                .stride(2)
                                                .dilation(2, 1)
                                                .layout(Layout::NHWC)},
        // Tiles of rows whose padding is all at the top, and columns padded on the right only.
        {"pads 2,0,0,2, stride 2",
         vkt::problem().batch(1).channels(3).image(40, 11).filters(4).kernel(3, 3).pads(2, 0, 0, 2).stride(2)},
    };
}

}  // namespace

TEST_CASE("tiled workspaces equal the tile buffers plus the tile pass's own", "[workspace][gpu]") {
    auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = kTileLimit});
    if (!context) return;
    uint32_t seed = 700;
    for (const auto& [name, problem] : tiled_problems()) {
        auto p = problem;
        p.has_bias = true;
        vkt::BackwardCheck layer(*context, p, seed += 3, {.bias_always = false});
        for (Algorithm a : {Algorithm::Direct, Algorithm::Im2col}) {
            INFO(name << ": " << p.str() << " " << vkconv::to_string(a));
            const TileModel f = tile_model(*context, p, TilePass::Forward, a, 0, 0);
            const uint64_t forward = bytes_of(*context, f.slots);
            INFO("forward band " << f.band);
            CHECK(vkconv::forward_workspace_bytes(*context, p, a) == forward);
            const RunStats fs = forward_checked(*context, p, a, seed++, {}, forward);
            CHECK(fs.chunks == f.tiles);

            const TileModel d = tile_model(*context, p, TilePass::Data, a, 0, 0);
            const uint64_t data = bytes_of(*context, d.slots);
            INFO("backward-data band " << d.band);
            CHECK(vkconv::backward_data_workspace_bytes(*context, p, a) == data);
            const vkt::CheckedRun dr = layer.data(a);
            CHECK(dr.stats.chunks == d.tiles);
            check_run_memory(dr.stats, dr.live, data);

            const vkt::CheckedRun fr = layer.filter(a);
            const TileModel w =
                tile_model(*context, p, TilePass::Filter, a, fr.stats.partial_products, fr.stats.bias_pieces);
            const uint64_t filter = bytes_of(*context, w.slots);
            INFO("backward-filter band " << w.band << ", partial products " << fr.stats.partial_products
                                         << ", bias pieces " << fr.stats.bias_pieces);
            CHECK(vkconv::backward_filter_workspace_bytes(*context, p, a) == filter);
            CHECK(fr.stats.chunks == w.tiles);
            check_run_memory(fr.stats, fr.live, filter);
            // Tiles of one image and `band` rows: a split (or bias pieces) within their reduction.
            const ConvProblem tile = [&] {
                ConvProblem q = p;
                q.N = 1, q.H = Sizes(p).rows_read(w.band), q.pad_h = 0;
                return q;
            }();
            check_partial_bounds(*context, tile, a, 1, w.band, fr.stats.partial_products, {});
            check_bias_bounds(*context, tile, fr.stats.bias_pieces, {});

            // The step: both passes tiled, each shared slot the larger pass's.
            std::vector<uint64_t> shared(d.slots.size());
            REQUIRE(d.slots.size() == w.slots.size());
            for (size_t i = 0; i < shared.size(); ++i) shared[i] = std::max(d.slots[i], w.slots[i]);
            const auto checked_step = layer.step(a);
            const auto& step = checked_step.stats;
            const uint64_t live = checked_step.live;
            CHECK(step.step.partial_products == fr.stats.partial_products);
            CHECK(step.step.bias_pieces == fr.stats.bias_pieces);
            CHECK(vkconv::layer_backward_workspace_bytes(*context, p, a) == bytes_of(*context, shared));
            check_run_memory(step.step, live, bytes_of(*context, shared));
        }
    }
}
