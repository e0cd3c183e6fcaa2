// depthwise_common.glsl — what the depthwise kernels share: the geometry as specialization constants,
// the two read paths, the value type, and the loads of one row segment into registers. The layout and tap
// arithmetic is shaders/common/'s (tensor_index.glsl, conv_geometry.glsl), included here for all of them.
//
// Depthwise: groups == C, K = MULT * C, output channel k reads input channel k / MULT; the filter is
// [K][R][S] in both layouts (OIHW with one input channel, or OHWI with one).
//
// Specialization constants 0..20 shared by every depthwise kernel (1..9 declared in
// ../common/conv_spec_geometry.glsl, included here, shared with the direct and im2col shaders):
//   0 WORKGROUP_SIZE (local_size_x_id)
//   1 R, 2 S, 3 STRIDE_H, 4 STRIDE_W, 5 PAD_H, 6 PAD_W, 7 DIL_H, 8 DIL_W
//   9 NHWC                 tensors NHWC (else NCHW); the filter's memory order is the same in both
//  10 C, 11 H, 12 W, 13 MULT (filters per input channel), 14 P, 15 Q
//  16 TILE_W, 17 TILE_H    outputs (or dx values) per invocation along W and H
//  18 VEC4_X               NCHW only: rows of x (or dx) start on vec4 boundaries (W % 4 == 0) and the
//                          tile's first column is a multiple of 4 after stride: x read (or dx written) as vec4
//  19 VEC4_Y               NCHW only: the same for rows of y (or dy) (Q % 4 == 0)
//  20 TENSOR_TYPE          the element type of every tensor binding (../common/elements.glsl; the 16-bit
//                          builds only): x, w, the bias, y, the residual, dy, dx. Partial sums stay fp32.
//
// Build-time variants (one SPIR-V each):
//   ACCESS_TEXEL / ACCESS_SSBO   the read-only operands are uniform texel buffers (samplerBuffer: rgba32f and
//                                r32f views) or storage buffers (vec4[] and float[] views)
//   ELEMENTS_16 / ELEMENTS_PACKED  (with ACCESS_SSBO) 16-bit tensors, stored directly or in packed words
//   CHANNELS4                    NHWC with MULT == 1 and C % 4 == 0: each invocation works on 4 adjacent
//                                channels, every value a vec4 (loads and stores along C)

#extension GL_EXT_control_flow_attributes : enable
#include "../common/tensor_index.glsl"
#include "../common/conv_geometry.glsl"
#include "../common/conv_spec_geometry.glsl"  // specialization constants 1..9: R .. NHWC
#include "../common/elements.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 10) const uint C = 1;
layout(constant_id = 11) const uint H = 1;
layout(constant_id = 12) const uint W = 1;
layout(constant_id = 13) const uint MULT = 1;
layout(constant_id = 14) const uint P = 1;
layout(constant_id = 15) const uint Q = 1;
layout(constant_id = 16) const uint TILE_W = 4;
layout(constant_id = 17) const uint TILE_H = 1;
layout(constant_id = 18) const bool VEC4_X = false;
layout(constant_id = 19) const bool VEC4_Y = false;
layout(constant_id = 20) const uint TENSOR_TYPE = 0;  // the tensors' element type (16-bit builds)

const uint K = C * MULT;
const uint TAPS = R * S;

#ifdef CHANNELS4
#define VAL vec4
#define LANE(v, i) (v)[i]  // channel i of a value
const uint LANE_CHANNELS = 4;  // channels per invocation
#else
#define VAL float
#define LANE(v, i) (v)
const uint LANE_CHANNELS = 1;
#endif

