// conv_transpose: ONNX ConvTranspose's output sizes and pads, every backward-data algorithm against a CPU
// scatter written here from ONNX's definition (independent of the convolution the library maps it to), the
// bias, outputs past the full result, workspace and peak, recordings, and every refusal.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "conv_cases.hpp"
#include "gpu.hpp"
#include "test_util.hpp"
#include "vkconv/vkconv.hpp"

using vkconv::Algorithm;
using vkconv::AutoPad;
using vkconv::ConvTransposeProblem;
using vkconv::Layout;

namespace {

// Index of (n, c, h, w) in a tensor of extents (C, H, W) in `layout`.
int64_t at(Layout layout, int64_t n, int64_t c, int64_t h, int64_t w, int64_t C, int64_t H, int64_t W) {
    return layout == Layout::NCHW ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c;
}

// ONNX's definition, as a scatter: input pixel (ih, iw) of channel c adds x * w[c, k, r, s] to output pixel
// (ih*stride - pad_top + r*dilation, iw*stride - pad_left + s*dilation) of channel g*K/G + k; then the bias.
// `absolute` sums |terms| instead (the magnitudes check_close bounds the error by).
std::vector<double> scatter(const ConvTransposeProblem& p, const std::vector<float>& x, const std::vector<float>& w,
                            const std::vector<float>& b, bool absolute) {
    const int64_t P = p.P(), Q = p.Q(), Cg = p.C / p.groups, Kg = p.K / p.groups;
    const auto pads = p.resolved_pads();
    std::vector<double> y(size_t(p.N * p.K * P * Q), 0.0);
    auto v = [&](float f) { return absolute ? std::fabs(double(f)) : double(f); };
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t c = 0; c < p.C; ++c)
            for (int64_t ih = 0; ih < p.H; ++ih)
                for (int64_t iw = 0; iw < p.W; ++iw) {
                    const double xv = v(x[size_t(at(p.layout, n, c, ih, iw, p.C, p.H, p.W))]);
                    const int64_t g = c / Cg;
                    for (int64_t k = 0; k < Kg; ++k)
                        for (int64_t r = 0; r < p.R; ++r)
                            for (int64_t s = 0; s < p.S; ++s) {
                                const int64_t oh = ih * p.stride_h - pads[0] + r * p.dilation_h;
                                const int64_t ow = iw * p.stride_w - pads[2] + s * p.dilation_w;
                                if (oh < 0 || oh >= P || ow < 0 || ow >= Q) continue;
                                // The filter is C x K/G x R x S (NCHW) or C x R x S x K/G (NHWC).
                                const int64_t wi = p.layout == Layout::NCHW ? ((c * Kg + k) * p.R + r) * p.S + s
                                                                            : ((c * p.R + r) * p.S + s) * Kg + k;
                                y[size_t(at(p.layout, n, g * Kg + k, oh, ow, p.K, P, Q))] += xv * v(w[size_t(wi)]);
                            }
                }
    if (p.has_bias)
        for (int64_t n = 0; n < p.N; ++n)
            for (int64_t k = 0; k < p.K; ++k)
                for (int64_t oh = 0; oh < P; ++oh)
                    for (int64_t ow = 0; ow < Q; ++ow) y[size_t(at(p.layout, n, k, oh, ow, p.K, P, Q))] += v(b[size_t(k)]);
    return y;
}

struct Case {
    std::string name;
    ConvTransposeProblem p;
    int64_t P, Q;  // the output size ONNX gives
};

ConvTransposeProblem base(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S) {
    ConvTransposeProblem p;
    p.N = N, p.C = C, p.H = H, p.W = W, p.K = K, p.R = R, p.S = S;
    return p;
}

