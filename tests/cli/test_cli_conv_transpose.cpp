// `vkconv conv-transpose`: ONNX ConvTranspose's result (pads, output padding, --output-shape, --auto-pad,
// groups, bias, NHWC) against the CPU reference, and bad input refused with exit 2 and nothing written.
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_support.hpp"

using namespace vkt::cli;

namespace {

// ConvTranspose's result and its bound by the CPU reference: its convolution's backward-data (the mapping
// test_transpose.cpp checks against ONNX's definition), placed where it sits in the output, plus the bias.
std::pair<std::vector<double>, std::vector<double>> expected_transpose(const vkconv::ConvTransposeProblem& p,
                                                                       const std::vector<float>& x,
                                                                       const std::vector<float>& w,
                                                                       const std::vector<float>& b) {
    const auto q = p.convolution();
    const auto dx = vkconv::reference::backward_data(q, x, w);
    const auto dx_magnitude = vkconv::reference::backward_data(q, vkt::absolute(x), vkt::absolute(w));
    std::vector<double> expected(size_t(p.N * p.K * p.P() * p.Q()), 0.0), magnitude(expected.size(), 0.0);
    const auto origin = p.convolution_origin();
    const bool nhwc = p.layout == vkconv::Layout::NHWC;
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t k = 0; k < p.K; ++k)
            for (int64_t h = 0; h < q.H; ++h)
                for (int64_t v = 0; v < q.W; ++v) {
                    const int64_t oh = h + origin[0], ow = v + origin[1];
                    const size_t from =
                        size_t(nhwc ? ((n * q.H + h) * q.W + v) * p.K + k : ((n * p.K + k) * q.H + h) * q.W + v);
                    const size_t to = size_t(nhwc ? ((n * p.P() + oh) * p.Q() + ow) * p.K + k
                                                  : ((n * p.K + k) * p.P() + oh) * p.Q() + ow);
                    expected[to] = dx[from], magnitude[to] = dx_magnitude[from];
                }
    if (p.has_bias)
        for (size_t i = 0; i < expected.size(); ++i) {
            const size_t k =
                p.layout == vkconv::Layout::NHWC ? i % size_t(p.K) : (i / size_t(p.P() * p.Q())) % size_t(p.K);
            expected[i] += b[k], magnitude[i] += std::fabs(b[k]);
        }
    return {expected, magnitude};
}

}  // namespace

TEST_CASE("cli: conv-transpose writes ONNX ConvTranspose's result", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    struct Case {
        std::string name;
        vkconv::ConvTransposeProblem problem;
        Args options;
    };
    vkconv::ConvTransposeProblem strided;
    strided.N = 2, strided.C = 4, strided.H = 5, strided.W = 4, strided.K = 6, strided.R = 3, strided.S = 3;
    strided.stride_h = 3, strided.stride_w = 2, strided.groups = 2, strided.has_bias = true;
    strided.pad_top = 1, strided.pad_bottom = 0, strided.pad_left = 2, strided.pad_right = 1;
    strided.output_padding_h = 1;
    auto shaped = strided;
    shaped.pad_top = shaped.pad_bottom = shaped.pad_left = shaped.pad_right = 0, shaped.output_padding_h = 0;
    shaped.output_size = std::array<int64_t, 2>{16, 10};  // one row and one column past the full result
    auto beyond = shaped;
    beyond.output_size = std::array<int64_t, 2>{19, 12};  // 2 rows and 1 column before the full result
    auto same = shaped;
    same.output_size.reset(), same.auto_pad = vkconv::AutoPad::SameUpper, same.layout = vkconv::Layout::NHWC;
    same.has_bias = false;
    const std::vector<Case> cases = {
        {"pads, output padding, groups, bias", strided,
         {"--stride", "3,2", "--groups", "2", "--padding", "1,0,2,1", "--output-padding", "1,0"}},
        {"--output-shape", shaped, {"--stride", "3,2", "--groups", "2", "--output-shape", "16,10", "--algo", "mec"}},
        {"--output-shape past the full result at both ends", beyond,
         {"--stride", "3,2", "--groups", "2", "--output-shape", "19,12"}},
        {"--auto-pad same-upper, nhwc", same,
         {"--stride", "3,2", "--groups", "2", "--auto-pad", "same-upper", "--layout", "nhwc", "--stats"}}};
    uint32_t seed = 610;
    for (const auto& c : cases) {
        INFO("case: " << c.name);
        const auto& p = c.problem;
        TempDir dir;
        const auto x = vkt::random_values(size_t(vkconv::shape_elements(p.input_shape())), seed++);
        const auto w = vkt::random_values(size_t(vkconv::shape_elements(p.filter_shape())), seed++);
        const auto b = vkt::random_values(size_t(p.K), seed++);
        vkconv::write_npy(dir.file("x.npy"), p.input_shape(), x);
        vkconv::write_npy(dir.file("w.npy"), p.filter_shape(), w);
        Args args{"conv-transpose", "--input", dir.file("x.npy"), "--weight", dir.file("w.npy"), "--output",
                  dir.file("y.npy")};
        if (p.has_bias) {
            vkconv::write_npy(dir.file("b.npy"), p.bias_shape(), b);
            args = with(args, {"--bias", dir.file("b.npy")});
        }
        const auto r = run_cli(dir, with(args, c.options));
        check_success(r);
        INFO(r.describe());
        REQUIRE(r.code == 0);
        if (c.name.find("--stats") != std::string::npos || c.name.find("nhwc") != std::string::npos)
            CHECK_THAT(r.out, Catch::Contains("\"pass\": \"conv_transpose\"") &&
                                  Catch::Contains("\"output_h\": " + std::to_string(p.P())));
        const auto y = vkconv::read_npy(dir.file("y.npy"));
        REQUIRE(y.shape == p.output_shape());
        // The reference: its convolution's backward-data, placed in the output, plus the bias.
        const auto [expected, magnitude] = expected_transpose(p, x, w, b);
        vkt::check_close(y.data, expected, magnitude, p.C / p.groups * p.R * p.S + 1, "cli conv-transpose " + c.name);
    }
}

