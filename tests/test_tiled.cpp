// Tensors too large to bind: one image, or the filter, beyond the binding limit. A context whose reported
// maxStorageBufferRange is lowered to a few KiB makes small problems take the tiled path, so every pass
// and algorithm is checked against the CPU reference there: bands with the padding's zero rows, pieces of
// whole groups and pieces within a group, sums over pieces, images and bands.
#include "conv_cases.hpp"
#include "test_util.hpp"

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Layout;

namespace {

constexpr uint64_t kLimit = 4096;  // bytes: 1024 floats a binding

struct Case {
    const char* name;
    ConvProblem p;
};

std::vector<Case> cases() {
    return {
        // 7.8 KB an image: bands of rows
        {"image beyond the limit, padding 1",
         vkt::problem().batch(2).channels(5).image(23, 17).filters(6).kernel(3, 3).pad(1)},
        // one dx row needs 17 input rows of its tile
        {"stride 2, dilation 2, padding 3",
         vkt::problem().batch(1).channels(2).image(40, 13).filters(4).kernel(5, 3).pad(3, 1).stride(2).dilation(2, 1)},
        // 11.5 KB of filters: pieces within the one group
        {"filter beyond the limit",
         vkt::problem().batch(2).channels(16).image(6, 5).filters(20).kernel(3, 3).pad(1, 0)},
        // 4 groups of 16 filters x 2 channels: pieces of whole groups
        {"grouped filter beyond the limit",
         vkt::problem().batch(1).channels(8).image(9, 7).filters(64).kernel(3, 3).pad(0, 2).groups(4)},
        // channel multiplier 2
        {"depthwise image beyond the limit",
         vkt::problem().batch(2).channels(6).depthwise(2).image(19, 18).kernel(3, 3).pad(1)},
    };
}

std::unique_ptr<vkconv::Context> small_binding_context() {
    return vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = kLimit});
}

}  // namespace

TEST_CASE("tiled forward matches the reference when an image or the filter exceeds the binding limit", "[tiled][gpu]") {
    auto context = small_binding_context();
    if (!context) return;
    uint32_t seed = 900;
    for (auto layout : {Layout::NCHW, Layout::NHWC})
        for (const auto& [name, problem] : cases()) {
            auto p = problem;
            p.layout = layout;
            p.has_bias = true;
            for (Algorithm algorithm : vkt::algorithms_for(p)) {
                INFO(name << ": " << p.str() << " " << vkconv::to_string(algorithm));
                const auto stats = vkt::check_forward(*context, p, algorithm, seed += 3);
                CHECK(stats.algorithm == algorithm);
                CHECK(stats.chunks > uint32_t(p.N));  // tiles: more than one per image, or several pieces
                CHECK(stats.workspace_bytes == vkconv::forward_workspace_bytes(*context, p, algorithm));
                CHECK(stats.peak_bytes == stats.operand_bytes + stats.workspace_bytes);
            }
        }
}

TEST_CASE("tiled backward passes match the reference when an image or the filter exceeds the binding limit",
          "[tiled][gpu]") {
    auto context = small_binding_context();
    if (!context) return;
    uint32_t seed = 700;
    for (auto layout : {Layout::NCHW, Layout::NHWC})
        for (const auto& [name, problem] : cases()) {
            auto p = problem;
            p.layout = layout;
            p.has_bias = true;
            // x, w, dy from seed, seed + 1, seed + 2.
            vkt::BackwardCheck check(*context, p, seed);
            seed += 3;
            for (Algorithm algorithm : vkt::algorithms_for(p)) {
                INFO(name << ": " << p.str() << " " << vkconv::to_string(algorithm));
                // Each pass below poisons what it writes and checks it against the reference; each checks that
                // its workspace equals the query.
                const auto data = check.data(algorithm);
                const uint64_t live = data.live;  // every tensor of the check, not just the pass's
                CHECK(data.stats.chunks > uint32_t(p.N));
                CHECK(data.stats.peak_bytes == live + data.stats.workspace_bytes);

                const auto filter = check.filter(algorithm);  // dw and db
                CHECK(filter.stats.peak_bytes == live + filter.stats.workspace_bytes);
                const auto dw_first = check.dw(), db_first = check.db();
                check.filter(algorithm);        // a rerun from poison: one that writes nothing must not pass
                CHECK(check.dw() == dw_first);  // sums over tiles in a fixed order
                CHECK(check.db() == db_first);

                // The bias gradient alone, in tiles of its own.
                const auto bias = check.bias();
                CHECK(bias.stats.peak_bytes == live + bias.stats.workspace_bytes);

                // The whole step in one submission on shared slots.
                const auto step = check.step(algorithm);
                CHECK(step.stats.step.peak_bytes == live + step.stats.step.workspace_bytes);
                CHECK(check.dw() == dw_first);
                CHECK(check.db() == db_first);
            }
        }
}