std::vector<Case> cases() {
    std::vector<Case> out;
    auto plain = base(2, 3, 4, 5, 4, 3, 3);
    out.push_back({"stride 1, no pads", plain, 6, 7});
    auto strided = base(1, 4, 5, 4, 3, 3, 3);
    strided.stride_h = strided.stride_w = 2, strided.pad_top = strided.pad_bottom = strided.pad_left =
        strided.pad_right = 1;
    strided.output_padding_h = strided.output_padding_w = 1, strided.has_bias = true;
    out.push_back({"stride 2, pads 1, output padding 1, bias", strided, 10, 8});  // 2*4+1+3-2, 2*3+1+3-2
    // ONNX's test_convtranspose_output_shape: strides 3,2 and output_shape 10,8 (one row past the full 9).
    auto shaped = base(1, 1, 3, 3, 2, 3, 3);
    shaped.stride_h = 3, shaped.stride_w = 2, shaped.output_size = std::array<int64_t, 2>{10, 8};
    shaped.has_bias = true;
    out.push_back({"output_size past the full result, bias", shaped, 10, 8});
    // ONNX's test_convtranspose_autopad_same: SAME_UPPER at stride 2 crops the odd row at the end.
    auto same = base(1, 1, 3, 3, 2, 3, 3);
    same.stride_h = same.stride_w = 2, same.auto_pad = AutoPad::SameUpper;
    out.push_back({"auto_pad same-upper stride 2", same, 6, 6});
    auto lower = same;
    lower.auto_pad = AutoPad::SameLower;
    out.push_back({"auto_pad same-lower stride 2", lower, 6, 6});
    auto grouped = base(2, 4, 5, 6, 6, 3, 2);
    grouped.groups = 2, grouped.dilation_h = 2, grouped.stride_w = 2;
    grouped.pad_top = 0, grouped.pad_bottom = 1, grouped.pad_left = 2, grouped.pad_right = 0, grouped.has_bias = true;
    out.push_back({"groups 2, dilation 2,1, stride 1,2, pads 0,1,2,0", grouped, 8, 10});  // 4+5-1, 10+2-2
    // Past the full result at both ends (ONNX's floor division puts the odd row before it): 2 rows before
    // and 1 after, 1 column before; they get the bias alone.
    auto beyond = base(1, 2, 3, 3, 4, 3, 3);
    beyond.stride_h = beyond.stride_w = 2, beyond.output_size = std::array<int64_t, 2>{11, 9}, beyond.has_bias = true;
    out.push_back({"output_size past the full result at both ends, bias", beyond, 11, 9});
    auto depthwise = base(1, 5, 4, 4, 5, 3, 3);
    depthwise.groups = 5, depthwise.stride_h = depthwise.stride_w = 2, depthwise.pad_top = depthwise.pad_left = 1;
    depthwise.has_bias = true;
    out.push_back({"depthwise stride 2, pads 1,0,1,0", depthwise, 8, 8});  // 6+3-1
    // Crops beyond the dilated kernel (torch and ONNX accept them): whole input rows and columns whose
    // contributions all fall in the cropped part.
    auto cropped = base(1, 2, 5, 4, 3, 3, 3);
    cropped.stride_h = cropped.stride_w = 2, cropped.has_bias = true;
    cropped.pad_top = 4, cropped.pad_bottom = 0, cropped.pad_left = 1, cropped.pad_right = 5;
    out.push_back({"crops 4,0,1,5 beyond a 3x3 at stride 2, bias", cropped, 7, 3});  // 8+3-4, 6+3-6
    auto winograd = base(2, 5, 6, 7, 6, 3, 3);  // 3x3, stride 1: Winograd's backward-data runs it
    winograd.pad_top = 1, winograd.pad_bottom = 0, winograd.pad_left = 2, winograd.pad_right = 1;
    winograd.has_bias = true;
    out.push_back({"3x3 stride 1, pads 1,0,2,1, bias", winograd, 7, 6});  // 6+2-1, 7+2-3
    auto one_row = base(1, 2, 4, 4, 2, 3, 3);
    one_row.stride_h = one_row.stride_w = 2, one_row.output_size = std::array<int64_t, 2>{1, 9};
    out.push_back({"output_size of one row: crops 4 and 4 of a 3-row kernel", one_row, 1, 9});
    return out;
}

}  // namespace

