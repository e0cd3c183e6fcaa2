// elements.glsl — how a kernel reads and writes the elements of its tensors, whatever their type.
//
// A kernel declares each tensor binding as an array of ELEMENT_WORD and goes through these macros:
//   ELEMENT_AT(buffer, type, i)          the element i of the binding, as a float
//   STORE_ELEMENT(buffer, type, i, v)    writes float v there, rounded to the type to nearest even
//   QUAD_AT(quads, type, q)              elements 4q .. 4q+3 as a vec4 (the vec4 views of fp32 kernels)
//   STORE_QUAD(quads, type, q, v)        writes vec4 v to elements 4q .. 4q+3
// where `type` is the binding's element type, a specialization constant in DataType's order (0 fp32,
// 1 fp16, 2 bf16), and i counts elements of that type from the binding's start. `quads` is a second
// declaration of the same binding as an array of ELEMENT_QUAD (uvec2 in the 16-bit builds: four 16-bit
// elements, or two fp32 ones, a quad of fp32 elements being two entries). A quad moves as one 8-byte load
// or store rather than four 2-byte ones: on lavapipe, where each access of an invocation is a scalar access
// per SIMD lane, the four-access form made 16-bit passes up to 1.4x slower than fp32. Each kernel is built
// three ways (shaders/CMakeLists.txt):
//   (neither define)   fp32 tensors only: float arrays, the macros plain indexing (`type` unused).
//   ELEMENTS_16        uint16_t arrays (storageBuffer16BitAccess): a 16-bit element is one entry, an fp32
//                      element (a workspace, an fp32 dw) two, its low half first.
//   ELEMENTS_PACKED    uint arrays, for every Vulkan 1.1 device: an fp32 element is one word, 16-bit
//                      elements two to a word, the lower index in the low half. A store replaces its half
//                      of the word with two atomics (clear it, then set it), so two invocations writing the
//                      two halves of one word, at odd counts and offsets, never race.
// Only conversions happen in 16 bits: arithmetic is fp32 (no shaderFloat16 needed). fp16 widens exactly
// (unpackHalf2x16), bf16 is the top half of an fp32; narrowing rounds to nearest even in integer arithmetic,
// as engine/core/half.cpp does on the host, so results are the same on every device.

#ifndef VKCONV_ELEMENTS_GLSL
#define VKCONV_ELEMENTS_GLSL

const uint ELEMENT_F32 = 0u, ELEMENT_F16 = 1u, ELEMENT_BF16 = 2u;

// The bits of a 16-bit element (in the low half) as a float.
float decode16(uint type, uint bits) {
    return type == ELEMENT_BF16 ? uintBitsToFloat(bits << 16) : unpackHalf2x16(bits).x;
}

// v rounded to nearest even bf16; a NaN stays a (quiet) NaN.
uint encode_bf16(float v) {
    const uint b = floatBitsToUint(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) return (b >> 16) | 0x40u;
    return (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
}

// v rounded to nearest even fp16: past 65520 in magnitude infinity, below 2^-14 a subnormal.
uint encode_f16(float v) {
    const uint b = floatBitsToUint(v);
    const uint sign = (b >> 16) & 0x8000u, a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;                  // NaN
    if (a >= 0x477ff000u) return sign | 0x7c00u;                 // rounds past 65504: infinity
    if (a >= 0x38800000u) {                                      // normal: rebias the exponent by 127 - 15
        const uint r = a - 0x38000000u;
        return sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13);
    }
    // Subnormal (or zero): the value in units of 2^-24, an exact scaling, rounded to nearest even.
    return sign | uint(roundEven(uintBitsToFloat(a) * 16777216.0));
}

uint encode16(uint type, float v) {
    return type == ELEMENT_BF16 ? encode_bf16(v) : encode_f16(v);
}

// The two 16-bit elements of a packed word, the low half first.
vec2 decode_pair(uint type, uint word) {
    return type == ELEMENT_BF16 ? vec2(uintBitsToFloat(word << 16), uintBitsToFloat(word & 0xffff0000u))
                                : unpackHalf2x16(word);
}