#if (defined(ELEMENTS_16) || defined(ELEMENTS_PACKED)) && defined(ACCESS_TEXEL)
// The 16-bit builds reading through texel views of the 16-bit bits (R16_UINT and R16G16B16A16_UINT: the
// cheaper load path on lavapipe, as r32f views are for fp32), widened as elements.glsl widens them; outputs
// are ELEMENT_WORD storage buffers.
#define SIXTEEN_BIT_BUILD
#define DECLARE_READ4(b, name) layout(binding = b) uniform usamplerBuffer name;
#define DECLARE_READ1(b, name) layout(binding = b) uniform usamplerBuffer name;
#define READ4(name, i) decode16x4(TENSOR_TYPE, texelFetch(name, int(i)))
#define READ1(name, i) decode16(TENSOR_TYPE, texelFetch(name, int(i)).x)
#elif defined(ELEMENTS_16) || defined(ELEMENTS_PACKED)
// The 16-bit builds reading storage buffers: every tensor binding is an array of ELEMENT_WORD holding
// TENSOR_TYPE elements (../common/elements.glsl); a vec4 view is an array of quads, each 4 elements.
#define SIXTEEN_BIT_BUILD
#define DECLARE_READ4(b, name) layout(std430, binding = b) readonly buffer name##_block { ELEMENT_QUAD name[]; };
#define DECLARE_READ1(b, name) layout(std430, binding = b) readonly buffer name##_block { ELEMENT_WORD name[]; };
#define READ4(name, i) QUAD_AT(name, TENSOR_TYPE, i)
#define READ1(name, i) ELEMENT_AT(name, TENSOR_TYPE, i)
#elif defined(ACCESS_TEXEL)
#define DECLARE_READ4(b, name) layout(binding = b) uniform samplerBuffer name;
#define DECLARE_READ1(b, name) layout(binding = b) uniform samplerBuffer name;
#define READ4(name, i) texelFetch(name, int(i))
#define READ1(name, i) texelFetch(name, int(i)).x
#elif defined(ACCESS_SSBO)
#define DECLARE_READ4(b, name) layout(std430, binding = b) readonly buffer name##_block { vec4 name[]; };
#define DECLARE_READ1(b, name) layout(std430, binding = b) readonly buffer name##_block { float name[]; };
#define READ4(name, i) name[i]
#define READ1(name, i) name[i]
#else
#error "define one of ACCESS_TEXEL, ACCESS_SSBO"
#endif
#ifdef SIXTEEN_BIT_BUILD
// Storage-buffer outputs (DECLARE_OUTPUT*, WRITE*, OUTPUT_AT to read one): also read (the packed build's
// half-word stores are atomics, and the 4-binding forward reads the residual from y).
#define DECLARE_OUTPUT4(b, name, qualifier) layout(std430, binding = b) buffer name##_block { ELEMENT_QUAD name[]; };
#define DECLARE_OUTPUT1(b, name, qualifier) layout(std430, binding = b) buffer name##_block { ELEMENT_WORD name[]; };
#define WRITE4(name, q, v) STORE_QUAD(name, TENSOR_TYPE, q, v)
#define WRITE1(name, i, v) STORE_ELEMENT(name, TENSOR_TYPE, i, v)
#define OUTPUT_AT(name, i) ELEMENT_AT(name, TENSOR_TYPE, i)
#define DECLARE_STORAGE_READ1(b, name) layout(std430, binding = b) readonly buffer name##_block { ELEMENT_WORD name[]; };
#else
#define DECLARE_OUTPUT4(b, name, qualifier) layout(std430, binding = b) qualifier buffer name##_block { vec4 name[]; };
#define DECLARE_OUTPUT1(b, name, qualifier) layout(std430, binding = b) qualifier buffer name##_block { float name[]; };
#define WRITE4(name, q, v) name[q] = (v)
#define WRITE1(name, i, v) name[i] = (v)
#define OUTPUT_AT(name, i) name[i]
// A read-only storage buffer in every build (read with OUTPUT_AT): the residual.
#define DECLARE_STORAGE_READ1(b, name) layout(std430, binding = b) readonly buffer name##_block { float name[]; };
#endif

// Four consecutive elements of a register array from one vec4 (a float array; in CHANNELS4 code it is
// never reached, but must still compile).
#define SET4(seg, i, v) seg[i] = VAL(v.x), seg[(i) + 1] = VAL(v.y), seg[(i) + 2] = VAL(v.z), seg[(i) + 3] = VAL(v.w)

// floor(a / b) for b > 0, usable in constant expressions (GLSL's / truncates toward zero).
#define FLOOR_DIV(a, b) ((a) >= 0 ? (a) / (b) : -((-(a) + (b)-1) / (b)))
// a mod 4 in [0, 4) for any a >= -4096.
#define MOD4(a) uint(((a) + 4096) % 4)

