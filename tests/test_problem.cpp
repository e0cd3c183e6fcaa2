// ConvProblem: output-size formula, shapes in both layouts, FLOP count, and that every invalid field is
// reported by name.
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "vkconv/error.hpp"
#include "vkconv/problem.hpp"

using vkconv::ConvProblem;
using vkconv::Layout;
using vkconv::Shape;
using vkt::invalid_argument_message;

TEST_CASE("P and Q follow floor((H + 2*pad - dilation*(R-1) - 1)/stride) + 1", "[problem]") {
    struct Case {
        const char* name;
        int64_t size, pad, dilation, taps, stride, expected;
    };
    const Case cases[] = {
        {"valid 3-tap", 5, 0, 1, 3, 1, 3},                  // (5-2-1)/1+1
        {"same padding", 5, 1, 1, 3, 1, 5},                 // (5+2-2-1)/1+1
        {"single pixel", 1, 0, 1, 1, 1, 1},                 // (1-0-1)/1+1
        {"stride 2, odd input", 7, 1, 1, 3, 2, 4},          // (7+2-2-1)/2+1 = 3+1
        {"stride 2, even input", 8, 1, 1, 3, 2, 4},         // (8+2-2-1)/2+1 = floor(3.5)+1
        {"stride 3, exact", 10, 0, 1, 3, 3, 3},             // (10-2-1)/3+1 = floor(7/3)+1
        {"stride 3, one row left", 11, 0, 1, 3, 3, 3},      // (11-2-1)/3+1 = floor(8/3)+1
        {"stride 3, next row", 12, 0, 1, 3, 3, 4},          // (12-2-1)/3+1 = 3+1
        {"dilation 2", 7, 0, 2, 3, 1, 3},                   // (7-4-1)/1+1
        {"dilation 3, pad 2, stride 2", 9, 2, 3, 3, 2, 4},  // (9+4-6-1)/2+1 = 3+1
        {"kernel larger than input", 4, 1, 1, 5, 1, 2},     // (4+2-4-1)/1+1
        {"stride larger than kernel", 9, 0, 1, 2, 4, 2},    // (9-1-1)/4+1 = floor(7/4)+1
        {"pad beyond the 3-tap kernel", 6, 5, 1, 3, 1, 14},  // (6+10-2-1)/1+1: torch's size
        {"pad 2 around a 1-tap kernel", 4, 2, 1, 1, 2, 4},  // (4+4-0-1)/2+1 = floor(7/2)+1
    };
    for (const Case& c : cases) {
        DYNAMIC_SECTION(c.name) {
            ConvProblem height;
            height.H = c.size, height.pad_h = c.pad, height.dilation_h = c.dilation, height.R = c.taps,
            height.stride_h = c.stride;
            REQUIRE_NOTHROW(height.validate());
            CHECK(height.P() == c.expected);
            CHECK(height.Q() == 1);

            ConvProblem width;
            width.W = c.size, width.pad_w = c.pad, width.dilation_w = c.dilation, width.S = c.taps,
            width.stride_w = c.stride;
            REQUIRE_NOTHROW(width.validate());
            CHECK(width.Q() == c.expected);
            CHECK(width.P() == 1);
        }
    }
}

TEST_CASE("non-square problems derive P and Q independently", "[problem]") {
    ConvProblem p;
    p.H = 7, p.W = 5, p.R = 3, p.S = 1, p.pad_h = 1, p.pad_w = 0, p.stride_h = 2, p.stride_w = 1, p.dilation_h = 1,
    p.dilation_w = 3;
    REQUIRE_NOTHROW(p.validate());
    CHECK(p.P() == 4);  // (7+2-2-1)/2+1
    CHECK(p.Q() == 5);  // (5-0-1)/1+1
}

TEST_CASE("shapes and element counts in both layouts", "[problem]") {
    ConvProblem p;
    p.N = 2, p.C = 6, p.H = 7, p.W = 5, p.K = 4, p.R = 3, p.S = 1, p.pad_h = 1, p.stride_h = 2, p.groups = 2;
    REQUIRE_NOTHROW(p.validate());
    REQUIRE(p.P() == 4);
    REQUIRE(p.Q() == 5);
    CHECK(p.channels_per_group() == 3);
    CHECK(p.filters_per_group() == 2);
    CHECK(p.bias_shape() == Shape{4});

    SECTION("nchw activations, oihw filters") {
        p.layout = Layout::NCHW;
        CHECK(p.input_shape() == Shape{2, 6, 7, 5});
        CHECK(p.filter_shape() == Shape{4, 3, 3, 1});
        CHECK(p.output_shape() == Shape{2, 4, 4, 5});
    }
    SECTION("nhwc activations, ohwi filters") {
        p.layout = Layout::NHWC;
        CHECK(p.input_shape() == Shape{2, 7, 5, 6});
        CHECK(p.filter_shape() == Shape{4, 3, 1, 3});
        CHECK(p.output_shape() == Shape{2, 4, 5, 4});
    }
    CHECK(p.input_elements() == 420);   // 2*6*7*5
    CHECK(p.filter_elements() == 36);   // 4*3*3*1
    CHECK(p.output_elements() == 160);  // 2*4*4*5
    CHECK(vkconv::shape_elements(p.input_shape()) == p.input_elements());
    CHECK(vkconv::shape_elements(p.filter_shape()) == p.filter_elements());
    CHECK(vkconv::shape_elements(p.output_shape()) == p.output_elements());
}