TEST_CASE("auto runs tiles and a workspace limit shrinks them", "[tiled][gpu]") {
    auto context = small_binding_context();
    if (!context) return;
    auto p = cases().front().p;
    vkconv::PassOptions heuristic;
    heuristic.auto_choice = vkconv::AutoChoice::Heuristic;
    const auto stats = vkt::check_forward(*context, p, Algorithm::Auto, 5, heuristic);
    CHECK(stats.algorithm == vkconv::choose_forward_algorithm(*context, p, heuristic));
    const auto measured = vkt::check_forward(*context, p, Algorithm::Auto, 6);
    CHECK(measured.algorithm != Algorithm::Auto);
    // Half the untiled-limit workspace: smaller bands, every byte within the limit.
    vkconv::PassOptions limited;
    limited.workspace_limit = vkconv::forward_workspace_bytes(*context, p, Algorithm::Im2col) / 2;
    const auto small = vkt::check_forward(*context, p, Algorithm::Im2col, 7, limited);
    CHECK(small.workspace_bytes <= limited.workspace_limit);
    CHECK(small.chunks > stats.chunks);
}

TEST_CASE("tiled backward_bias sizes its partial sums for the narrower last run of channels", "[tiled][gpu]") {
    // 63 channels: the last run of channels is narrower and takes more pieces than the full one.
    auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 3u << 20});
    if (!context) return;
    ConvProblem p;
    p.N = 1, p.C = 1, p.H = 2, p.W = 20000, p.K = 63, p.R = 1, p.S = 1, p.has_bias = true;
    const auto dy = vkt::random_values(p.output_elements(), 3);
    auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
    auto tdb = vkconv::Tensor::from_host(*context, p.bias_shape(), vkt::poison(p.K));
    const uint64_t live = context->pool_stats().in_use;
    const auto stats = vkconv::backward_bias(*context, p, tdy, tdb);
    CHECK(stats.peak_bytes == live + stats.workspace_bytes);
    vkt::check_close(tdb.download(), vkconv::reference::backward_bias(p, dy),
                     vkconv::reference::backward_bias(p, vkt::absolute(dy)), p.N * p.P() * p.Q(), "tiled bias");
}

TEST_CASE("direct backward-filter with a bias and a binding cap runs in tiles", "[tiled][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    ConvProblem p;
    p.N = 1, p.C = 2, p.H = 20, p.W = 20, p.K = 4, p.R = 3, p.S = 3, p.has_bias = true;
    vkconv::PassOptions capped;
    capped.max_binding_bytes = 1024;  // one image of dy (1296 bytes) is beyond it
    const auto x = vkt::random_values(p.input_elements(), 1), dy = vkt::random_values(p.output_elements(), 2);
    auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
    auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
    vkconv::Tensor tdw(*context, p.filter_shape()), tdb(*context, p.bias_shape());
    vkconv::PassOptions heuristic = capped;
    heuristic.auto_choice = vkconv::AutoChoice::Heuristic;
    const int64_t positions = p.N * p.P() * p.Q();
    for (const auto& [algorithm, options] :
         {std::pair{Algorithm::Direct, capped}, {Algorithm::Auto, heuristic}, {Algorithm::Auto, capped}}) {
        INFO(vkconv::to_string(algorithm)
             << (options.auto_choice == vkconv::AutoChoice::Heuristic ? " (heuristic)" : ""));
        tdw.upload(vkt::poison(p.filter_elements()));
        tdb.upload(vkt::poison(p.K));
        const auto stats = vkconv::backward_filter(*context, p, tx, tdy, tdw, &tdb, algorithm, options);
        if (algorithm == Algorithm::Direct) CHECK(stats.chunks > 1);  // tiles: dy cannot be bound whole
        vkt::check_close(tdw.download(), vkconv::reference::backward_filter(p, x, dy),
                         vkconv::reference::backward_filter(p, vkt::absolute(x), vkt::absolute(dy)), positions, "dw");
        vkt::check_close(tdb.download(), vkconv::reference::backward_bias(p, dy),
                         vkconv::reference::backward_bias(p, vkt::absolute(dy)), positions, "db");
    }
}

TEST_CASE("a layer step stays within the workspace limit when its passes cannot share slots", "[tiled][gpu]") {
    auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 4096});
    if (!context) return;
    ConvProblem p;
    p.N = 1, p.C = 3, p.H = 38, p.W = 13, p.K = 3, p.R = 4, p.S = 4, p.pad_h = 2, p.stride_h = 2;
    p.dilation_h = 3, p.dilation_w = 2, p.has_bias = true;
    vkconv::PassOptions limited;
    limited.workspace_limit = 4099;
    vkt::BackwardCheck check(*context, p, 1);  // x, w, dy from seeds 1, 2, 3
    // Poisons dx, dw and db, runs the step, checks all three against the reference and the workspace query.
    const auto step = check.step(Algorithm::Direct, limited);
    CHECK(step.stats.step.workspace_bytes <= limited.workspace_limit);
    CHECK(step.stats.step.workspace_bytes ==
          vkconv::layer_backward_workspace_bytes(*context, p, Algorithm::Direct, limited));
    CHECK(step.stats.step.peak_bytes == step.live + step.stats.step.workspace_bytes);
}
