// CPU reference convolution: hand-worked cases for every pass and feature, layout equivalence, and the
// adjoint identity that ties the backward passes to forward.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "conv_cases.hpp"
#include "test_util.hpp"
#include "vkconv/error.hpp"
#include "vkconv/problem.hpp"
#include "vkconv/reference.hpp"

using vkconv::ConvProblem;
using vkconv::Layout;
namespace ref = vkconv::reference;
using vkt::invalid_argument_message;

namespace {

using Doubles = std::vector<double>;
using Floats = std::vector<float>;

const Floats one_to_nine = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // 3x3 image, row-major

// [d0][d1][d2][d3] -> [d0][d2][d3][d1]: NCHW -> NHWC for activations and OIHW -> OHWI for filters.
template <class T>
std::vector<T> channels_last(const std::vector<T>& x, const vkconv::Shape& dims) {
    const int64_t A = dims[0], B = dims[1], H = dims[2], W = dims[3];
    std::vector<T> out(x.size());
    for (int64_t a = 0; a < A; ++a)
        for (int64_t b = 0; b < B; ++b)
            for (int64_t h = 0; h < H; ++h)
                for (int64_t w = 0; w < W; ++w)
                    out[static_cast<size_t>(((a * H + h) * W + w) * B + b)] =
                        x[static_cast<size_t>(((a * B + b) * H + h) * W + w)];
    return out;
}

Floats random_floats(int64_t count, std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    Floats v(static_cast<size_t>(count));
    for (float& x : v) x = dist(rng);
    return v;
}

double dot(const Doubles& a, const Floats& b) {
    REQUIRE(a.size() == b.size());
    double sum = 0;
    for (size_t i = 0; i < a.size(); ++i) sum += a[i] * static_cast<double>(b[i]);
    return sum;
}

double max_abs_diff(const Doubles& a, const Doubles& b) {
    REQUIRE(a.size() == b.size());
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

// Odd shapes on purpose: strides that leave the last rows or columns unread (so backward data must leave
// zeros there), padding wider than the dilated kernel's reach into the image, and groups of several sizes.
std::vector<std::pair<std::string, ConvProblem>> odd_problems() {
    std::vector<std::pair<std::string, ConvProblem>> out;
    auto add = [&](const char* name, const ConvProblem& p) {
        p.validate();
        out.emplace_back(name, p);
    };
    add("3x2 kernel, stride 2x3, dilated width", vkt::problem()
                                                     .batch(2)
                                                     .channels(3)
                                                     .image(7, 6)
                                                     .filters(4)
                                                     .kernel(3, 2)
                                                     .pad(1, 0)
                                                     .stride(2, 3)
                                                     .dilation(1, 2)
                                                     .groups(1));
    add("groups 2, stride 3x2, dilation 2x1", vkt::problem()
                                                  .batch(1)
                                                  .channels(4)
                                                  .image(9, 8)
                                                  .filters(6)
                                                  .kernel(3, 3)
                                                  .pad(2, 1)
                                                  .stride(3, 2)
                                                  .dilation(2, 1)
                                                  .groups(2));
    add("depthwise 3x3",
        vkt::problem().batch(2).channels(6).image(5, 7).filters(6).kernel(3, 3).pad(1).stride(1).dilation(1).groups(6));
    add("depthwise multiplier 2, stride 2",
        vkt::problem().batch(1).channels(3).image(6, 5).filters(6).kernel(3, 3).pad(1).stride(2).dilation(1).groups(3));
    add("1x1 stride 2, last row unread",
        vkt::problem().batch(1).channels(2).image(6, 5).filters(3).kernel(1, 1).pad(0).stride(2).dilation(1).groups(1));
    add("4x4 stride 3, last row unread",
        vkt::problem().batch(2).channels(2).image(11, 10).filters(3).kernel(4, 4).pad(0).stride(3).dilation(1).groups(
            1));
    add("groups 3, dilation 3x2, pad 3, stride 2",
        vkt::problem().batch(1).channels(6).image(10, 9).filters(9).kernel(3, 2).pad(3).stride(2).dilation(3, 2).groups(
            3));
    add("kernel larger than image",
        vkt::problem().batch(1).channels(2).image(3, 2).filters(2).kernel(4, 3).pad(2, 1).stride(1).dilation(1).groups(
            1));
    return out;
}

}  // namespace

TEST_CASE("forward on hand-worked cases", "[reference]") {
    SECTION("2x2 all-ones kernel on 1..9") {
        const ConvProblem p = vkt::problem().batch(1).channels(1).image(3, 3).filters(1).kernel(2, 2);
        // 1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9
        CHECK(ref::forward(p, one_to_nine, Floats{1, 1, 1, 1}) == Doubles{12, 16, 24, 28});
    }
    SECTION("no kernel flip: taps pair up in the same orientation") {
        const ConvProblem p = vkt::problem().batch(1).channels(1).image(3, 3).filters(1).kernel(2, 2);
        // kernel [1 2; 3 4]: 1*1+2*2+3*4+4*5 = 37, 1*2+2*3+3*5+4*6 = 47, 1*4+2*5+3*7+4*8 = 67, 1*5+2*6+3*8+4*9 = 77
        CHECK(ref::forward(p, one_to_nine, Floats{1, 2, 3, 4}) == Doubles{37, 47, 67, 77});
    }
    SECTION("padding 1") {
        const ConvProblem p = vkt::problem().batch(1).channels(1).image(3, 3).filters(1).kernel(2, 2).pad(1);
        // 4x4 output; each entry sums the image pixels under a 2x2 window of the zero-padded 5x5 image:
        //   1      1+2      2+3      3
        //   1+4    12       16       3+6
        //   4+7    24       28       6+9
        //   7      7+8      8+9      9
        CHECK(ref::forward(p, one_to_nine, Floats{1, 1, 1, 1}) ==
              Doubles{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9});
    }
    SECTION("stride 2") {
        const ConvProblem p = vkt::problem().batch(1).channels(1).image(4, 4).filters(1).kernel(2, 2).stride(2);
        const Floats x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        // disjoint windows: 1+2+5+6, 3+4+7+8, 9+10+13+14, 11+12+15+16
        CHECK(ref::forward(p, x, Floats{1, 1, 1, 1}) == Doubles{14, 22, 46, 54});
    }
    SECTION("stride 2 with padding 1") {
        const ConvProblem p = vkt::problem().batch(1).channels(1).image(3, 3).filters(1).kernel(2, 2).pad(1).stride(2);
        // every other window of the padding-1 case above: 1, 2+3, 4+7, 28
        CHECK(ref::forward(p, one_to_nine, Floats{1, 1, 1, 1}) == Doubles{1, 5, 11, 28});
    }
    SECTION("dilation 2") {
        const ConvProblem p = vkt::problem().batch(1).channels(1).image(4, 4).filters(1).kernel(2, 2).dilation(2);
        const Floats x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        // taps 2 apart: x(0,0)+x(0,2)+x(2,0)+x(2,2) = 1+3+9+11, 2+4+10+12, 5+7+13+15, 6+8+14+16
        CHECK(ref::forward(p, x, Floats{1, 1, 1, 1}) == Doubles{24, 28, 40, 44});
        // kernel [1 2; 3 4] on the corners of the 3x3 image: 1*1 + 2*3 + 3*7 + 4*9
        const ConvProblem q = vkt::problem().batch(1).channels(1).image(3, 3).filters(1).kernel(2, 2).dilation(2);
        CHECK(ref::forward(q, one_to_nine, Floats{1, 2, 3, 4}) == Doubles{64});
    }
    SECTION("groups 2, one input channel per group") {
        const ConvProblem p = vkt::problem().batch(1).channels(2).image(2, 2).filters(4).kernel(2, 2).groups(2);
        const Floats x = {1, 2, 3, 4, /* channel 1 */ 5, 6, 7, 8};
        // filters 0,1 read channel 0 only, filters 2,3 channel 1 only
        const Floats w = {1, 0, 0, 0, /**/ 0, 0, 0, 1, /**/ 1, 1, 1, 1, /**/ 1, -1, 0, 0};
        // x0(0,0) = 1; x0(1,1) = 4; 5+6+7+8 = 26; 5-6 = -1
        CHECK(ref::forward(p, x, w) == Doubles{1, 4, 26, -1});
    }
    SECTION("groups 2, two input channels per group") {
        const ConvProblem p = vkt::problem().batch(1).channels(4).image(1, 1).filters(2).kernel(1, 1).groups(2);
        // digits keep the channels apart: 1*10 + 2*100 = 210 and 3*1000 + 4*10000 = 43000
        CHECK(ref::forward(p, Floats{1, 2, 3, 4}, Floats{10, 100, 1000, 10000}) == Doubles{210, 43000});
    }
    SECTION("bias is added to every output position of its channel") {
        const ConvProblem p = vkt::problem().batch(1).channels(1).image(3, 3).filters(2).kernel(2, 2).bias();
        // filter 0 all ones, filter 1 picks the top-left tap; biases 0.5 and -1
        const Floats w = {1, 1, 1, 1, /**/ 1, 0, 0, 0};
        CHECK(ref::forward(p, one_to_nine, w, Floats{0.5f, -1}) ==
              Doubles{12.5, 16.5, 24.5, 28.5, /**/ 1 - 1, 2 - 1, 4 - 1, 5 - 1});
    }
}

TEST_CASE("backward passes on hand-worked cases", "[reference]") {
    const ConvProblem p = vkt::problem().batch(1).channels(1).image(3, 3).filters(1).kernel(2, 2);
    const Floats kernel = {1, 2, 3, 4};

    SECTION("backward_data of a single output gradient places the kernel at its window") {
        CHECK(ref::backward_data(p, Floats{1, 0, 0, 0}, kernel) == Doubles{1, 2, 0, 3, 4, 0, 0, 0, 0});
        CHECK(ref::backward_data(p, Floats{0, 0, 0, 2}, kernel) == Doubles{0, 0, 0, 0, 2, 4, 0, 6, 8});
    }
    SECTION("backward_data sums every window that covers a pixel") {
        // dy all ones: dx(h,w) = sum of the taps that reach it
        //   1      1+2       2
        //   1+3    1+2+3+4   2+4
        //   3      3+4       4
        CHECK(ref::backward_data(p, Floats{1, 1, 1, 1}, kernel) == Doubles{1, 3, 2, 4, 10, 6, 3, 7, 4});
    }
    SECTION("backward_data with stride 2 leaves the unread last row and column zero") {
        ConvProblem s = p;
        s.stride_h = s.stride_w = 2;
        REQUIRE(s.P() == 1);  // (3-1-1)/2+1
        // one window at the top-left: dx = 5 * kernel there, row 2 and column 2 never read
        CHECK(ref::backward_data(s, Floats{5}, kernel) == Doubles{5, 10, 0, 15, 20, 0, 0, 0, 0});
    }
    SECTION("backward_data with padding drops the taps that hit the padding") {
        ConvProblem s = p;
        s.pad_h = s.pad_w = 1;
        Floats dy(16, 0.0f);
        dy[0] = 1;  // window at padded (0,0): only its tap (1,1) = 4 lands on x(0,0)
        dy[5] = 1;  // window at padded (1,1) = image (0,0): the whole kernel lands on x(0..1, 0..1)
        CHECK(ref::backward_data(s, dy, kernel) == Doubles{4 + 1, 2, 0, 3, 4, 0, 0, 0, 0});
    }
    SECTION("backward_filter correlates the input with the output gradient") {
        // dy all ones: dw(r,s) = sum of x over the 2x2 block starting at (r,s) = 1+2+4+5, 2+3+5+6, ...
        CHECK(ref::backward_filter(p, one_to_nine, Floats{1, 1, 1, 1}) == Doubles{12, 16, 24, 28});
        // dy = [1 0; 0 2]: dw(r,s) = 1*x(r,s) + 2*x(r+1,s+1) = 1+2*5, 2+2*6, 4+2*8, 5+2*9
        CHECK(ref::backward_filter(p, one_to_nine, Floats{1, 0, 0, 2}) == Doubles{11, 14, 20, 23});
    }
    SECTION("backward_filter with groups only pairs each filter with its group's channels") {
        const ConvProblem g = vkt::problem().batch(1).channels(4).image(1, 1).filters(2).kernel(1, 1).groups(2);
        // dw[k][c] = x[group(k)*2 + c] * dy[k]: 1*10, 2*10, 3*100, 4*100
        CHECK(ref::backward_filter(g, Floats{1, 2, 3, 4}, Floats{10, 100}) == Doubles{10, 20, 300, 400});
        // dx[c] = sum over k of its group of w[k][c]*dy[k]: 10*1, 10*2, 100*3, 100*4
        CHECK(ref::backward_data(g, Floats{10, 100}, Floats{1, 2, 3, 4}) == Doubles{10, 20, 300, 400});
    }
    SECTION("backward_bias sums the output gradient over images and positions") {
        ConvProblem b = vkt::problem().batch(2).channels(1).image(1, 2).filters(2).kernel(1, 1).bias();
        // NCHW dy {2,2,1,2}: image 0 k0 [1 2], k1 [3 4]; image 1 k0 [5 6], k1 [7 8]
        // db = 1+2+5+6, 3+4+7+8
        CHECK(ref::backward_bias(b, Floats{1, 2, 3, 4, 5, 6, 7, 8}) == Doubles{14, 22});
        // the same gradient in NHWC order {2,1,2,2}
        b.layout = Layout::NHWC;
        CHECK(ref::backward_bias(b, Floats{1, 3, 2, 4, 5, 7, 6, 8}) == Doubles{14, 22});
    }
}

TEST_CASE("NCHW and NHWC give the same results on transposed tensors", "[reference]") {
    std::mt19937 rng(1234);
    for (const auto& [name, problem] : odd_problems()) {
        DYNAMIC_SECTION(name) {
            ConvProblem nchw = problem, nhwc = problem;
            nchw.layout = Layout::NCHW, nhwc.layout = Layout::NHWC;
            nchw.has_bias = nhwc.has_bias = true;
            const Floats x = random_floats(nchw.input_elements(), rng);
            const Floats w = random_floats(nchw.filter_elements(), rng);
            const Floats dy = random_floats(nchw.output_elements(), rng);
            const Floats bias = random_floats(nchw.K, rng);
            const vkconv::Shape xs = nchw.input_shape(), ws = nchw.filter_shape(), ys = nchw.output_shape();
            const Floats x_t = channels_last(x, xs), w_t = channels_last(w, ws), dy_t = channels_last(dy, ys);

            const double tolerance = 1e-12;
            CHECK(max_abs_diff(channels_last(ref::forward(nchw, x, w, bias), ys), ref::forward(nhwc, x_t, w_t, bias)) <
                  tolerance);
            CHECK(max_abs_diff(channels_last(ref::backward_data(nchw, dy, w), xs),
                               ref::backward_data(nhwc, dy_t, w_t)) < tolerance);
            CHECK(max_abs_diff(channels_last(ref::backward_filter(nchw, x, dy), ws),
                               ref::backward_filter(nhwc, x_t, dy_t)) < tolerance);
            CHECK(max_abs_diff(ref::backward_bias(nchw, dy), ref::backward_bias(nhwc, dy_t)) < tolerance);
        }
    }
}

// Independent of the tap enumeration: a grouped convolution is G ungrouped ones on channel slices.
TEST_CASE("groups compute independent convolutions on channel slices", "[reference]") {
    std::mt19937 rng(7);
    // Channels [begin, begin+count) of an [outer][channels][inner] array (NCHW order); generic so it slices
    // the float inputs and the double results alike.
    auto slice = [](const auto& data, int64_t outer, int64_t channels, int64_t begin, int64_t count, int64_t inner) {
        std::remove_cvref_t<decltype(data)> out;
        for (int64_t o = 0; o < outer; ++o) {
            const auto first = data.begin() + (o * channels + begin) * inner;
            out.insert(out.end(), first, first + count * inner);
        }
        return out;
    };
    for (const auto& [name, problem] : odd_problems()) {
        if (problem.groups == 1) continue;
        DYNAMIC_SECTION(name) {
            const ConvProblem& p = problem;
            const int64_t G = p.groups, Cg = p.channels_per_group(), Kg = p.filters_per_group();
            const int64_t HW = p.H * p.W, PQ = p.P() * p.Q(), RS = p.R * p.S;
            const Floats x = random_floats(p.input_elements(), rng);
            const Floats w = random_floats(p.filter_elements(), rng);
            const Floats dy = random_floats(p.output_elements(), rng);
            const Doubles y = ref::forward(p, x, w), dx = ref::backward_data(p, dy, w),
                          dw = ref::backward_filter(p, x, dy);

            ConvProblem one = p;
            one.C = Cg, one.K = Kg, one.groups = 1;
            for (int64_t g = 0; g < G; ++g) {
                const Floats xg = slice(x, p.N, p.C, g * Cg, Cg, HW);
                const Floats wg = slice(w, 1, p.K, g * Kg, Kg, Cg * RS);
                const Floats dyg = slice(dy, p.N, p.K, g * Kg, Kg, PQ);
                CHECK(max_abs_diff(ref::forward(one, xg, wg), slice(y, p.N, p.K, g * Kg, Kg, PQ)) < 1e-12);
                CHECK(max_abs_diff(ref::backward_data(one, dyg, wg), slice(dx, p.N, p.C, g * Cg, Cg, HW)) < 1e-12);
                CHECK(max_abs_diff(ref::backward_filter(one, xg, dyg), slice(dw, 1, p.K, g * Kg, Kg, Cg * RS)) < 1e-12);
            }
        }
    }
}

// forward is linear in x and in w, and backward data / backward filter are its adjoints in those arguments:
// <forward(x, w), dy> = <x, backward_data(dy, w)> = <w, backward_filter(x, dy)>. Checking this on random
// tensors tests both backward passes against forward without a second implementation of either.
TEST_CASE("backward passes are the adjoints of forward", "[reference]") {
    std::mt19937 rng(42);
    for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
        for (const auto& [name, problem] : odd_problems()) {
            DYNAMIC_SECTION(name << ", " << vkconv::to_string(layout)) {
                ConvProblem p = problem;
                p.layout = layout;
                const Floats x = random_floats(p.input_elements(), rng);
                const Floats w = random_floats(p.filter_elements(), rng);
                const Floats dy = random_floats(p.output_elements(), rng);

                const double y_dy = dot(ref::forward(p, x, w), dy);
                const double x_dx = dot(ref::backward_data(p, dy, w), x);
                const double w_dw = dot(ref::backward_filter(p, x, dy), w);
                CHECK(x_dx == Approx(y_dy).epsilon(1e-9));
                CHECK(w_dw == Approx(y_dy).epsilon(1e-9));

                // <y(bias only), dy> = <bias, backward_bias(dy)>, with x = 0 so only the bias contributes
                p.has_bias = true;
                const Floats bias = random_floats(p.K, rng);
                const Floats zeros(x.size(), 0.0f);
                CHECK(dot(ref::backward_bias(p, dy), bias) ==
                      Approx(dot(ref::forward(p, zeros, w, bias), dy)).epsilon(1e-9));
            }
        }
    }
}