TEST_CASE("conv_transpose: output sizes and pads follow ONNX ConvTranspose", "[transpose]") {
    for (const auto& c : cases()) {
        INFO(c.name << ": " << c.p.str());
        REQUIRE_NOTHROW(c.p.validate());
        CHECK(c.p.P() == c.P);
        CHECK(c.p.Q() == c.Q);
        const auto q = c.p.convolution();
        // Its convolution maps the output (or the part of it the result reaches) back to the input.
        CHECK(q.P() == c.p.H);
        CHECK(q.Q() == c.p.W);
        if (!c.p.output_beyond_result()) CHECK(q.input_shape() == c.p.output_shape());
        CHECK(q.filter_shape() == c.p.filter_shape());
    }
    ConvTransposeProblem same = base(1, 1, 3, 3, 2, 3, 3);
    same.stride_h = same.stride_w = 2, same.auto_pad = AutoPad::SameUpper;
    CHECK(same.resolved_pads() == std::array<int64_t, 4>{0, 1, 0, 1});  // full 7, output 6: the crop at the end
    same.auto_pad = AutoPad::SameLower;
    CHECK(same.resolved_pads() == std::array<int64_t, 4>{1, 0, 1, 0});
    ConvTransposeProblem shaped = base(1, 1, 3, 3, 2, 3, 3);
    shaped.stride_h = 3, shaped.stride_w = 2, shaped.output_size = std::array<int64_t, 2>{10, 8};
    CHECK(shaped.resolved_pads() == std::array<int64_t, 4>{0, -1, 0, -1});  // ONNX: floor division
    CHECK_FALSE(shaped.output_beyond_result());  // one row past: within the stride, the convolution covers it
    ConvTransposeProblem beyond = base(1, 2, 3, 3, 4, 3, 3);
    beyond.stride_h = beyond.stride_w = 2, beyond.output_size = std::array<int64_t, 2>{11, 9};
    CHECK(beyond.resolved_pads() == std::array<int64_t, 4>{-2, -2, -1, -1});
    CHECK(beyond.output_beyond_result());
    CHECK(beyond.convolution_origin() == std::array<int64_t, 2>{2, 1});
    CHECK(beyond.convolution().H == 8);  // rows 2..9 of 11: the last one gets the bias alone
    CHECK(beyond.convolution().W == 8);
}

TEST_CASE("conv_transpose: every backward-data algorithm matches ONNX's definition in both layouts",
          "[transpose][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 4100;
    for (const auto& c : cases()) {
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            ConvTransposeProblem p = c.p;
            p.layout = layout;
            const auto xs = vkt::random_values(size_t(vkconv::shape_elements(p.input_shape())), seed++);
            const auto ws = vkt::random_values(size_t(vkconv::shape_elements(p.filter_shape())), seed++);
            const auto bs = vkt::random_values(size_t(p.K), seed++);
            const auto expected = scatter(p, xs, ws, bs, false);
            const auto magnitude = scatter(p, vkt::absolute(xs), vkt::absolute(ws), vkt::absolute(bs), true);
            auto x = vkconv::Tensor::from_host(*context, p.input_shape(), xs);
            auto w = vkconv::Tensor::from_host(*context, p.filter_shape(), ws);
            // Only the operands are live during a pass: its peak is then exactly them plus the workspace.
            vkconv::Tensor b;
            if (p.has_bias) b = vkconv::Tensor::from_host(*context, p.bias_shape(), bs);
            for (Algorithm algorithm : vkt::algorithms_for(p.convolution())) {
                INFO(c.name << ": " << p.str() << " " << vkconv::to_string(algorithm));
                auto y = vkconv::Tensor::from_host(*context, p.output_shape(), vkt::poison(p.N * p.K * p.P() * p.Q()));
                const auto stats =
                    vkconv::conv_transpose(*context, p, x, w, p.has_bias ? &b : nullptr, y, algorithm);
                CHECK(stats.algorithm == algorithm);
                CHECK(stats.workspace_bytes == vkconv::conv_transpose_workspace_bytes(*context, p, algorithm));
                CHECK(stats.peak_bytes == stats.operand_bytes + stats.workspace_bytes);
                const auto result = y.download();
                REQUIRE(vkt::all_written(result));
                vkt::check_close(result, expected, magnitude, p.C / p.groups * p.R * p.S + 1,
                                 "conv_transpose " + c.name);
            }
        }
    }
}