// Loads LEN consecutive elements of one row of a strided tensor into `seg`, element i from column
// col0 + i (columns outside [0, WIDTH) read as 0, row_base the row's column 0 and ELEM the distance
// between columns, 1 in NCHW). A load outside the row reads column 0 and a select replaces it by 0: no
// branch around the load (branches are costly where each invocation is a SIMD lane, as on lavapipe). With
// ALIGNED (NCHW, row_base and col0 multiples of 4, WIDTH % 4 == 0) every vec4 of the segment lies wholly
// inside or outside the row and is one load; its loop counts vec4s with a unit step, which lavapipe
// unrolls early (a stride-4 loop cost it 4x the compile time).
#define LOAD_SEGMENT(seg, LEN, buf4, buf1, row_base, col0, WIDTH, ELEM, ALIGNED)                           \
    {                                                                                                    \
        if (LANE_CHANNELS == 4) {                                                                        \
            [[unroll]] for (uint i_ = 0; i_ < LEN; ++i_) {                                               \
                const int col_ = (col0) + int(i_);                                                       \
                const bool in_ = in_range(col_, WIDTH);                                                  \
                const vec4 v_ = READ4(buf4, ((row_base) + (in_ ? uint(col_) : 0u) * (ELEM)) >> 2);      \
                seg[i_] = VAL(in_ ? v_ : vec4(0.0));                                                     \
            }                                                                                            \
        } else if (ALIGNED) {                                                                            \
            [[unroll]] for (uint q_ = 0; q_ < (LEN) / 4; ++q_) {                                         \
                const uint i_ = 4 * q_;                                                                  \
                const int col_ = (col0) + int(i_);                                                       \
                const bool in_ = in_range(col_, WIDTH);                                                  \
                const vec4 v_ = READ4(buf4, ((row_base) + (in_ ? uint(col_) : 0u)) >> 2);              \
                SET4(seg, i_, (in_ ? v_ : vec4(0.0)));                                                   \
            }                                                                                            \
        } else {                                                                                         \
            [[unroll]] for (uint i_ = 0; i_ < LEN; ++i_) {                                               \
                const int col_ = (col0) + int(i_);                                                       \
                const bool in_ = in_range(col_, WIDTH);                                                  \
                const float v_ = READ1(buf1, (row_base) + (in_ ? uint(col_) : 0u) * (ELEM));             \
                seg[i_] = VAL(in_ ? v_ : 0.0);                                                           \
            }                                                                                            \
        }                                                                                                \
    }

#if defined(SIXTEEN_BIT_BUILD) && defined(ACCESS_TEXEL) && !defined(CHANNELS4)
// LOAD_SEGMENT's aligned form 8 elements a fetch, through an R32G32B32A32_UINT view of a 16-bit tensor's
// binding `buf` (NCHW; row_base, col0 and WIDTH multiples of 8): every fetch lies wholly inside or outside
// the row. Half the fetches of the 4-element view, which on lavapipe is what a 16-bit kernel's time over
// fp32's turns on (see the kernels that use it).
#define LOAD_SEGMENT8(seg, LEN, buf, row_base, col0, WIDTH)                                             \
    {                                                                                                   \
        [[unroll]] for (uint q_ = 0; q_ < (LEN) / 8; ++q_) {                                            \
            const int col_ = (col0) + int(8 * q_);                                                      \
            const bool in_ = in_range(col_, WIDTH);                                                     \
            const uvec4 bits_ = texelFetch(buf, int(((row_base) + (in_ ? uint(col_) : 0u)) >> 3));      \
            [[unroll]] for (uint h_ = 0; h_ < 4; ++h_) {                                                \
                const vec2 pair_ = in_ ? decode_pair(TENSOR_TYPE, bits_[h_]) : vec2(0.0);               \
                seg[8 * q_ + 2 * h_] = pair_.x, seg[8 * q_ + 2 * h_ + 1] = pair_.y;                     \
            }                                                                                           \
        }                                                                                               \
    }
#define HAS_LOAD_SEGMENT8
#endif
