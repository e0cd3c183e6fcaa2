// Winograd's transforms read by one of two paths (engine/conv/winograd/winograd_plan.cpp): on CPU devices
// through texel views, the filter transform w as quads for a forward pass whose channels per group are a
// multiple of 4 (WinogradPlan::filter_texels) and the output transform M (product_texels), each within
// maxTexelBufferElements; through storage buffers everywhere else. Both are checked here against the
// elementwise bound, on poisoned outputs, in every layout, type and tile.
#include <string>

#include "context/context_impl.hpp"
#include "winograd_checks.hpp"

using vkconv::ConvProblem;
using vkconv::Layout;
using vkconv::Pass;
namespace detail = vkconv::detail;
using namespace wgt;

namespace {

detail::WinogradPlan plan(vkconv::Context& context, const ConvProblem& p, Pass pass,
                          const vkconv::PassOptions& options = {}) {
    return detail::plan_winograd(detail::impl_of(context), p, pass, options).value();
}

}  // namespace

TEST_CASE("winograd's transforms read through texel views where they apply, storage buffers elsewhere",
          "[winograd][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const bool cpu = context->device().type == "CPU";
    // 8 channels, 6 filters; 2 groups of 4 channels and 5 filters (U's filters padded to 8 with zeros).
    const ConvProblem whole = vkt::problem().batch(2).channels(8).image(9, 11).filters(6).kernel(3, 3).pads(1, 0, 2, 1).bias();
    const ConvProblem grouped = vkt::problem().batch(1).channels(8).image(7, 6).filters(10).kernel(3, 3).pad(1).groups(2);
    // Each (problem, layout, type) runs one tile, the tiles in turn, so both meet every type and layout.
    uint32_t seed = 1300;
    size_t turn = 0;
    for (const ConvProblem& base : {whole, grouped}) {
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            for (vkconv::DataType type : {vkconv::DataType::F32, vkconv::DataType::F16, vkconv::DataType::BF16}) {
                ++turn;
                for (int m : {4, 2}) {
                    ConvProblem p = base;
                    p.layout = layout, p.data_type = type;
                    INFO("F(" << m << "x" << m << ") " << p.str());
                    const auto forward = plan(*context, p, Pass::Forward, with_tile({}, m));
                    const auto data = plan(*context, p, Pass::BackwardData, with_tile({}, m));
                    CHECK(forward.filter_texels == cpu);
                    CHECK(forward.product_texels == cpu);
                    CHECK_FALSE(data.filter_texels);
                    CHECK(data.product_texels == cpu);
                    if (turn % 2 != (m == 4 ? 0u : 1u)) continue;
                    check_winograd_forward(*context, p, seed += 3, {}, with_tile({}, m));
                    check_winograd_backward_data(*context, p, seed += 3, with_tile({}, m));
                }
            }
        }
    }
    // Channels per group off a multiple of 4: storage buffers (the odd tables run them).
    const ConvProblem six = vkt::problem().batch(1).channels(6).image(8, 8).filters(4).kernel(3, 3).pad(1);
    CHECK_FALSE(plan(*context, six, Pass::Forward).filter_texels);
}

TEST_CASE("winograd reads a filter or products past maxTexelBufferElements through storage buffers", "[winograd][gpu]") {
    // Imposed limits leave maxTexelBufferElements at the specification's minimum, 65,536 texels: 262,144 elements
    // of quads, fp32 or 16-bit.
    vkt::TempDir dir("vkconv winograd texels");
    vkconv::ContextOptions options = vkt::test_options();
    options.device_limits = vkt::profile_with_limits(dir, {});
    auto context = vkt::fresh_context(options);
    if (!context) return;
    REQUIRE(context->device().max_texel_buffer_elements == 65536);
    const bool cpu = context->device().type == "CPU";
    uint32_t seed = 1400;
    for (vkconv::DataType type : {vkconv::DataType::F32, vkconv::DataType::F16}) {
        for (int64_t filters : {455, 456}) {  // 64·9 = 576 elements a filter: 262,080 and 262,656 elements
            ConvProblem p = vkt::problem().batch(1).channels(64).image(5, 6).filters(filters).kernel(3, 3).pad(1);
            p.data_type = type;
            INFO(p.str());
            CHECK(plan(*context, p, Pass::Forward).filter_texels == (cpu && filters == 455));
            check_winograd_forward(*context, p, seed += 3);
        }
        // F(2×2) over 64 rows of 18 or 16 outputs, 64 filters: M of 16 · 32 · 9 tiles · 64 = 294,912 floats, past
        // 65,536 rgba32f texels, or exactly those (8 tile columns). (A 16-bit pass halves its chunks.)
        for (int64_t width : {18, 16}) {
            ConvProblem p = vkt::problem().batch(1).channels(4).image(64, width).filters(64).kernel(3, 3).pad(1);
            p.data_type = type;
            INFO(p.str());
            const auto forward = plan(*context, p, Pass::Forward, with_tile({}, 2));
            if (type == vkconv::DataType::F32) CHECK(forward.chunks == 1);
            if (type == vkconv::DataType::F32) CHECK(forward.product_texels == (cpu && width == 16));
            check_winograd_forward(*context, p, seed += 3, {}, with_tile({}, 2));
            check_winograd_backward_data(*context, p, seed += 3, with_tile({}, 2));
        }
    }
}

TEST_CASE("winograd reads a filter that is a view from its second filter on through quads, to the same bits",
          "[winograd][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
        for (vkconv::DataType type : {vkconv::DataType::F32, vkconv::DataType::F16}) {
            ConvProblem p = vkt::problem().batch(1).channels(4).image(9, 7).filters(5).kernel(3, 3).pad(1);
            p.layout = layout, p.data_type = type;
            INFO(p.str());
            // Filters 1 .. 5 of 6: the view starts 36 elements in, 9 quads (in f16 72 bytes: bound from the
            // 16-byte alignment below, the shader's quads start one in).
            vkconv::Shape carrier_shape = p.filter_shape();
            carrier_shape[0] += 1;
            const auto values = vkt::random_values(size_t(vkconv::shape_elements(carrier_shape)), 1500);
            auto carrier = vkconv::Tensor::from_host(*context, carrier_shape, values, type);
            vkconv::Tensor view = carrier.images(1, p.K);
            auto own = vkconv::Tensor::from_host(
                *context, p.filter_shape(),
                std::vector<float>(values.begin() + p.filter_elements() / p.K, values.end()), type);
            auto x = vkconv::Tensor::from_host(*context, p.input_shape(), vkt::random_values(p.input_elements(), 1501), type);
            std::vector<std::vector<float>> results;
            for (const vkconv::Tensor* w : {&own, &view}) {
                auto y = vkconv::Tensor::from_host(*context, p.output_shape(), vkt::poison(p.output_elements()), type);
                vkconv::forward(*context, p, x, *w, nullptr, y, vkconv::Algorithm::Winograd);
                results.push_back(y.download());
                CHECK(vkt::all_written(results.back()));
            }
            CHECK(results[0] == results[1]);
        }
}