// 16-bit tensors: every algorithm on the cases, one (type, layout) per case in turn, within the stated bound
// (docs/algorithms.md, "Element types": the fp32 accumulation's E over Cg·R·S + 1 terms, the bias included,
// then one rounding to the type) against the scatter on the same 16-bit values, widened. A bias added after
// the output's rounding (a second rounding) fails it on bf16's 8 bits; reruns give the same bits.
TEST_CASE("conv_transpose: every algorithm runs f16 and bf16 tensors, rounding each value once",
          "[transpose][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 4300;
    size_t turn = 0;
    for (const auto& c : cases()) {
        ConvTransposeProblem p = c.p;
        p.data_type = turn % 2 ? vkconv::DataType::BF16 : vkconv::DataType::F16;
        p.layout = turn / 2 % 2 ? Layout::NHWC : Layout::NCHW;
        ++turn;
        const vkconv::DataType type = p.data_type;
        auto x = vkconv::Tensor::from_host(
            *context, p.input_shape(), vkt::random_values(size_t(vkconv::shape_elements(p.input_shape())), seed++), type);
        auto w = vkconv::Tensor::from_host(
            *context, p.filter_shape(), vkt::random_values(size_t(vkconv::shape_elements(p.filter_shape())), seed++),
            type);
        // (A bias tensor only where the problem has one: the peak counts every live tensor.)
        vkconv::Tensor b;
        if (p.has_bias)
            b = vkconv::Tensor::from_host(*context, p.bias_shape(), vkt::random_values(size_t(p.K), seed++), type);
        const auto xs = x.download(), ws = w.download();  // the values the passes read
        const auto bs = p.has_bias ? b.download() : std::vector<float>(size_t(p.K));
        const auto expected = scatter(p, xs, ws, bs, false);
        const auto magnitude = scatter(p, vkt::absolute(xs), vkt::absolute(ws), vkt::absolute(bs), true);
        const double u = std::ldexp(1.0, -24), ut = std::ldexp(1.0, type == vkconv::DataType::F16 ? -11 : -8);
        const double eta = type == vkconv::DataType::F16 ? std::ldexp(1.0, -25) : 0.0;
        const int64_t n = p.C / p.groups * p.R * p.S + 1;
        for (Algorithm algorithm : vkconv::all_algorithms()) {
            if (!vkconv::algorithm_applies(algorithm, p.convolution(), vkconv::Pass::BackwardData)) continue;
            INFO(c.name << ": " << p.str() << " " << vkconv::to_string(algorithm));
            const int64_t count = p.N * p.K * p.P() * p.Q();
            auto y = vkconv::Tensor::from_host(*context, p.output_shape(), vkt::poison(count), type);
            const auto stats = vkconv::conv_transpose(*context, p, x, w, p.has_bias ? &b : nullptr, y, algorithm);
            CHECK(stats.workspace_bytes == vkconv::conv_transpose_workspace_bytes(*context, p, algorithm));
            CHECK(stats.peak_bytes == stats.operand_bytes + stats.workspace_bytes);
            const auto result = y.download();
            size_t bad = result.size();
            for (size_t i = 0; i < result.size(); ++i) {
                const double bound = (1 + ut) * double(n + 2) * u * magnitude[i] + ut * std::fabs(expected[i]) + eta;
                if (!(std::fabs(double(result[i]) - expected[i]) <= bound)) bad = std::min(bad, i);
            }
            if (bad != result.size())
                FAIL("value " << bad << ": " << result[bad] << ", expected " << expected[bad] << " within the bound");
            vkconv::conv_transpose(*context, p, x, w, p.has_bias ? &b : nullptr, y, algorithm);
            CHECK(y.download() == result);
        }
    }
}

// A 16-bit transposed problem's operands with a bias (random, as its tensors hold them), and every value of an
// output checked against the stated bound: the fp32 accumulation's E over Cg·R·S + 1 terms, the bias included,
// then one rounding to the type.
namespace {
struct BiasedOperands {
    ConvTransposeProblem p;
    vkconv::Tensor x, w, b;
    std::vector<double> expected, magnitude;

    BiasedOperands(vkconv::Context& context, const ConvTransposeProblem& problem, uint32_t& seed) : p(problem) {
        const vkconv::DataType type = p.data_type;
        x = vkconv::Tensor::from_host(
            context, p.input_shape(), vkt::random_values(size_t(vkconv::shape_elements(p.input_shape())), seed++), type);
        w = vkconv::Tensor::from_host(
            context, p.filter_shape(), vkt::random_values(size_t(vkconv::shape_elements(p.filter_shape())), seed++),
            type);
        b = vkconv::Tensor::from_host(context, p.bias_shape(), vkt::random_values(size_t(p.K), seed++), type);
        const auto xs = x.download(), ws = w.download(), bs = b.download();
        expected = scatter(p, xs, ws, bs, false);
        magnitude = scatter(p, vkt::absolute(xs), vkt::absolute(ws), vkt::absolute(bs), true);
    }
    void check(const std::vector<float>& result) const {
        const double u = std::ldexp(1.0, -24), ut = std::ldexp(1.0, p.data_type == vkconv::DataType::F16 ? -11 : -8);
        const double eta = p.data_type == vkconv::DataType::F16 ? std::ldexp(1.0, -25) : 0.0;
        const int64_t n = p.C / p.groups * p.R * p.S + 1;
        REQUIRE(result.size() == expected.size());
        for (size_t i = 0; i < result.size(); ++i)
            CHECK(std::fabs(double(result[i]) - expected[i]) <=
                  (1 + ut) * double(n + 2) * u * magnitude[i] + ut * std::fabs(expected[i]) + eta);
    }
};
}  // namespace

