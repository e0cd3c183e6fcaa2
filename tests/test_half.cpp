// fp16 and bf16 conversions (core/half.hpp): every 16-bit value widens exactly and narrows back to itself,
// and narrowing rounds to the nearest value, ties to the even one, over a sweep of the whole fp32 range.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/half.hpp"

namespace {

using vkconv::detail::bf16_from_float;
using vkconv::detail::float_from_bf16;
using vkconv::detail::float_from_fp16;
using vkconv::detail::fp16_from_float;

bool is_nan16(uint16_t bits, uint16_t exponent_mask, uint16_t mantissa_mask) {
    return (bits & exponent_mask) == exponent_mask && (bits & mantissa_mask) != 0;
}

// Whether `got` is what round-to-nearest-even must give for `value`, judged from the 16-bit neighbours
// around it, in double (every fp32 and every 16-bit value is exact there): the nearer one, the one with an
// even last bit on a tie, infinity from the midpoint above the largest finite value on (that tie goes to the
// even infinity).
template <class Widen>
bool rounds_to_nearest_even(float value, uint16_t got, Widen widen, double largest, double ulp_of_largest) {
    const double v = value, g = widen(got);
    if (std::signbit(g) != std::signbit(value)) return false;
    if (std::fabs(v) >= largest + ulp_of_largest / 2) return std::isinf(g);
    if (!std::isfinite(g)) return false;
    // The neighbours of `got` one step up and down in magnitude (the bit patterns are ordered like the values).
    const uint16_t below = got & 0x7fff ? uint16_t(got - 1) : got;
    const double up = widen(uint16_t(got + 1)), down = widen(below);
    const double error = std::fabs(v - g);
    if (error > std::fabs(v - up) || error > std::fabs(v - down)) return false;
    const bool tie = error != 0 && (error == std::fabs(v - up) || (below != got && error == std::fabs(v - down)));
    return !tie || (got & 1) == 0;
}

}  // namespace

TEST_CASE("fp16: every value widens exactly and narrows back to itself", "[half]") {
    for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
        const auto h = static_cast<uint16_t>(bits);
        const float f = float_from_fp16(h);
        INFO("fp16 bits " << bits);
        if (is_nan16(h, 0x7c00, 0x03ff)) {
            CHECK(std::isnan(f));
            const uint16_t back = fp16_from_float(f);
            CHECK(is_nan16(back, 0x7c00, 0x03ff));
            CHECK((back & 0x0200) != 0);                        // quiet
            CHECK((back & 0x8000) == (h & 0x8000));             // its sign
            CHECK((back & 0x01ff) == (h & 0x01ff));             // its payload below the quiet bit
        } else {
            CHECK(fp16_from_float(f) == h);
        }
    }
    CHECK(float_from_fp16(0x7bff) == 65504.0f);
    CHECK(float_from_fp16(0x0001) == std::ldexp(1.0f, -24));
    CHECK(float_from_fp16(0x0400) == std::ldexp(1.0f, -14));
    CHECK(float_from_fp16(0xfc00) == -std::numeric_limits<float>::infinity());
}

TEST_CASE("bf16: every value widens exactly and narrows back to itself", "[half]") {
    for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
        const auto h = static_cast<uint16_t>(bits);
        const float f = float_from_bf16(h);
        INFO("bf16 bits " << bits);
        CHECK(std::bit_cast<uint32_t>(f) == bits << 16);
        const uint16_t back = bf16_from_float(f);
        if (is_nan16(h, 0x7f80, 0x007f))
            CHECK(back == (h | 0x0040));  // made quiet, sign and payload kept
        else
            CHECK(back == h);
    }
}

TEST_CASE("fp16 and bf16 narrow to the nearest value, ties to even, across the fp32 range", "[half]") {
    const double fp16_largest = 65504.0, fp16_ulp = 32.0;
    const double bf16_largest = std::ldexp(255.0 / 128.0, 127), bf16_ulp = std::ldexp(1.0, 120);
    // Every 4099th fp32 bit pattern (a prime stride: every exponent, mantissas of every low-bit pattern), and
    // the cases at the edges: ties, the midpoint to infinity, the subnormal boundaries.
    std::vector<float> values;
    for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4099) values.push_back(std::bit_cast<float>(uint32_t(bits)));
    for (float v : {65504.0f, 65519.996f, 65520.0f, 65536.0f, 0x1p-25f, 0x1.000002p-25f, 0x1p-24f, 0x1.8p-24f,
                    0x1p-14f, 0x1.ffcp-15f, 0x1.ffep-15f, 1.0f + 0x1p-11f, 1.0f + 0x1.8p-10f, 1.0f + 0x1p-8f,
                    1.0f + 0x1.8p-7f, std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()})
        for (float s : {1.0f, -1.0f}) values.push_back(s * v);
    size_t checked = 0, wrong = 0;
    for (float v : values) {
        const uint16_t h = fp16_from_float(v), b = bf16_from_float(v);
        const bool right = std::isnan(v)
                               ? std::isnan(float_from_fp16(h)) && std::isnan(float_from_bf16(b))
                               : rounds_to_nearest_even(v, h, float_from_fp16, fp16_largest, fp16_ulp) &&
                                     rounds_to_nearest_even(v, b, float_from_bf16, bf16_largest, bf16_ulp);
        if (!right && wrong++ < 5)
            FAIL_CHECK("fp32 bits " << std::bit_cast<uint32_t>(v) << " (" << v << "): fp16 bits " << h << ", bf16 bits "
                                    << b);
        ++checked;
    }
    CHECK(wrong == 0);
    CHECK(checked > 1000000);
    // The edges, by value.
    CHECK(fp16_from_float(65519.996f) == 0x7bff);
    CHECK(fp16_from_float(65520.0f) == 0x7c00);
    CHECK(fp16_from_float(0x1p-25f) == 0x0000);         // a tie between 0 and 2^-24: the even 0
    CHECK(fp16_from_float(0x1.000002p-25f) == 0x0001);  // just above it
    CHECK(fp16_from_float(0x1.8p-24f) == 0x0002);       // a tie between 1 and 2 units: the even 2
    CHECK(fp16_from_float(1.0f + 0x1p-11f) == 0x3c00);  // a tie at 1: the even 1
    CHECK(fp16_from_float(1.0f + 0x1.8p-10f) == 0x3c02);
    CHECK(bf16_from_float(1.0f + 0x1p-8f) == 0x3f80);
    CHECK(bf16_from_float(1.0f + 0x1.8p-7f) == 0x3f82);
    CHECK(bf16_from_float(std::numeric_limits<float>::max()) == 0x7f80);
}