TEST_CASE("wrong tensor sizes and invalid problems throw InvalidArgument", "[reference]") {
    ConvProblem p =
        vkt::problem().batch(1).channels(2).image(4, 4).filters(3).kernel(3, 3);  // input 32, filter 54, output 12
    const Floats x(32), w(54), dy(12);
    const Floats short_x(31), long_w(55), short_dy(11);

    CHECK_NOTHROW(ref::forward(p, x, w));
    CHECK(invalid_argument_message([&] { ref::forward(p, short_x, w); }) ==
          "reference::forward: input has 31 elements, expected 32");
    CHECK(invalid_argument_message([&] { ref::forward(p, x, long_w); }) ==
          "reference::forward: filter has 55 elements, expected 54");
    CHECK_THAT(invalid_argument_message([&] {
                   ref::forward(p, x, w, Floats{1, 2, 3});
               }),
               Catch::Contains("bias has 3 elements but the problem has no bias"));
    CHECK(invalid_argument_message([&] { ref::backward_data(p, short_dy, w); }) ==
          "reference::backward_data: grad_output has 11 elements, expected 12");
    CHECK(invalid_argument_message([&] { ref::backward_data(p, dy, long_w); }) ==
          "reference::backward_data: filter has 55 elements, expected 54");
    CHECK(invalid_argument_message([&] { ref::backward_filter(p, short_x, dy); }) ==
          "reference::backward_filter: input has 31 elements, expected 32");
    CHECK(invalid_argument_message([&] { ref::backward_filter(p, x, short_dy); }) ==
          "reference::backward_filter: grad_output has 11 elements, expected 12");
    CHECK(invalid_argument_message([&] { ref::backward_bias(p, short_dy); }) ==
          "reference::backward_bias: grad_output has 11 elements, expected 12");

    p.has_bias = true;
    CHECK_NOTHROW(ref::forward(p, x, w, Floats{1, 2, 3}));
    CHECK(invalid_argument_message([&] { ref::forward(p, x, w); }) ==
          "reference::forward: bias has 0 elements, expected 3");
    CHECK(invalid_argument_message([&] {
              ref::forward(p, x, w, Floats{1, 2});
          }) == "reference::forward: bias has 2 elements, expected 3");

    p.groups = 2;  // K = 3 is not divisible by 2
    CHECK_THAT(invalid_argument_message([&] {
                   ref::forward(p, x, w, Floats{1, 2, 3});
               }),
               Catch::Contains("K (=3) is not divisible by groups (=2)"));
    CHECK_THAT(invalid_argument_message([&] { ref::backward_bias(p, dy); }),
               Catch::Contains("K (=3) is not divisible by groups (=2)"));
}