TEST_CASE("forward_flops counts two FLOPs per multiply-add", "[problem]") {
    ConvProblem p;
    p.N = 2, p.C = 6, p.H = 7, p.W = 5, p.K = 4, p.R = 3, p.S = 1, p.pad_h = 1, p.stride_h = 2, p.groups = 2;
    CHECK(p.forward_flops() == 2880.0);  // 2 * N*K*P*Q * (C/G)*R*S = 2 * 2*4*4*5 * 3*3*1

    ConvProblem depthwise;
    depthwise.N = 1, depthwise.C = 8, depthwise.K = 8, depthwise.groups = 8, depthwise.H = 4, depthwise.W = 4,
    depthwise.R = 3, depthwise.S = 3, depthwise.pad_h = 1, depthwise.pad_w = 1;
    CHECK(depthwise.forward_flops() == 2304.0);  // 2 * 1*8*4*4 * 1*3*3
}

TEST_CASE("str() lists every field on one line", "[problem]") {
    ConvProblem p;
    p.N = 1, p.C = 3, p.H = 5, p.W = 7, p.K = 4, p.R = 3, p.S = 3, p.pad_h = 1, p.pad_w = 1;
    CHECK(p.str() == "N=1 C=3 H=5 W=7 K=4 R=3 S=3 pad=1,1 stride=1,1 dilation=1,1 groups=1 nchw");
    p.layout = Layout::NHWC, p.has_bias = true, p.stride_w = 2, p.dilation_h = 2;
    CHECK(p.str() == "N=1 C=3 H=5 W=7 K=4 R=3 S=3 pad=1,1 stride=1,2 dilation=2,1 groups=1 nhwc bias");
}

