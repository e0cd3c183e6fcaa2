// fp16 and bf16 to and from fp32 (core/half.hpp), on the bits.
#include "core/half.hpp"

#include <bit>
#include <cstddef>

namespace vkconv::detail {
namespace {

constexpr uint32_t kFloatExponent = 0x7f800000u;
constexpr uint32_t kFloatMagnitude = 0x7fffffffu;

// Rounds `value >> shift` to nearest, ties to even, on the bits shifted out.
constexpr uint32_t shift_round_even(uint32_t value, uint32_t shift) {
    const uint32_t kept = value >> shift;
    const uint32_t rest = value & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    return kept + (rest > half || (rest == half && (kept & 1u)) ? 1u : 0u);
}

}  // namespace

uint16_t fp16_from_float(float value) noexcept {
    const uint32_t x = std::bit_cast<uint32_t>(value);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t magnitude = x & kFloatMagnitude;
    if (magnitude > kFloatExponent)  // NaN: quiet, the payload's top 9 bits kept
        return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x1ffu));
    if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // 65520 and up: infinity
    if (magnitude >= 0x38800000u) {
        // Normal: the exponent rebiased from 127 to 15; a mantissa carry moves into the exponent as it should.
        return static_cast<uint16_t>(sign | shift_round_even(magnitude - 0x38000000u, 13));
    }
    if (magnitude <= 0x33000000u) return static_cast<uint16_t>(sign);  // up to 2^-25 (a tie): zero
    // Subnormal: units of 2^-24. The float is m·2^(e-150) with m its 24-bit significand, so m >> (126 - e).
    const uint32_t exponent = magnitude >> 23;
    const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
    return static_cast<uint16_t>(sign | shift_round_even(significand, 126 - exponent));
}

float float_from_fp16(uint16_t bits) noexcept {
    const uint32_t sign = uint32_t(bits & 0x8000u) << 16;
    const uint32_t exponent = (bits >> 10) & 0x1fu;
    const uint32_t mantissa = bits & 0x3ffu;
    if (exponent == 0x1fu) return std::bit_cast<float>(sign | kFloatExponent | (mantissa << 13));
    if (exponent != 0) return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
    // Zero or subnormal: mantissa·2^-24, exact in fp32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
}

uint16_t bf16_from_float(float value) noexcept {
    const uint32_t x = std::bit_cast<uint32_t>(value);
    if ((x & kFloatMagnitude) > kFloatExponent) return static_cast<uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
    // Infinities stay; the largest finite values round up to infinity through the exponent's carry.
    return static_cast<uint16_t>(shift_round_even(x, 16));
}

float float_from_bf16(uint16_t bits) noexcept {
    return std::bit_cast<float>(uint32_t(bits) << 16);
}

void fp16_from_floats(std::span<const float> from, std::span<uint16_t> to) noexcept {
    for (size_t i = 0; i < from.size(); ++i) to[i] = fp16_from_float(from[i]);
}
void floats_from_fp16(std::span<const uint16_t> from, std::span<float> to) noexcept {
    for (size_t i = 0; i < from.size(); ++i) to[i] = float_from_fp16(from[i]);
}
void bf16_from_floats(std::span<const float> from, std::span<uint16_t> to) noexcept {
    for (size_t i = 0; i < from.size(); ++i) to[i] = bf16_from_float(from[i]);
}
void floats_from_bf16(std::span<const uint16_t> from, std::span<float> to) noexcept {
    for (size_t i = 0; i < from.size(); ++i) to[i] = float_from_bf16(from[i]);
}

}  // namespace vkconv::detail