#if defined(ELEMENTS_16)
#extension GL_EXT_shader_16bit_storage : require
#define ELEMENT_WORD uint16_t
#define ELEMENT_AT(buf, type, i)                                                                        \
    ((type) == ELEMENT_F32 ? uintBitsToFloat(uint(buf[2u * (i)]) | (uint(buf[2u * (i) + 1u]) << 16)) \
                           : decode16((type), uint(buf[(i)])))
#define STORE_ELEMENT(buf, type, i, v)                         \
    {                                                          \
        const uint at_ = (i);                                  \
        const float value_ = (v);                              \
        if ((type) == ELEMENT_F32) {                           \
            const uint bits_ = floatBitsToUint(value_);        \
            buf[2u * at_] = uint16_t(bits_ & 0xffffu);         \
            buf[2u * at_ + 1u] = uint16_t(bits_ >> 16);        \
        } else {                                               \
            buf[at_] = uint16_t(encode16((type), value_));     \
        }                                                      \
    }
#define ELEMENT_QUAD uvec2
#elif defined(ELEMENTS_PACKED)
#define ELEMENT_WORD uint
#define ELEMENT_AT(buf, type, i)                  \
    ((type) == ELEMENT_F32 ? uintBitsToFloat(buf[(i)]) \
                           : decode16((type), (buf[(i) >> 1] >> (((i) & 1u) << 4)) & 0xffffu))
#define STORE_ELEMENT(buf, type, i, v)                                   \
    {                                                                    \
        const uint at_ = (i);                                            \
        const float value_ = (v);                                        \
        if ((type) == ELEMENT_F32) {                                     \
            buf[at_] = floatBitsToUint(value_);                          \
        } else {                                                         \
            const uint shift_ = (at_ & 1u) << 4;                         \
            atomicAnd(buf[at_ >> 1], ~(0xffffu << shift_));              \
            atomicOr(buf[at_ >> 1], encode16((type), value_) << shift_); \
        }                                                                \
    }
#define ELEMENT_QUAD uvec2
#endif

#if defined(ELEMENTS_16) || defined(ELEMENTS_PACKED)
// Four 16-bit elements as a texel view of their bits gives them (R16G16B16A16_UINT).
vec4 decode16x4(uint type, uvec4 bits) {
    return vec4(decode16(type, bits.x), decode16(type, bits.y), decode16(type, bits.z), decode16(type, bits.w));
}
// A quad is two whole 32-bit words (the lower index in the low half, as in memory), so it is read and
// written without atomics in the packed build too: no other invocation writes into it.
vec4 decode_quad(uint type, uvec2 words) {
    return vec4(decode_pair(type, words.x), decode_pair(type, words.y));
}
uvec2 encode_quad(uint type, vec4 v) {
    return uvec2(encode16(type, v.x) | (encode16(type, v.y) << 16), encode16(type, v.z) | (encode16(type, v.w) << 16));
}
#define QUAD_AT(quads, type, q)                                                                              \
    ((type) == ELEMENT_F32 ? uintBitsToFloat(uvec4(quads[2u * (q)], quads[2u * (q) + 1u])) : decode_quad((type), quads[(q)]))
#define STORE_QUAD(quads, type, q, v)                        \
    {                                                        \
        const uint q_ = (q);                                 \
        const vec4 vector_ = (v);                            \
        if ((type) == ELEMENT_F32) {                         \
            quads[2u * q_] = floatBitsToUint(vector_.xy);    \
            quads[2u * q_ + 1u] = floatBitsToUint(vector_.zw); \
        } else {                                             \
            quads[q_] = encode_quad((type), vector_);        \
        }                                                    \
    }
#else
#define ELEMENT_WORD float
#define ELEMENT_AT(buf, type, i) buf[(i)]
#define STORE_ELEMENT(buf, type, i, v) buf[(i)] = (v)
#define ELEMENT_QUAD vec4
#define QUAD_AT(quads, type, q) quads[(q)]
#define STORE_QUAD(quads, type, q, v) quads[(q)] = (v)
#endif

#endif