namespace {

// A case of the table below: one invalid field and a substring of the message naming it.
struct InvalidCase {
    const char* name;
    std::function<void(ConvProblem&)> make_invalid;
    std::string expected;  // a substring of the message
};

// Each case breaks exactly one thing of a valid base problem. First the sizes and the paddings (the
// asymmetric end paddings against the kernel and int64 too) ...
std::vector<InvalidCase> invalid_size_and_padding_cases() {
    return {
        {"N zero", [](ConvProblem& p) { p.N = 0; }, "N (=0) must be positive"},
        {"N negative", [](ConvProblem& p) { p.N = -3; }, "N (=-3) must be positive"},
        {"C zero", [](ConvProblem& p) { p.C = 0; }, "C (=0) must be positive"},
        {"C negative", [](ConvProblem& p) { p.C = -4; }, "C (=-4) must be positive"},
        {"H zero", [](ConvProblem& p) { p.H = 0; }, "H (=0) must be positive"},
        {"H negative", [](ConvProblem& p) { p.H = -1; }, "H (=-1) must be positive"},
        {"W zero", [](ConvProblem& p) { p.W = 0; }, "W (=0) must be positive"},
        {"W negative", [](ConvProblem& p) { p.W = -1; }, "W (=-1) must be positive"},
        {"K zero", [](ConvProblem& p) { p.K = 0; }, "K (=0) must be positive"},
        {"K negative", [](ConvProblem& p) { p.K = -6; }, "K (=-6) must be positive"},
        {"R zero", [](ConvProblem& p) { p.R = 0; }, "R (=0) must be positive"},
        {"R negative", [](ConvProblem& p) { p.R = -1; }, "R (=-1) must be positive"},
        {"S zero", [](ConvProblem& p) { p.S = 0; }, "S (=0) must be positive"},
        {"S negative", [](ConvProblem& p) { p.S = -1; }, "S (=-1) must be positive"},
        {"pad_h negative", [](ConvProblem& p) { p.pad_h = -1; }, "pad_h (=-1) must be >= 0"},
        {"pad_w negative", [](ConvProblem& p) { p.pad_w = -2; }, "pad_w (=-2) must be >= 0"},
        {"pad_h_end negative", [](ConvProblem& p) { p.pad_h_end = -1; }, "pad_h_end (=-1) must be >= 0"},
        {"pad_w_end negative", [](ConvProblem& p) { p.pad_w_end = -3; }, "pad_w_end (=-3) must be >= 0"},
        {"kernel taller than the asymmetrically padded input", [](ConvProblem& p) { p.H = 1, p.pad_h_end = 1; },
         "dilated kernel height dilation_h*(R-1)+1 (=3) is larger than the padded input height H+pad_h+pad_h_end (=2)"},
        {"asymmetrically padded width overflows", [](ConvProblem& p) { p.pad_w_end = std::numeric_limits<int64_t>::max(); },
         "padded input width W+pad_w+pad_w_end overflows int64"},
    };
}

// ... then strides, dilations and groups, the dilated kernel against the padded input, and every count and
// byte size that would overflow int64.
std::vector<InvalidCase> invalid_stride_and_count_cases() {
    constexpr int64_t big = int64_t{1} << 20;
    constexpr int64_t max = std::numeric_limits<int64_t>::max();
    return {
        {"stride_h zero", [](ConvProblem& p) { p.stride_h = 0; }, "stride_h (=0) must be positive"},
        {"stride_w zero", [](ConvProblem& p) { p.stride_w = 0; }, "stride_w (=0) must be positive"},
        {"stride_h negative", [](ConvProblem& p) { p.stride_h = -2; }, "stride_h (=-2) must be positive"},
        {"dilation_h zero", [](ConvProblem& p) { p.dilation_h = 0; }, "dilation_h (=0) must be positive"},
        {"dilation_w zero", [](ConvProblem& p) { p.dilation_w = 0; }, "dilation_w (=0) must be positive"},
        {"groups zero", [](ConvProblem& p) { p.groups = 0; }, "groups (=0) must be positive"},
        {"groups negative", [](ConvProblem& p) { p.groups = -2; }, "groups (=-2) must be positive"},
        {"C not divisible by groups", [](ConvProblem& p) { p.C = 7; }, "C (=7) is not divisible by groups (=2)"},
        {"K not divisible by groups", [](ConvProblem& p) { p.K = 5; }, "K (=5) is not divisible by groups (=2)"},
        {"dilated kernel too tall", [](ConvProblem& p) { p.H = 2, p.pad_h = 1, p.R = 5; },
         "dilated kernel height dilation_h*(R-1)+1 (=5) is larger than the padded input height H+2*pad_h (=4)"},
        {"dilated kernel too wide", [](ConvProblem& p) { p.W = 3, p.S = 3, p.dilation_w = 2; },
         "dilated kernel width dilation_w*(S-1)+1 (=5) is larger than the padded input width W+2*pad_w (=3)"},
        {"padded height overflows", [](ConvProblem& p) { p.pad_h = max / 2; },
         "padded input height H+2*pad_h overflows int64"},
        {"padded width overflows", [](ConvProblem& p) { p.pad_w = max / 2 + 1; },
         "padded input width W+2*pad_w overflows int64"},
        {"dilated kernel height overflows", [](ConvProblem& p) { p.dilation_h = max; },
         "dilated kernel height dilation_h*(R-1)+1 overflows int64"},
        {"input count overflows", [](ConvProblem& p) { p.N = big, p.C = big, p.H = big, p.W = big; },
         "input element count N*C*H*W overflows int64 (N=1048576, C=1048576, H=1048576, W=1048576)"},
        // 2^32 * 2^31 * 3*3 > 2^63, while the input 2^32 * 5*5 fits.
        {"filter count overflows", [](ConvProblem& p) { p.K = int64_t{1} << 32, p.C = int64_t{1} << 32; },
         "filter element count K*C/groups*R*S overflows int64"},
        // 2^40 * (2^12)^2 = 2^64, while the input 4 * (2^12+2)^2 and the filter 2^40 * 2*3*3 fit.
        {"output count overflows",
         [](ConvProblem& p) { p.K = int64_t{1} << 40, p.H = (1 << 12) + 2, p.W = (1 << 12) + 2; },
         "output element count N*K*P*Q overflows int64"},
        // N*K*P*Q = 2^36 * 2^20 fits, times (C/G)*R*S = 2^11*9 it does not.
        {"forward multiply-add count overflows",
         [](ConvProblem& p) {
             p.K = int64_t{1} << 36, p.C = int64_t{1} << 12, p.H = (1 << 10) + 2, p.W = (1 << 10) + 2;
         },
         "forward multiply-add count N*K*P*Q*C/groups*R*S overflows int64"},
        // Found by the fuzz target fuzz_problem (tests/fuzz/regressions/problem/): element counts that fit,
        // whose float32 byte counts (elements * 4) do not. The multiply-add count fits in each.
        {"input bytes overflow", [](ConvProblem& p) { p.K = 2, p.R = 1, p.S = 1, p.H = 1 << 30, p.W = 1 << 30; },
         "input size in bytes N*C*H*W*4 overflows int64 (N*C*H*W=4611686018427387904)"},
        {"filter bytes overflow",
         [](ConvProblem& p) { p.K = int64_t{1} << 40, p.R = p.H = 1 << 11, p.S = p.W = 1 << 10; },
         "filter size in bytes K*C/groups*R*S*4 overflows int64"},
        {"output bytes overflow",
         [](ConvProblem& p) { p.C = 2, p.K = 8, p.R = 1, p.S = 1, p.H = 1 << 30, p.W = 1 << 29; },
         "output size in bytes N*K*P*Q*4 overflows int64"},
    };
}

}  // namespace

