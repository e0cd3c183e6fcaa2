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

ConvProblem make(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S) {
    ConvProblem p;
    p.N = N, p.C = C, p.H = H, p.W = W, p.K = K, p.R = R, p.S = S;
    return p;
}

struct Case {
    const char* name;
    ConvProblem p;
};

std::vector<Case> cases() {
    std::vector<Case> all;
    auto image = make(2, 5, 23, 17, 6, 3, 3);  // 7.8 KB an image: bands of rows
    image.pad_h = image.pad_w = 1;
    all.push_back({"image beyond the limit, padding 1", image});
    auto strided = make(1, 2, 40, 13, 4, 5, 3);  // one dx row needs 17 input rows of its tile
    strided.stride_h = 2, strided.dilation_h = 2, strided.pad_h = 3, strided.pad_w = 1, strided.stride_w = 2;
    all.push_back({"stride 2, dilation 2, padding 3", strided});
    auto filter = make(2, 16, 6, 5, 20, 3, 3);  // 11.5 KB of filters: pieces within the one group
    filter.pad_h = 1;
    all.push_back({"filter beyond the limit", filter});
    auto grouped = make(1, 8, 9, 7, 64, 3, 3);  // 4 groups of 16 filters x 2 channels: pieces of whole groups
    grouped.groups = 4, grouped.pad_w = 2;
    all.push_back({"grouped filter beyond the limit", grouped});
    auto depthwise = make(2, 6, 19, 18, 12, 3, 3);  // channel multiplier 2
    depthwise.groups = 6, depthwise.pad_h = depthwise.pad_w = 1;
    all.push_back({"depthwise image beyond the limit", depthwise});
    return all;
}

std::unique_ptr<vkconv::Context> small_binding_context() {
    auto options = vkt::test_options();
    options.max_storage_buffer_range = kLimit;
    return vkt::fresh_context(options);
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
            const auto x = vkt::random_values(p.input_elements(), seed++);
            const auto w = vkt::random_values(p.filter_elements(), seed++);
            const auto dy = vkt::random_values(p.output_elements(), seed++);
            auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
            auto tw = vkconv::Tensor::from_host(*context, p.filter_shape(), w);
            auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
            vkconv::Tensor tdx(*context, p.input_shape()), tdw(*context, p.filter_shape()),
                tdb(*context, p.bias_shape());
            const auto dx_ref = vkconv::reference::backward_data(p, dy, w);
            const auto dx_mag = vkconv::reference::backward_data(p, vkt::absolute(dy), vkt::absolute(w));
            const auto dw_ref = vkconv::reference::backward_filter(p, x, dy);
            const auto dw_mag = vkconv::reference::backward_filter(p, vkt::absolute(x), vkt::absolute(dy));
            const auto db_ref = vkconv::reference::backward_bias(p, dy);
            const auto db_mag = vkconv::reference::backward_bias(p, vkt::absolute(dy));
            const int64_t data_reduction = p.filters_per_group() * p.R * p.S, filter_reduction = p.N * p.P() * p.Q();
            for (Algorithm algorithm : vkt::algorithms_for(p)) {
                INFO(name << ": " << p.str() << " " << vkconv::to_string(algorithm));
                tdx.upload(vkt::poison(p.input_elements()));
                const uint64_t live = context->pool_stats().in_use;  // every tensor above, not just the pass's
                const auto data = vkconv::backward_data(*context, p, tdy, tw, tdx, algorithm);
                CHECK(data.chunks > uint32_t(p.N));
                CHECK(data.workspace_bytes == vkconv::backward_data_workspace_bytes(*context, p, algorithm));
                CHECK(data.peak_bytes == live + data.workspace_bytes);
                vkt::check_close(tdx.download(), dx_ref, dx_mag, data_reduction, "tiled backward_data");

                tdw.upload(vkt::poison(p.filter_elements()));
                tdb.upload(vkt::poison(p.K));
                const auto filter = vkconv::backward_filter(*context, p, tx, tdy, tdw, &tdb, algorithm);
                CHECK(filter.workspace_bytes == vkconv::backward_filter_workspace_bytes(*context, p, algorithm));
                CHECK(filter.peak_bytes == live + filter.workspace_bytes);
                const auto dw_first = tdw.download(), db_first = tdb.download();
                vkt::check_close(dw_first, dw_ref, dw_mag, filter_reduction, "tiled backward_filter");
                vkt::check_close(db_first, db_ref, db_mag, filter_reduction, "tiled bias gradient");
                tdw.upload(vkt::poison(p.filter_elements()));  // a rerun that writes nothing must not pass
                tdb.upload(vkt::poison(p.K));
                vkconv::backward_filter(*context, p, tx, tdy, tdw, &tdb, algorithm);
                CHECK(tdw.download() == dw_first);  // sums over tiles in a fixed order
                CHECK(tdb.download() == db_first);

                // The bias gradient alone, in tiles of its own.
                tdb.upload(vkt::poison(p.K));
                const auto bias = vkconv::backward_bias(*context, p, tdy, tdb);
                CHECK(bias.peak_bytes == live + bias.workspace_bytes);
                vkt::check_close(tdb.download(), db_ref, db_mag, filter_reduction, "tiled backward_bias");

                // The whole step in one submission on shared slots.
                tdx.upload(vkt::poison(p.input_elements()));
                tdw.upload(vkt::poison(p.filter_elements()));
                tdb.upload(vkt::poison(p.K));
                const auto step = vkconv::layer_backward(*context, p, tx, tw, tdy, tdx, tdw, &tdb, algorithm);
                CHECK(step.step.workspace_bytes == vkconv::layer_backward_workspace_bytes(*context, p, algorithm));
                CHECK(step.step.peak_bytes == live + step.step.workspace_bytes);
                vkt::check_close(tdx.download(), dx_ref, dx_mag, data_reduction, "tiled layer step dx");
                CHECK(tdw.download() == dw_first);
                CHECK(tdb.download() == db_first);
            }
        }
}