TEST_CASE("cli: conv-transpose runs float16 files in f16, within the 16-bit bound", "[cli][gpu][types]") {
    VKT_REQUIRE_CONTEXT(context);
    vkconv::ConvTransposeProblem p;
    p.N = 1, p.C = 4, p.H = 5, p.W = 4, p.K = 6, p.R = 3, p.S = 3;
    p.stride_h = 2, p.stride_w = 2, p.groups = 2, p.has_bias = true;
    p.output_size = std::array<int64_t, 2>{13, 11};  // past the full result: the staged path
    TempDir dir;
    vkconv::write_npy(dir.file("x.npy"), p.input_shape(),
                      vkt::random_values(size_t(vkconv::shape_elements(p.input_shape())), 630), vkconv::DataType::F16);
    vkconv::write_npy(dir.file("w.npy"), p.filter_shape(),
                      vkt::random_values(size_t(vkconv::shape_elements(p.filter_shape())), 631), vkconv::DataType::F16);
    vkconv::write_npy(dir.file("b.npy"), p.bias_shape(), vkt::random_values(size_t(p.K), 632), vkconv::DataType::F16);
    const auto x = vkconv::read_npy(dir.file("x.npy")).data, w = vkconv::read_npy(dir.file("w.npy")).data;
    const auto b = vkconv::read_npy(dir.file("b.npy")).data;
    const auto r = run_cli(dir, {"conv-transpose", "--input", dir.file("x.npy"), "--weight", dir.file("w.npy"), "--bias",
                                 dir.file("b.npy"), "--output", dir.file("y.npy"), "--stride", "2", "--groups", "2",
                                 "--output-shape", "13,11", "--stats"});
    check_success(r);
    INFO(r.describe());
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("\"data_type\": \"f16\""));
    const auto y = vkconv::read_npy(dir.file("y.npy"));
    REQUIRE(y.shape == p.output_shape());
    CHECK(y.type == vkconv::DataType::F16);
    const auto [expected, magnitude] = expected_transpose(p, x, w, b);
    const double u = std::ldexp(1.0, -24), ut = std::ldexp(1.0, -11), eta = std::ldexp(1.0, -25);
    const int64_t n = p.C / p.groups * p.R * p.S + 1;
    for (size_t i = 0; i < expected.size(); ++i)
        CHECK(std::fabs(y.data[i] - expected[i]) <= (1 + ut) * double(n + 2) * u * magnitude[i] +
                                                        ut * std::fabs(expected[i]) + eta);
}

TEST_CASE("cli: conv-transpose refuses bad input with exit 2 and writes nothing", "[cli]") {
    TempDir dir;
    vkconv::write_npy(dir.file("x.npy"), {1, 2, 4, 4}, vkt::random_values(32, 1));
    vkconv::write_npy(dir.file("w.npy"), {2, 3, 3, 3}, vkt::random_values(54, 2));
    vkconv::write_npy(dir.file("b.npy"), {2}, vkt::random_values(2, 3));
    const std::string out = dir.file("out.npy");
    const Args base{"conv-transpose", "--input", dir.file("x.npy"), "--weight", dir.file("w.npy"), "--output", out};
    const std::vector<std::pair<Args, std::vector<std::string>>> cases = {
        {with(base, {"--padding", "1", "--auto-pad", "same-upper"}), {"--auto-pad", "--padding", "cannot be combined"}},
        {with(base, {"--padding", "1", "--output-shape", "8,8"}), {"--output-shape", "--padding", "cannot be combined"}},
        {with(base, {"--padding", "0,0,0,-1"}), {"--padding expects", "'0,0,0,-1'"}},
        {with(base, {"--stride", "2", "--output-padding", "2"}), {"output_padding_h (=2)", "less than the stride"}},
        {with(base, {"--output-shape", "8,x"}), {"--output-shape"}},
        {with(base, {"--bias", dir.file("b.npy")}), {"--bias", "[2]", "expected [3]"}},
        {with(base, {"--groups", "3"}), {"C (=2) is not divisible by groups (=3)"}},
    };
    for (const auto& [args, needles] : cases) {
        const auto r = run_cli(dir, args);
        INFO(r.describe());
        CHECK(r.code == 2);
        for (const auto& needle : needles) CHECK_THAT(r.err, Catch::Contains(needle));
        CHECK_FALSE(fs::exists(out));
    }
}
