// What the depthwise passes' recording shares (depthwise/depthwise_forward.cpp, depthwise/depthwise_backward.cpp): the
// kernels' tile shapes, their specialization constants and shader names, operand bindings for the two read
// paths, and the loop over chunks of whole images.
#pragma once

#include <string>
#include <vector>

#include "conv/constants.hpp"
#include "context/element_build.hpp"
#include "conv/depthwise/depthwise.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {

// One kernel's tile shape (the shaders' constants 16..19, see shaders/depthwise/depthwise_common.glsl).
struct DepthwiseTiles {
    uint32_t tile_w = 8, tile_h = 1;  // values per invocation along W and H
    bool vec4_x = false;              // NCHW x (or dx) rows as aligned vec4
    bool vec4_y = false;              // NCHW y (or dy) rows as aligned vec4
    bool channels4 = false;           // NHWC, 4 adjacent channels per invocation (the _c4 shaders)
    bool vec8_x = false;              // 16-bit texel reads: NCHW x rows 8 elements a fetch (backward-filter)
    bool vec8_y = false;              // the same for dy rows (backward-data and backward-filter)
    bool stream_rows = false;         // backward-data walks its tile_h rows with a ring (see the shader)
    uint32_t lane_channels() const { return channels4 ? 4 : 1; }
};

// `tiles` without vec4 loads and stores where an operand's element 0 is off a 4-float boundary (a view that
// starts mid-vec4, Operand::first): its values then move as floats.
inline DepthwiseTiles vec4_safe(DepthwiseTiles tiles, std::initializer_list<const Operand*> operands) {
    for (const Operand* op : operands)
        if (op->first % 4 != 0) tiles.vec4_x = tiles.vec4_y = tiles.channels4 = false;
    return tiles;
}

// Filter taps an invocation holds in registers before the kernels shrink their blocks (forward and
// backward-data) or split the taps (backward-filter).
constexpr int64_t kTapsInRegisters = 25;

// NHWC with one filter per channel and C % 4 == 0: values move as vec4 along C.
bool channels4(const ConvProblem& p);
// Rows per block of a kernel whose blocks span `rows` rows: taller blocks reuse more of each loaded row,
// but unroll into more code and leave invocations idle on small images.
uint32_t block_rows(const ConvProblem& p, int64_t rows);
DepthwiseTiles forward_tiles(const ConvProblem& p, uint64_t wanted_invocations, bool cpu);
// A CPU implementation (lavapipe, SwiftShader): texel reads and wide, short blocks pay there.
inline bool on_cpu(const ContextImpl& context) {
    return context.device->info().type == "CPU";
}

// The specialization constants the depthwise shaders share (geometry, sizes, tile shape), by name.
template <typename Shader>
Specialization<Shader> depthwise_specialization(const ConvProblem& p, const DepthwiseTiles& tiles) {
    using Id = typename Shader::spec;
    Specialization<Shader> spec;
    set_geometry(spec, p);
    spec.set(Id::C, p.C).set(Id::H, p.H).set(Id::W, p.W).set(Id::MULT, p.filters_per_group());
    spec.set(Id::P, p.P()).set(Id::Q, p.Q());
    spec.set(Id::TILE_W, tiles.tile_w).set(Id::TILE_H, tiles.tile_h);
    spec.set(Id::VEC4_X, tiles.vec4_x).set(Id::VEC4_Y, tiles.vec4_y);
    spec.set(Id::TENSOR_TYPE, element_constant(p.data_type));
    return spec;
}
// "depthwise_<pass>[_c4]_<texel|ssbo>[4][_s16|_p16]", as shaders/CMakeLists.txt names the variants (`four`:
// the build for devices with 4 storage buffers per stage; 16-bit problems read storage buffers).
std::string depthwise_shader(ContextImpl& context, const ConvProblem& p, const std::string& pass,
                             const DepthwiseTiles& tiles, bool texel, bool four = false);

// Backward-filter: the units of the N*P*Q reduction (output rows, or parts of rows where the rows alone
// give the device too few invocations) and the pieces one chunk's units are cut into (partial sums in the
// workspace): enough to fill the device, all of them within the binding limit.
struct DepthwiseFilterSplit {
    uint32_t splits = 1;
    uint32_t column_parts = 1;
};
DepthwiseFilterSplit depthwise_filter_split(ContextImpl& context, const ConvProblem& p, int64_t images,
                                            uint64_t limit);
// Backward-filter of a 16-bit dw in several chunks of images: dw is rounded once, so the chunks' sums
// add up in an fp32 copy of dw at the workspace's start, padded to the pool alignment (where the partial
// sums' binding starts). Its floats, 0 where dw is written straight from each chunk.
inline uint64_t depthwise_accumulator_floats(const ContextImpl& context, const ConvProblem& p, uint32_t chunks) {
    if (p.weight_gradient_type() == DataType::F32 || chunks < 2) return 0;
    return aligned_floats(uint64_t(p.filter_elements()), context.pool->alignment());
}
// Loop iterations backward-filter spends on one unit (its strips, plus the unit's own).
uint64_t depthwise_filter_unit_iterations(const ConvProblem& p, uint32_t column_parts);

inline VkDescriptorType read_descriptor(bool texel) {
    return texel ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
}
// A read-only operand bound as vec4 (rgba32f view) or as float (r32f view); plain ranges without texels.
// (16-bit elements: views of their bits, R16G16B16A16_UINT and R16_UINT, which the kernels widen.)
inline Binding read4(const BufferRange& range, bool texel, DataType type) {
    const VkFormat format = type == DataType::F32 ? VK_FORMAT_R32G32B32A32_SFLOAT : VK_FORMAT_R16G16B16A16_UINT;
    return {range, false, texel ? format : VK_FORMAT_UNDEFINED};
}
inline Binding read1(const BufferRange& range, bool texel, DataType type) {
    const VkFormat format = type == DataType::F32 ? VK_FORMAT_R32_SFLOAT : VK_FORMAT_R16_UINT;
    return {range, false, texel ? format : VK_FORMAT_UNDEFINED};
}

inline uint64_t ceil_div(int64_t a, int64_t b) {
    return uint64_t((a + b - 1) / b);
}
inline uint32_t u32(uint64_t v) {
    return static_cast<uint32_t>(v);
}

// One chunk of whole images [n0, n0 + images), with windows over its input-shaped (x or dx) and
// output-shaped (y or dy) images.
struct ImageChunk {
    int64_t n0, images;
    Window x, y;
    bool first;
};

template <typename Visit>
void for_each_image_chunk(ContextImpl& context, const ConvProblem& p, const DepthwisePlan& plan,
                          const Operand& input_like, const Operand& output_like, Visit&& visit) {
    const uint64_t x_image = uint64_t(p.C * p.H * p.W), y_image = uint64_t(p.K * p.P() * p.Q());
    const uint64_t align = context.pool->alignment();
    for (int64_t n0 = 0; n0 < p.N; n0 += plan.images) {
        const int64_t images = std::min(plan.images, p.N - n0);
        visit(ImageChunk{n0, images, window(input_like, n0 * x_image, images * x_image, align),
                         window(output_like, n0 * y_image, images * y_image, align), n0 == 0});
    }
}

}  // namespace vkconv::detail