TEST_CASE("auto runs tiles and a workspace limit shrinks them", "[tiled][gpu]") {
    auto context = small_binding_context();
    if (!context) return;
    auto p = cases().front().p;
    vkconv::ForwardOptions heuristic;
    heuristic.auto_choice = vkconv::AutoChoice::Heuristic;
    const auto stats = vkt::check_forward(*context, p, Algorithm::Auto, 5, heuristic);
    CHECK(stats.algorithm == vkconv::choose_forward_algorithm(*context, p, heuristic));
    const auto measured = vkt::check_forward(*context, p, Algorithm::Auto, 6);
    CHECK(measured.algorithm != Algorithm::Auto);
    // Half the untiled-limit workspace: smaller bands, every byte within the limit.
    vkconv::ForwardOptions limited;
    limited.workspace_limit = vkconv::forward_workspace_bytes(*context, p, Algorithm::Im2col) / 2;
    const auto small = vkt::check_forward(*context, p, Algorithm::Im2col, 7, limited);
    CHECK(small.workspace_bytes <= limited.workspace_limit);
    CHECK(small.chunks > stats.chunks);
}

TEST_CASE("tiled backward_bias sizes its partial sums for the narrower last run of channels", "[tiled][gpu]") {
    // 63 channels: the last run of channels is narrower and takes more pieces than the full one.
    auto options = vkt::test_options();
    options.max_storage_buffer_range = 3u << 20;
    auto context = vkt::fresh_context(options);
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
    vkconv::ForwardOptions capped;
    capped.max_binding_bytes = 1024;  // one image of dy (1296 bytes) is beyond it
    const auto x = vkt::random_values(p.input_elements(), 1), dy = vkt::random_values(p.output_elements(), 2);
    auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
    auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
    vkconv::Tensor tdw(*context, p.filter_shape()), tdb(*context, p.bias_shape());
    vkconv::ForwardOptions heuristic = capped;
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
    auto options = vkt::test_options();
    options.max_storage_buffer_range = 4096;
    auto context = vkt::fresh_context(options);
    if (!context) return;
    ConvProblem p;
    p.N = 1, p.C = 3, p.H = 38, p.W = 13, p.K = 3, p.R = 4, p.S = 4, p.pad_h = 2, p.stride_h = 2;
    p.dilation_h = 3, p.dilation_w = 2, p.has_bias = true;
    vkconv::ForwardOptions limited;
    limited.workspace_limit = 4099;
    const auto x = vkt::random_values(p.input_elements(), 1), w = vkt::random_values(p.filter_elements(), 2);
    const auto dy = vkt::random_values(p.output_elements(), 3);
    auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
    auto tw = vkconv::Tensor::from_host(*context, p.filter_shape(), w);
    auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
    auto tdx = vkconv::Tensor::from_host(*context, p.input_shape(), vkt::poison(p.input_elements()));
    auto tdw = vkconv::Tensor::from_host(*context, p.filter_shape(), vkt::poison(p.filter_elements()));
    auto tdb = vkconv::Tensor::from_host(*context, p.bias_shape(), vkt::poison(p.K));
    const uint64_t live = context->pool_stats().in_use;
    const auto step = vkconv::layer_backward(*context, p, tx, tw, tdy, tdx, tdw, &tdb, Algorithm::Direct, limited);
    CHECK(step.step.workspace_bytes <= limited.workspace_limit);
    CHECK(step.step.workspace_bytes == vkconv::layer_backward_workspace_bytes(*context, p, Algorithm::Direct, limited));
    CHECK(step.step.peak_bytes == live + step.step.workspace_bytes);
    vkt::check_close(tdx.download(), vkconv::reference::backward_data(p, dy, w),
                     vkconv::reference::backward_data(p, vkt::absolute(dy), vkt::absolute(w)),
                     p.filters_per_group() * p.R * p.S, "dx");
    vkt::check_close(tdw.download(), vkconv::reference::backward_filter(p, x, dy),
                     vkconv::reference::backward_filter(p, vkt::absolute(x), vkt::absolute(dy)), p.N * p.P() * p.Q(),
                     "dw");
    vkt::check_close(tdb.download(), vkconv::reference::backward_bias(p, dy),
                     vkconv::reference::backward_bias(p, vkt::absolute(dy)), p.N * p.P() * p.Q(), "db");
}