// ... and in bands of rows (bindings too small for one image's lowered matrix), the bias placed in dx first
// and each value rounded once after the last band.
TEST_CASE("conv_transpose: 16-bit tensors in bands of rows, the bias rounded in once", "[transpose][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    ConvTransposeProblem p = base(2, 5, 9, 8, 6, 3, 3);
    p.stride_h = p.stride_w = 2, p.pad_top = p.pad_left = 1, p.has_bias = true;
    uint32_t seed = 4500;
    for (vkconv::DataType type : {vkconv::DataType::F16, vkconv::DataType::BF16}) {
        p.data_type = type;
        const BiasedOperands ops(*context, p, seed);
        // One image of the convolution's dcol: 9 x 8 positions x 6 x 9 taps x 4 bytes = 15,552; bindings of
        // 8 KiB, which hold the fp32 copy of one output image (6 x 18 x 16 x 4 = 6,912 bytes).
        const vkconv::PassOptions options{.max_binding_bytes = 8192};
        for (Algorithm algorithm : {Algorithm::Im2col, Algorithm::Mec}) {
            INFO(p.str() << " " << vkconv::to_string(algorithm));
            auto y = vkconv::Tensor::from_host(*context, p.output_shape(), vkt::poison(p.N * p.K * p.P() * p.Q()), type);
            const auto stats = vkconv::conv_transpose(*context, p, ops.x, ops.w, &ops.b, y, algorithm, options);
            CHECK(stats.chunks > uint32_t(p.N));
            CHECK(stats.workspace_bytes == vkconv::conv_transpose_workspace_bytes(*context, p, algorithm, options));
            ops.check(y.download());
        }
    }
}

// ... and over 16,650 terms, past one dispatch's loop cap (implicit-gemm's and direct's): each image's (direct:
// the whole output's) sums add up in an fp32 copy, the bias (placed in the output first) added as the copy is
// rounded into it, once.
TEST_CASE("conv_transpose: 16-bit tensors whose sums run in pieces, the bias rounded in once",
          "[transpose][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    ConvTransposeProblem p = base(3, 1850, 4, 3, 2, 3, 3);
    p.has_bias = true;
    uint32_t seed = 4600;
    for (vkconv::DataType type : {vkconv::DataType::F16, vkconv::DataType::BF16}) {
        p.data_type = type;
        p.layout = type == vkconv::DataType::F16 ? Layout::NCHW : Layout::NHWC;
        const BiasedOperands ops(*context, p, seed);
        const int64_t count = p.N * p.K * p.P() * p.Q();
        const vkconv::PassOptions one_image{
            .workspace_limit = context->pool_stats().rounded(uint64_t(count / p.N) * 4)};
        for (Algorithm algorithm : {Algorithm::ImplicitGemm, Algorithm::Direct}) {
            INFO(p.str() << " " << vkconv::to_string(algorithm));
            const bool direct = algorithm == Algorithm::Direct;  // (its copy holds the whole output)
            const vkconv::PassOptions options = direct ? vkconv::PassOptions{} : one_image;
            auto y = vkconv::Tensor::from_host(*context, p.output_shape(), vkt::poison(count), type);
            const auto stats = vkconv::conv_transpose(*context, p, ops.x, ops.w, &ops.b, y, algorithm, options);
            CHECK(stats.chunks == (direct ? 1u : uint32_t(p.N)));
            CHECK(stats.workspace_bytes == vkconv::conv_transpose_workspace_bytes(*context, p, algorithm, options));
            CHECK(stats.workspace_bytes >= context->pool_stats().rounded(uint64_t(direct ? count : count / p.N) * 4));
            ops.check(y.download());
        }
    }
}