TEST_CASE("every invalid field is reported by name as InvalidArgument", "[problem]") {
    std::vector<InvalidCase> cases = invalid_size_and_padding_cases();
    for (InvalidCase& c : invalid_stride_and_count_cases()) cases.push_back(std::move(c));

    ConvProblem base;
    base.N = 1, base.C = 4, base.H = 5, base.W = 5, base.K = 6, base.R = 3, base.S = 3, base.groups = 2;
    REQUIRE_NOTHROW(base.validate());

    for (const InvalidCase& c : cases) {
        DYNAMIC_SECTION(c.name) {
            ConvProblem p = base;
            c.make_invalid(p);
            const std::string message = invalid_argument_message([&] { p.validate(); });
            CHECK(message.rfind("ConvProblem: ", 0) == 0);
            CHECK_THAT(message, Catch::Contains(c.expected));
        }
    }
}

TEST_CASE("check_shape names the role and both shapes", "[problem]") {
    CHECK_NOTHROW(ConvProblem::check_shape("input", {1, 3, 5, 7}, {1, 3, 5, 7}));
    CHECK(invalid_argument_message([] {
              ConvProblem::check_shape("input", {1, 3, 5}, {1, 3, 5, 7});
          }) == "input shape [1, 3, 5] does not match the expected shape [1, 3, 5, 7]");
    CHECK(invalid_argument_message([] {
              ConvProblem::check_shape("filter", {4, 3, 3, 2}, {4, 3, 2, 3});
          }) == "filter shape [4, 3, 3, 2] does not match the expected shape [4, 3, 2, 3]");
}

TEST_CASE("shape_string and shape_elements", "[problem]") {
    CHECK(vkconv::shape_string({2, 3, 5, 7}) == "[2, 3, 5, 7]");
    CHECK(vkconv::shape_string({9}) == "[9]");
    CHECK(vkconv::shape_string({}) == "[]");
    CHECK(vkconv::shape_elements({2, 3, 5, 7}) == 210);
    CHECK(vkconv::shape_elements({}) == 1);
    // A zero extent wins over the others' overflow (an empty .npy array may have such a shape).
    CHECK(vkconv::shape_elements({int64_t(1) << 40, int64_t(1) << 40, 0}) == 0);
    CHECK(invalid_argument_message([] { (void)vkconv::shape_elements({int64_t(1) << 40, int64_t(1) << 40}); }) ==
          "shape [1099511627776, 1099511627776] has more elements than int64 holds");
    CHECK(invalid_argument_message([] { (void)vkconv::shape_elements({2, -3}); }) ==
          "shape [2, -3] has a negative extent -3");
}

TEST_CASE("layout names round-trip and unknown names are rejected", "[problem]") {
    CHECK(std::string(vkconv::to_string(Layout::NCHW)) == "nchw");
    CHECK(std::string(vkconv::to_string(Layout::NHWC)) == "nhwc");
    CHECK(vkconv::parse_layout("nchw") == Layout::NCHW);
    CHECK(vkconv::parse_layout("nhwc") == Layout::NHWC);
    CHECK(vkconv::parse_layout("NHWC") == Layout::NHWC);
    CHECK(vkconv::parse_layout("NcHw") == Layout::NCHW);
    CHECK(invalid_argument_message([] { vkconv::parse_layout("xyz"); }) ==
          "unknown layout 'xyz' (expected nchw or nhwc)");
    CHECK(invalid_argument_message([] { vkconv::parse_layout(""); }) == "unknown layout '' (expected nchw or nhwc)");
    CHECK_THAT(invalid_argument_message([] { vkconv::parse_layout("nchw "); }), Catch::Contains("'nchw '"));
}

