// im2col and MEC forward against the CPU reference: the named odd table, a random sweep, both MEC
// schedules, chunked runs, and the exact workspace and peak memory of a pass.
#include "context/context_impl.hpp"
#include "conv_cases.hpp"

using vkconv::Algorithm;
using vkconv::Layout;
using vkconv::PassOptions;

namespace {

struct Variant {
    const char* name;
    Algorithm algorithm;
    std::string schedule;
};
const Variant kVariants[] = {{"im2col", Algorithm::Im2col, ""},
                             {"mec A", Algorithm::Mec, "A"},
                             {"mec B", Algorithm::Mec, "B"}};

}  // namespace

TEST_CASE("im2col and mec match the reference on the named odd cases", "[lowered][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 300;
    for (const auto& variant : kVariants) {
        PassOptions options;
        options.variant = variant.schedule;
        for (const auto& named : vkt::odd_problems()) {
            for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
                auto problem = named.problem;
                problem.layout = layout;
                problem.has_bias = (seed % 2) == 1;
                INFO(variant.name << ", case '" << named.name << "'");
                const auto stats = vkt::check_forward(*context, problem, variant.algorithm, seed++, options);
                CHECK(stats.algorithm == variant.algorithm);
                if (variant.algorithm == Algorithm::Mec) CHECK(stats.variant == variant.schedule);
                CHECK(stats.workspace_bytes ==
                      vkconv::forward_workspace_bytes(*context, problem, variant.algorithm, options));
            }
        }
    }
}

TEST_CASE("im2col and mec match the reference on a seeded random sweep", "[lowered][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 7000;
    for (const auto& problem : vkt::random_problems(100, 99)) {
        const auto& variant = kVariants[seed % 3];
        PassOptions options;
        options.variant = variant.schedule;
        INFO(variant.name);
        vkt::check_forward(*context, problem, variant.algorithm, seed++, options);
    }
}

TEST_CASE("im2col and mec run in chunks of images and bands of rows when bindings are capped", "[lowered][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    vkconv::ConvProblem p;
    p.N = 5, p.C = 8, p.H = 19, p.W = 17, p.K = 12, p.R = 3, p.S = 3, p.pad_h = 1, p.pad_w = 2, p.stride_h = 2;
    p.has_bias = true;
    uint32_t seed = 40;
    for (const auto& variant : kVariants) {
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            p.layout = layout;
            // Two images' worth of everything: chunks of images.
            PassOptions options;
            options.variant = variant.schedule;
            options.max_binding_bytes = 2 * uint64_t(p.C * p.H * p.W) * 4 + 1024;
            INFO(variant.name << " " << vkconv::to_string(layout) << " image chunks");
            auto stats = vkt::check_forward(*context, p, variant.algorithm, seed++, options);
            CHECK(stats.chunks >= 3);
            // Less than one image's lowered matrix: bands of output rows.
            options.max_binding_bytes = 12000;  // above one image of x (10336 B) and y, below its lowered matrix
            INFO(variant.name << " " << vkconv::to_string(layout) << " row bands");
            stats = vkt::check_forward(*context, p, variant.algorithm, seed++, options);
            CHECK(stats.chunks > uint32_t(p.N));
            // Each binding is within the cap; MEC's OIHW filter copy is a second allocation beside the chunk.
            const uint64_t filter_copy = variant.algorithm == Algorithm::Mec && layout == Layout::NCHW
                                             ? context->pool_stats().rounded(uint64_t(p.filter_elements()) * 4)
                                             : 0;
            CHECK(stats.workspace_bytes - filter_copy <= 12000);
        }
    }
    PassOptions tiny;
    tiny.max_binding_bytes = 64;
    CHECK_THROWS_AS(vkconv::forward_workspace_bytes(*context, p, Algorithm::Mec, tiny), vkconv::Error);
}

