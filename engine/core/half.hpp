// 16-bit floating-point storage on the host: fp16 (IEEE 754 binary16) and bf16 (the top half of an fp32),
// each converted to and from fp32. Narrowing rounds to nearest, ties to even, as IEEE 754's default and
// PyTorch's own conversions do, so a tensor vkconv narrows holds the values torch's .half() and
// .bfloat16() give:
//   - fp16: values from 65520 up (the midpoint past the largest finite, 65504) become infinity; values down
//     to 2^-25 keep their precision as subnormals (2^-25 itself, a tie, rounds to the even 0).
//   - bf16: the low 16 bits of the fp32 are rounded away; finite values past the largest bf16 become
//     infinity.
//   - NaN stays NaN, with its sign and the top bits of its payload, made quiet; infinities stay infinite.
// Widening is exact. Plain bit arithmetic, so every compiler and CPU gives the same bits.
#pragma once

#include <cstdint>
#include <span>

namespace vkconv::detail {

uint16_t fp16_from_float(float value) noexcept;
float float_from_fp16(uint16_t bits) noexcept;
uint16_t bf16_from_float(float value) noexcept;
float float_from_bf16(uint16_t bits) noexcept;

// Whole runs (`to` as long as `from`).
void fp16_from_floats(std::span<const float> from, std::span<uint16_t> to) noexcept;
void floats_from_fp16(std::span<const uint16_t> from, std::span<float> to) noexcept;
void bf16_from_floats(std::span<const float> from, std::span<uint16_t> to) noexcept;
void floats_from_bf16(std::span<const uint16_t> from, std::span<float> to) noexcept;

}  // namespace vkconv::detail