TEST_CASE("conv_transpose: recorded, it runs at submit with the blocking call's result", "[transpose][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const ConvTransposeProblem p = cases()[1].p;
    const auto xs = vkt::random_values(size_t(vkconv::shape_elements(p.input_shape())), 7);
    const auto ws = vkt::random_values(size_t(vkconv::shape_elements(p.filter_shape())), 8);
    const auto bs = vkt::random_values(size_t(p.K), 9);
    auto x = vkconv::Tensor::from_host(*context, p.input_shape(), xs);
    auto w = vkconv::Tensor::from_host(*context, p.filter_shape(), ws);
    auto b = vkconv::Tensor::from_host(*context, p.bias_shape(), bs);
    auto blocking = vkconv::Tensor::from_host(*context, p.output_shape(), vkt::poison(p.N * p.K * p.P() * p.Q()));
    vkconv::conv_transpose(*context, p, x, w, &b, blocking, Algorithm::Im2col);
    auto recorded = vkconv::Tensor::from_host(*context, p.output_shape(), vkt::poison(p.N * p.K * p.P() * p.Q()));
    vkconv::Recording recording(*context);
    vkconv::conv_transpose(recording, p, x, w, &b, recorded, Algorithm::Im2col);
    CHECK_FALSE(vkt::all_written(recorded.download()));  // nothing ran before submit
    recording.submit().wait();
    CHECK(recorded.download() == blocking.download());
}

TEST_CASE("conv_transpose: bad problems and operands are refused, naming the problem, writing nothing",
          "[transpose][gpu]") {
    auto message = [](auto&& change) {
        ConvTransposeProblem p = base(1, 2, 4, 4, 2, 3, 3);
        p.stride_h = p.stride_w = 2;
        change(p);
        return vkt::thrown_error([&] { p.validate(); });
    };
    struct Bad {
        const char* name;
        std::function<void(ConvTransposeProblem&)> change;
        vkconv::ErrorCategory category;
        std::string expected;
    };
    const std::vector<Bad> bad = {
        {"negative pad", [](auto& p) { p.pad_left = -1; }, vkconv::ErrorCategory::InvalidArgument, "pad_left (=-1)"},
        {"output padding not below the stride", [](auto& p) { p.output_padding_w = 2; },
         vkconv::ErrorCategory::InvalidArgument, "output_padding_w (=2) must be less than the stride or the dilation"},
        {"auto_pad with pads", [](auto& p) { p.auto_pad = AutoPad::SameUpper, p.pad_top = 1; },
         vkconv::ErrorCategory::InvalidArgument, "auto_pad same-upper and explicit pads cannot be combined"},
        {"output_size with pads", [](auto& p) { p.output_size = std::array<int64_t, 2>{9, 9}, p.pad_top = 1; },
         vkconv::ErrorCategory::InvalidArgument, "output_size and explicit pads cannot be combined"},
        {"C not divisible by groups", [](auto& p) { p.groups = 3; }, vkconv::ErrorCategory::InvalidArgument,
         "C (=2) is not divisible by groups (=3)"},
        {"zero stride", [](auto& p) { p.stride_h = 0; }, vkconv::ErrorCategory::InvalidArgument, "stride_h (=0)"},
    };
    for (const auto& b : bad) {
        INFO(b.name);
        const auto e = message(b.change);
        CHECK(e.category() == b.category);
        CHECK_THAT(e.what(), Catch::Contains(b.expected));
    }

    VKT_REQUIRE_CONTEXT(context);
    ConvTransposeProblem p = base(1, 2, 4, 4, 2, 3, 3);
    p.has_bias = true;
    auto x = vkconv::Tensor::from_host(*context, p.input_shape(), vkt::random_values(32, 1));
    auto w = vkconv::Tensor::from_host(*context, p.filter_shape(), vkt::random_values(36, 2));
    auto b = vkconv::Tensor::from_host(*context, p.bias_shape(), vkt::random_values(2, 3));
    auto y = vkconv::Tensor::from_host(*context, p.output_shape(), vkt::poison(72));
    auto wrong = vkconv::Tensor(*context, {1, 2, 5, 5});
    const auto missing_bias = vkt::thrown_error([&] { vkconv::conv_transpose(*context, p, x, w, nullptr, y); });
    CHECK_THAT(missing_bias.what(), Catch::Contains("no bias tensor"));
    const auto wrong_output = vkt::thrown_error([&] { vkconv::conv_transpose(*context, p, x, w, &b, wrong); });
    CHECK(wrong_output.category() == vkconv::ErrorCategory::InvalidArgument);
    CHECK_THAT(wrong_output.what(), Catch::Contains("output") && Catch::Contains("[1, 2, 6, 6]"));
    const auto aliased = vkt::thrown_error([&] { vkconv::conv_transpose(*context, p, x, w, &b, x); });
    CHECK(aliased.category() == vkconv::ErrorCategory::InvalidArgument);
    CHECK_FALSE(vkt::all_written(y.download()));  // nothing was written by the refused calls
}