TEST_CASE("the pool peak of a lowered forward is its operands plus the reported workspace", "[lowered][gpu]") {
    auto options = vkt::test_options();
    auto context = vkt::fresh_context(options);
    if (!context) return;
    vkconv::ConvProblem p;
    p.N = 2, p.C = 16, p.H = 23, p.W = 21, p.K = 24, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1, p.has_bias = true;
    for (const auto& variant : kVariants) {
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            p.layout = layout;
            PassOptions fo;
            fo.variant = variant.schedule;
            vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), b(*context, p.bias_shape());
            vkconv::Tensor y(*context, p.output_shape());
            const auto s = context->pool_stats();
            const uint64_t operands =
                s.rounded(x.bytes()) + s.rounded(w.bytes()) + s.rounded(b.bytes()) + s.rounded(y.bytes());
            REQUIRE(s.in_use == operands);
            const uint64_t workspace = vkconv::forward_workspace_bytes(*context, p, variant.algorithm, fo);
            const auto stats = vkconv::forward(*context, p, x, w, &b, y, variant.algorithm, fo);
            INFO(variant.name << " " << vkconv::to_string(layout));
            CHECK(stats.workspace_bytes == workspace);
            CHECK(stats.peak_bytes == operands + workspace);
            CHECK(context->pool_stats().in_use == operands);  // the workspace went back
            // The lowered matrix's size by the formulas (MEC: only the padded rows its windows read).
            const uint64_t P = p.P(), Q = p.Q();
            const uint64_t im2col = p.N * P * Q * p.R * p.S * p.C;
            const uint64_t rows_read = (P - 1) * p.stride_h + (p.R - 1) * p.dilation_h + 1;
            const uint64_t mec = p.N * Q * rows_read * p.S * p.C;
            const uint64_t filter_copy = layout == Layout::NCHW ? s.rounded(w.bytes()) : 0;
            if (variant.algorithm == Algorithm::Im2col) CHECK(workspace == s.rounded(im2col * 4));
            if (variant.algorithm == Algorithm::Mec)
                CHECK(workspace ==
                      s.rounded(std::max(mec, variant.schedule == "A" ? p.N * P * Q * p.K : 0) * 4) +
                          filter_copy);
        }
    }
}

TEST_CASE("MEC's workspace is smaller than im2col's by the formula ratio on cv1-cv12", "[lowered][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    struct Layer {
        const char* name;
        int64_t C, H, W, K, R, S, stride;
    };
    // From samples/layers.csv: unpadded, batch 1.
    const Layer layers[] = {
        {"cv1", 3, 227, 227, 96, 11, 11, 4}, {"cv2", 3, 231, 231, 96, 11, 11, 4}, {"cv3", 3, 227, 227, 64, 7, 7, 2},
        {"cv4", 64, 224, 224, 64, 7, 7, 2},  {"cv5", 96, 24, 24, 256, 5, 5, 1},   {"cv6", 256, 12, 12, 512, 3, 3, 1},
        {"cv7", 3, 224, 224, 64, 3, 3, 1},   {"cv8", 64, 112, 112, 128, 3, 3, 1}, {"cv9", 64, 56, 56, 64, 3, 3, 1},
        {"cv10", 128, 28, 28, 128, 3, 3, 1}, {"cv11", 256, 14, 14, 256, 3, 3, 1}, {"cv12", 512, 7, 7, 512, 3, 3, 1}};
    const uint64_t alignment = context->pool_stats().alignment;
    for (const auto& l : layers) {
        vkconv::ConvProblem p;
        p.C = l.C, p.H = l.H, p.W = l.W, p.K = l.K, p.R = l.R, p.S = l.S, p.stride_h = p.stride_w = l.stride;
        p.layout = Layout::NHWC;  // no filter copy: the workspace is the lowered matrix alone
        PassOptions b_only;
        b_only.variant = "B";
        const uint64_t im2col = vkconv::forward_workspace_bytes(*context, p, Algorithm::Im2col);
        const uint64_t mec = vkconv::forward_workspace_bytes(*context, p, Algorithm::Mec, b_only);
        const uint64_t rows_read = (p.P() - 1) * p.stride_h + p.R;
        INFO(l.name << ": im2col " << im2col << " bytes, mec " << mec << " bytes");
        const uint64_t im2col_floats = uint64_t(p.P() * p.Q() * p.R * p.S * p.C);
        if (im2col_floats * 4 <= context->device().max_storage_buffer_range)
            CHECK(im2col == (im2col_floats * 4 + alignment - 1) / alignment * alignment);
        else  // too large to bind at once (cv4 on lavapipe): bands of rows, each within the limit
            CHECK(im2col <= context->device().max_storage_buffer_range);
        CHECK(mec == (uint64_t(p.Q() * rows_read * p.S * p.C) * 4 + alignment - 1) / alignment * alignment);
        // The measured ratio im2col / MEC is the paper's P*R / rows read (= P*R / H_padded wherever the windows
        // read every padded row), up to the pool's rounding of each; where im2col runs in bands its workspace
        // is one band's, so only the order holds.
        if (im2col_floats * 4 <= context->device().max_storage_buffer_range)
            CHECK(double(im2col) / double(mec) ==
                  Approx(double(p.P() * p.R) / double(rows_read)).epsilon(double(alignment) / double(mec) + 1e-12));
        CHECK(mec < im2col);
    }
}