TEST_CASE("asymmetric padding: P and Q count both sides, str names the four pads", "[problem]") {
    ConvProblem p;
    p.N = 1, p.C = 2, p.H = 10, p.W = 8, p.K = 3, p.R = 3, p.S = 3, p.stride_h = p.stride_w = 2;
    p.set_padding(0, 1, 2, 1);
    REQUIRE_NOTHROW(p.validate());
    CHECK(p.pad_top() == 0);
    CHECK(p.pad_bottom() == 1);
    CHECK(p.pad_left() == 2);
    CHECK(p.pad_right() == 1);
    CHECK_FALSE(p.symmetric_padding());
    CHECK(p.P() == 5);  // (10+0+1-2-1)/2+1
    CHECK(p.Q() == 5);  // (8+2+1-2-1)/2+1
    CHECK(p.output_shape() == Shape{1, 3, 5, 5});
    CHECK_THAT(p.str(), Catch::Contains(" pad=0,1,2,1 "));
    // Equal pads on both sides are the plain symmetric form, whichever way they were set.
    p.set_padding(1, 1, 2, 2);
    CHECK(p.symmetric_padding());
    CHECK_FALSE(p.pad_h_end.has_value());
    CHECK_FALSE(p.pad_w_end.has_value());
    CHECK_THAT(p.str(), Catch::Contains(" pad=1,2 "));
    p.pad_h_end = 1;  // explicit, equal: still symmetric
    CHECK(p.symmetric_padding());
    CHECK(p.pad_bottom() == 1);
}

TEST_CASE("auto padding follows ONNX's SAME_UPPER, SAME_LOWER and VALID", "[problem]") {
    struct Case {
        const char* name;
        int64_t size, taps, stride, dilation;
        vkconv::AutoPad mode;
        int64_t begin, end, out;
    };
    using vkconv::AutoPad;
    const Case cases[] = {
        // TensorFlow's SAME, stride 2 on an even input: the odd pad at the end (MobileNet's downsampling).
        {"same-upper even input stride 2", 224, 3, 2, 1, AutoPad::SameUpper, 0, 1, 112},
        {"same-lower even input stride 2", 224, 3, 2, 1, AutoPad::SameLower, 1, 0, 112},
        {"same-upper odd input stride 2", 7, 3, 2, 1, AutoPad::SameUpper, 1, 1, 4},
        {"same-upper stride 1", 5, 3, 1, 1, AutoPad::SameUpper, 1, 1, 5},
        {"same-upper even kernel", 5, 4, 1, 1, AutoPad::SameUpper, 1, 2, 5},
        {"same-lower even kernel", 5, 4, 1, 1, AutoPad::SameLower, 2, 1, 5},
        {"same-upper dilation 2", 6, 3, 1, 2, AutoPad::SameUpper, 2, 2, 6},
        {"same-upper stride beyond the kernel", 9, 1, 4, 1, AutoPad::SameUpper, 0, 0, 3},
        {"valid", 9, 3, 2, 1, AutoPad::Valid, 0, 0, 4},
    };
    for (const Case& c : cases) {
        DYNAMIC_SECTION(c.name) {
            ConvProblem p;
            p.H = c.size, p.R = c.taps, p.stride_h = c.stride, p.dilation_h = c.dilation;
            p.W = c.size, p.S = c.taps, p.stride_w = c.stride, p.dilation_w = c.dilation;
            p.set_auto_padding(c.mode);
            REQUIRE_NOTHROW(p.validate());
            CHECK(p.pad_top() == c.begin);
            CHECK(p.pad_bottom() == c.end);
            CHECK(p.pad_left() == c.begin);
            CHECK(p.pad_right() == c.end);
            CHECK(p.P() == c.out);
            CHECK(p.Q() == c.out);
        }
    }
    CHECK(vkconv::parse_auto_pad("SAME_UPPER") == AutoPad::SameUpper);
    CHECK(vkconv::parse_auto_pad("same-lower") == AutoPad::SameLower);
    CHECK(vkconv::parse_auto_pad("Valid") == AutoPad::Valid);
    CHECK_THAT(invalid_argument_message([] { vkconv::parse_auto_pad("same"); }),
               Catch::Contains("unknown auto padding 'same'") && Catch::Contains("same-upper"));
    ConvProblem bad;
    bad.stride_w = 0;
    CHECK_THAT(invalid_argument_message([&] { bad.set_auto_padding(AutoPad::SameUpper); }),
               Catch::Contains("stride_w (=0)"));
}
