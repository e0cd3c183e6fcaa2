#include "gemm/gemm.hpp"

#include "gemm/splitk_reduce.hpp"
#include "gemm/tuning.hpp"

#include <algorithm>
#include <span>
#include <array>
#include <string>

#include "context/element_build.hpp"
#include "vulkan/shader_limits.hpp"

namespace vkconv::detail {
namespace {

struct GemmPush {
    uint32_t M, N, K;
    uint32_t a_offset, a_stride_m, a_stride_k, a_batch_i, a_batch_j;
    uint32_t b_offset, b_stride_k, b_stride_n, b_batch_i, b_batch_j;
    uint32_t c_offset, c_stride_m, c_stride_n, c_batch_i, c_batch_j;
    uint32_t batch_j_count, batch_base;
    uint32_t a_k_segment, a_k_segment_stride;
    uint32_t a_m_segment, a_m_segment_stride;
    float alpha, beta;
    uint32_t bias_offset;
    float negative_slope;
    uint32_t residual_shift;
};
VKCONV_PUSH_SIZE(GemmPush, gemm_registers)
VKCONV_PUSH_SIZE(GemmPush, gemm_shared)
VKCONV_PUSH_MEMBER(GemmPush, gemm_registers, a_offset)
VKCONV_PUSH_MEMBER(GemmPush, gemm_registers, b_offset)
VKCONV_PUSH_MEMBER(GemmPush, gemm_registers, c_offset)
VKCONV_PUSH_MEMBER(GemmPush, gemm_registers, batch_j_count)
VKCONV_PUSH_MEMBER(GemmPush, gemm_registers, a_k_segment)
VKCONV_PUSH_MEMBER(GemmPush, gemm_registers, a_m_segment)
VKCONV_PUSH_MEMBER(GemmPush, gemm_registers, alpha)
VKCONV_PUSH_MEMBER(GemmPush, gemm_registers, bias_offset)
VKCONV_PUSH_MEMBER(GemmPush, gemm_registers, residual_shift)

// One id map for both kernels: what they share (gemm_common.glsl) has the same id in each.
#define VKCONV_SAME_GEMM_ID(name) \
    static_assert(contract::gemm_registers::spec::name == contract::gemm_shared::spec::name, #name);
VKCONV_SAME_GEMM_ID(LOCAL_SIZE_X)
VKCONV_SAME_GEMM_ID(LOCAL_SIZE_Y)
VKCONV_SAME_GEMM_ID(TM)
VKCONV_SAME_GEMM_ID(TN)
VKCONV_SAME_GEMM_ID(HAS_BIAS)
VKCONV_SAME_GEMM_ID(K_SEGMENTED)
VKCONV_SAME_GEMM_ID(M_SEGMENTED)
VKCONV_SAME_GEMM_ID(ACTIVATION)
VKCONV_SAME_GEMM_ID(HAS_RESIDUAL)
VKCONV_SAME_GEMM_ID(A_TYPE)
VKCONV_SAME_GEMM_ID(B_TYPE)
VKCONV_SAME_GEMM_ID(C_TYPE)
VKCONV_SAME_GEMM_ID(BIAS_TYPE)
#undef VKCONV_SAME_GEMM_ID

// The constants both kernels share: workgroup size, register block, bias, segments and the epilogue.
template <typename Kernel>
Specialization<Kernel> common_specialization(const GemmConfig& config, const GemmProblem& p) {
    using Id = typename Kernel::spec;
    Specialization<Kernel> spec;
    spec.set(Id::LOCAL_SIZE_X, config.wg_n).set(Id::LOCAL_SIZE_Y, config.wg_m);
    spec.set(Id::TM, config.tm).set(Id::TN, config.tn);
    spec.set(Id::HAS_BIAS, p.bias.size > 0).set(Id::K_SEGMENTED, p.a_k_segment != 0);
    spec.set(Id::M_SEGMENTED, p.a_m_segment != 0);
    spec.set(Id::ACTIVATION, static_cast<uint32_t>(p.activation)).set(Id::HAS_RESIDUAL, p.residual.size > 0);
    spec.set(Id::A_TYPE, element_constant(p.a.type)).set(Id::B_TYPE, element_constant(p.b.type));
    spec.set(Id::C_TYPE, element_constant(p.c.type)).set(Id::BIAS_TYPE, element_constant(p.bias_type));
    return spec;
}
static_assert(sizeof(GemmPush) <= 128);

uint32_t u32(uint64_t value, const char* what) {
    if (value > UINT32_MAX) throw Error(ErrorCategory::Unsupported, std::string("GEMM ") + what + " exceeds 32 bits");
    return static_cast<uint32_t>(value);
}

bool multiple_of_4(std::initializer_list<uint64_t> values) {
    return std::all_of(values.begin(), values.end(), [](uint64_t v) { return v % 4 == 0; });
}

}  // namespace

// The type whose build runs the product: a 16-bit one where any operand is 16-bit (the 16-bit builds read
// fp32 operands too), else fp32.
DataType gemm_build_type(const GemmProblem& p) {
    for (DataType type : {p.a.type, p.b.type, p.c.type, p.bias_type})
        if (type != DataType::F32) return type;
    return DataType::F32;
}

bool texel_views_fit(const Device& device, const GemmProblem& problem) {
    const uint64_t most = device.limits().maxTexelBufferElements;  // r32f texels: the larger of the two views
    // An application's buffer is never viewed as texels: its usage may not allow it. Texel views are fp32
    // formats: 16-bit operands are read as storage buffers.
    if (gemm_build_type(problem) != DataType::F32) return false;
    return (problem.a.range.size + 3) / 4 <= most && (problem.b.range.size + 3) / 4 <= most &&
           !device.foreign_buffer(problem.a.range.buffer) && !device.foreign_buffer(problem.b.range.buffer);
}

const GemmConfig& choose_gemm_config(ContextImpl& context, const GemmProblem& problem) {
    const GemmConfigTable& table = gemm_configs(context);
    // A winner `vkconv tune` stored for this shape, where the device still has it.
    if (context.tuning)
        if (auto name = context.tuning->gemm(problem.M, problem.N, problem.K, uint64_t{problem.batch_i} * problem.batch_j))
            for (const GemmConfig& c : table.all)
                if (c.name == *name)
                    return c.access == GemmAccess::StorageBuffer || texel_views_fit(*context.device, problem)
                               ? c
                               : storage_buffer_twin(table, c);
    const GemmConfig& preferred =
        pick_gemm_config(table, problem.M, problem.N, uint64_t{problem.batch_i} * problem.batch_j);
    if (preferred.access == GemmAccess::StorageBuffer || texel_views_fit(*context.device, problem)) return preferred;
    return storage_buffer_twin(table, preferred);
}

namespace {

// lavapipe ends a shader's loops after 65535 iterations per invocation (shader_limits.hpp): a longer
// reduction runs as GEMMs over pieces of K (whole segments of A), in order, each after the first
// adding into C. The first piece reads the residual and adds the bias, the last applies the activation.
// Returns false (recording nothing) where K fits in one piece.
bool record_in_k_pieces(ContextImpl& context, CommandStream& stream, const GemmProblem& p, const GemmConfig* forced) {
    const uint32_t k_unit = p.a_k_segment ? p.a_k_segment : 1;
    const uint32_t k_piece = std::max(k_unit, kMaxLoopIterations / k_unit * k_unit);
    if (!(p.K > kMaxLoopIterations && k_piece < p.K)) return false;
    // Each piece after the first adds into C: a 16-bit C would be rounded once a piece. The passes plan fp32
    // outputs (or refuse) for reductions this long; the public gemm splits them along K (fp32 partial
    // products) where it can, and refuses here where it cannot.
    if (p.c.type != DataType::F32)
        throw Error(ErrorCategory::Unsupported, "a GEMM with a 16-bit C and a reduction of " + std::to_string(p.K) +
                                                    " runs in pieces, each rounding C");
    for (uint32_t k0 = 0; k0 < p.K; k0 += k_piece) {
        GemmProblem part = p;
        part.K = std::min(k_piece, p.K - k0);
        part.a.offset += p.a_k_segment ? uint64_t(k0 / k_unit) * p.a_k_segment_stride : uint64_t(k0) * p.a.stride_col;
        part.b.offset += uint64_t(k0) * p.b.stride_row;
        if (k0 > 0) {
            part.beta = 1.0f;
            part.bias = {};      // added once, with the first piece
            part.residual = {};  // read once, by the first piece (it may be C itself)
        }
        if (k0 + part.K < p.K) part.activation = Activation::None;  // applied once, by the last piece
        record_gemm(context, stream, part, forced);
    }
    return true;
}

// The configuration to run: the forced one, or the context's choice. A forced texel configuration runs as
// its storage-buffer twin where texel views cannot be used.
const GemmConfig& config_to_run(ContextImpl& context, const GemmProblem& p, const GemmConfig* forced) {
    if (!forced) return choose_gemm_config(context, p);
    return forced->access == GemmAccess::StorageBuffer || texel_views_fit(*context.device, p)
               ? *forced
               : storage_buffer_twin(gemm_configs(context), *forced);
}

// The storage-buffer path binds 7 storage buffers: A and B twice (as scalars and vec4), C, the bias and
// the residual. A device that allows fewer runs its 4-binding build (gemm_common.glsl's FOUR_BINDINGS:
// A, B, C and one of the bias and the residual).
bool uses_four_bindings(const ContextImpl& context, const GemmConfig& config) {
    return config.access == GemmAccess::StorageBuffer &&
           context.device->limits().maxPerStageDescriptorStorageBuffers < 7;
}

// The 4-binding build cannot bind both the bias and the residual. An in-place residual (C's own values) is
// beta * C with the bias binding: one product. Otherwise a first product over K = 0 writes the bias into C
// (exactly, in any type of C), and the second, binding the residual, adds the bias term from C: each value
// is the same fp32 sum of the same terms in the same order as the fused form's, rounded to C's type once.
void record_residual_then_bias(ContextImpl& context, CommandStream& stream, const GemmProblem& p,
                               const GemmConfig& config) {
    const uint64_t c_bytes = element_bytes(p.c.type);
    if (p.residual.buffer == p.c.range.buffer &&
        p.residual.offset + p.residual_offset * c_bytes == p.c.range.offset + p.c.offset * c_bytes) {
        GemmProblem in_place = p;
        in_place.residual = {};
        return record_gemm(context, stream, in_place, &config);
    }
    GemmProblem first = p;
    first.K = 0;
    first.alpha = 1.0f, first.beta = 0.0f;
    first.residual = {};
    first.activation = Activation::None;
    record_gemm(context, stream, first, &config);
    record_gemm(context, stream, p, &config, true);
}

// A's reduction segments as the shader sees them: without segments, one segment spans all of K.
struct KSegments {
    uint32_t length, stride;
};
KSegments k_segments(const GemmProblem& p) {
    const uint32_t segment = p.a_k_segment ? p.a_k_segment : std::max<uint32_t>(p.K, 1);
    return {segment, p.a_k_segment ? p.a_k_segment_stride : segment};
}

// Which operands the shader may read as vec4, along which dimension.
struct VectorLoads {
    bool a_vec4_k, a_vec4_m, b_vec4_k, b_vec4_n;
};

// vec4 loads need every offset a vec4 load can start from to be a multiple of 4 floats.
VectorLoads vector_loads(const GemmProblem& p, KSegments segments) {
    const auto& a = p.a;
    const auto& b = p.b;
    // (With row segments, every segment's origin moves by a_m_segment_stride: it must keep alignment too.)
    const bool a_offsets = multiple_of_4({a.offset, a.batch_i, a.batch_j, p.a_m_segment ? p.a_m_segment_stride : 0});
    const bool b_offsets = multiple_of_4({b.offset, b.batch_i, b.batch_j});
    VectorLoads loads;
    loads.a_vec4_k = a.stride_col == 1 && a_offsets && multiple_of_4({a.stride_row, p.K, segments.length, segments.stride});
    // (Row segments must hold whole vec4s; a_offsets checked their stride.)
    loads.a_vec4_m = !loads.a_vec4_k && p.a_m_segment % 4 == 0 && a.stride_row == 1 && a_offsets &&
                     multiple_of_4({a.stride_col, p.M, p.a_k_segment ? segments.stride : 0});
    loads.b_vec4_k = b.stride_row == 1 && b_offsets && multiple_of_4({b.stride_col, p.K});
    // (Along M or N the last vec4 must not run past the matrix: M or N a multiple of 4 too.)
    loads.b_vec4_n = !loads.b_vec4_k && b.stride_col == 1 && b_offsets && multiple_of_4({b.stride_row, p.N});
    return loads;
}

// The pipeline of the configuration's kernel (its 4-binding build where `four`), specialised for p.
PipelineDesc gemm_pipeline_desc(const ContextImpl& context, const GemmConfig& config, const GemmProblem& p, bool four,
                                VectorLoads loads) {
    PipelineDesc desc;
    desc.shader = config.shader();
    if (four) desc.shader.replace(desc.shader.find("_ssbo"), 5, "_ssbo4");
    desc.shader += element_build(context, gemm_build_type(p));
    const VkDescriptorType operand_type =
        config.access == GemmAccess::StorageTexel   ? VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER
        : config.access == GemmAccess::UniformTexel ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                                    : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    desc.bindings = {operand_type,
                     operand_type,
                     operand_type,
                     operand_type,
                     VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                     VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                     VK_DESCRIPTOR_TYPE_STORAGE_BUFFER};
    if (four) desc.bindings.assign(4, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(GemmPush);
    if (config.kernel == GemmKernel::Registers) {
        using Id = contract::gemm_registers::spec;
        auto spec = common_specialization<contract::gemm_registers>(config, p);
        spec.set(Id::A_VEC4_K, loads.a_vec4_k).set(Id::A_VEC4_M, loads.a_vec4_m);
        spec.set(Id::B_VEC4_K, loads.b_vec4_k).set(Id::B_VEC4_N, loads.b_vec4_n);
        desc.specialization = spec.values();
    } else {
        using Id = contract::gemm_shared::spec;
        const bool a_k_fast = p.a.stride_col == 1, b_n_fast = p.b.stride_col == 1;
        auto spec = common_specialization<contract::gemm_shared>(config, p);
        spec.set(Id::BK, config.bk).set(Id::A_K_FAST, a_k_fast).set(Id::B_N_FAST, b_n_fast);
        spec.set(Id::STAGES, config.stages);
        spec.set(Id::A_VEC4, a_k_fast ? loads.a_vec4_k : loads.a_vec4_m)
            .set(Id::B_VEC4, b_n_fast ? loads.b_vec4_n : loads.b_vec4_k);
        desc.specialization = spec.values();
    }
    return desc;
}

// Both binding sets a GEMM may bind; view() picks the one its build declares.
struct GemmBindings {
    std::array<Binding, 7> all;
    std::array<Binding, 4> compact;  // the 4-binding build: A, B, C, and the bias or the residual
    std::span<const Binding> view(bool four) const {
        return four ? std::span<const Binding>(compact) : std::span<const Binding>(all);
    }
};

GemmBindings gemm_bindings(const GemmProblem& p, bool texel) {
    const VkFormat vec4 = texel ? VK_FORMAT_R32G32B32A32_SFLOAT : VK_FORMAT_UNDEFINED;
    const VkFormat scalar = texel ? VK_FORMAT_R32_SFLOAT : VK_FORMAT_UNDEFINED;
    // Without a bias (a residual) the shader never reads binding 5 (6), but it must be bound: C stands in
    // (read-only use).
    const BufferRange bias = p.bias.size > 0 ? p.bias : p.c.range;
    const BufferRange residual = p.residual.size > 0 ? p.residual : p.c.range;
    return {{Binding{p.a.range, false, vec4}, Binding{p.a.range, false, scalar}, Binding{p.b.range, false, vec4},
             Binding{p.b.range, false, scalar}, Binding{p.c.range, true}, Binding{bias, false},
             Binding{residual, false}},
            // (the residual where the product has one, else the bias: record_residual_then_bias)
            {Binding{p.a.range, false}, Binding{p.b.range, false}, Binding{p.c.range, true},
             Binding{p.residual.size > 0 ? residual : bias, false}}};
}

// The push constants every dispatch of p shares; the grid split sets M, N, the offsets and the batch base.
GemmPush shared_push(const GemmProblem& p, KSegments segments) {
    const auto& a = p.a;
    const auto& b = p.b;
    GemmPush push{};
    push.K = p.K;
    push.a_stride_m = u32(a.stride_row, "stride"), push.a_stride_k = u32(a.stride_col, "stride");
    // A batch level of one entry never steps: its stride may be anything (MEC's window step for the
    // largest stride a problem allows is past 32 bits), and 0 is what the shader then multiplies.
    auto batch_stride = [](uint64_t stride, uint32_t count) { return u32(count > 1 ? stride : 0, "batch stride"); };
    push.a_batch_i = batch_stride(a.batch_i, p.batch_i), push.a_batch_j = batch_stride(a.batch_j, p.batch_j);
    push.b_stride_k = u32(b.stride_row, "stride"), push.b_stride_n = u32(b.stride_col, "stride");
    push.b_batch_i = batch_stride(b.batch_i, p.batch_i), push.b_batch_j = batch_stride(b.batch_j, p.batch_j);
    push.c_stride_m = u32(p.c.stride_row, "stride"), push.c_stride_n = u32(p.c.stride_col, "stride");
    push.c_batch_i = batch_stride(p.c.batch_i, p.batch_i), push.c_batch_j = batch_stride(p.c.batch_j, p.batch_j);
    push.batch_j_count = p.batch_j;
    push.a_k_segment = segments.length, push.a_k_segment_stride = segments.stride;
    // Without m segments, one segment spans every row (and the grid split below moves whole rows).
    push.a_m_segment = p.a_m_segment ? p.a_m_segment : UINT32_MAX;
    push.a_m_segment_stride = p.a_m_segment_stride;
    push.alpha = p.alpha, push.beta = p.beta;
    push.bias_offset = u32(p.bias_offset, "bias offset");
    push.negative_slope = p.negative_slope;
    // The residual's index of C(m, n) is C's index plus this, modulo 2^32 (the grid splits below move C's
    // origin, and the residual's with it).
    push.residual_shift = static_cast<uint32_t>(p.residual_offset - p.c.offset);
    return push;
}

// Records p's dispatches, splitting the grid where it exceeds the workgroup-count limits: in M and N by
// moving the operands' origins (tile-sized steps keep vec4 alignment), in the batch by its base index.
void dispatch_split_grid(ContextImpl& context, CommandStream& stream, const GemmProblem& p, const GemmConfig& config,
                         const Pipeline& pipeline, std::span<const Binding> bindings, GemmPush push) {
    const uint64_t max_x = context.device->max_workgroups(0), max_y = context.device->max_workgroups(1),
                   max_z = context.device->max_workgroups(2);
    const uint64_t step_n = max_x * config.tile_n(), step_m = max_y * config.tile_m();
    const uint64_t batches = uint64_t{p.batch_i} * p.batch_j;
    // A grid split in M must start at a segment boundary so later rows keep their segment positions.
    const uint64_t step_m_rows = p.a_m_segment ? std::max<uint64_t>(step_m / p.a_m_segment, 1) * p.a_m_segment : step_m;
    auto row_offset = [&](uint64_t m) {
        return p.a_m_segment ? m / p.a_m_segment * p.a_m_segment_stride + m % p.a_m_segment * p.a.stride_row
                             : m * p.a.stride_row;
    };
    if ((step_m_rows + config.tile_m() - 1) / config.tile_m() > max_y)
        throw Error(ErrorCategory::Unsupported, "GEMM row segments of " + std::to_string(p.a_m_segment) +
                                                    " rows exceed one dispatch's workgroup limit");
    for (uint64_t m0 = 0; m0 < p.M; m0 += step_m_rows) {
        for (uint64_t n0 = 0; n0 < p.N; n0 += step_n) {
            for (uint64_t z0 = 0; z0 < batches; z0 += max_z) {
                const uint64_t m_count = std::min<uint64_t>(step_m_rows, p.M - m0);
                const uint64_t n_count = std::min<uint64_t>(step_n, p.N - n0);
                push.M = static_cast<uint32_t>(m_count), push.N = static_cast<uint32_t>(n_count);
                push.a_offset = u32(p.a.offset + row_offset(m0), "offset");
                push.b_offset = u32(p.b.offset + n0 * p.b.stride_col, "offset");
                push.c_offset = u32(p.c.offset + m0 * p.c.stride_row + n0 * p.c.stride_col, "offset");
                push.bias_offset = u32(p.bias_offset + n0, "bias offset");
                push.batch_base = static_cast<uint32_t>(z0);
                const uint64_t dispatch_batches = std::min<uint64_t>(max_z, batches - z0);
                stream.note_work(2 * m_count * n_count * p.K * dispatch_batches, uint64_t{config.tm} * config.tn * p.K);
                stream.dispatch(pipeline, bindings, &push,
                                static_cast<uint32_t>((n_count + config.tile_n() - 1) / config.tile_n()),
                                static_cast<uint32_t>((m_count + config.tile_m() - 1) / config.tile_m()),
                                static_cast<uint32_t>(std::min<uint64_t>(max_z, batches - z0)));
            }
        }
    }
}

}  // namespace

void record_gemm(ContextImpl& context, CommandStream& stream, const GemmProblem& p, const GemmConfig* forced,
                 bool bias_in_c) {
    if (p.M == 0 || p.N == 0 || p.batch_i == 0 || p.batch_j == 0) return;
    if (record_in_k_pieces(context, stream, p, forced)) return;
    const GemmConfig& config = config_to_run(context, p, forced);
    const bool four = uses_four_bindings(context, config);
    if (four && p.bias.size > 0 && p.residual.size > 0 && !bias_in_c)
        return record_residual_then_bias(context, stream, p, config);
    stream.note_gemm({p.M, p.N, p.K, p.batch_i * p.batch_j});
    const KSegments segments = k_segments(p);
    const Pipeline& pipeline =
        context.pipelines->get(gemm_pipeline_desc(context, config, p, four, vector_loads(p, segments)));
    const GemmBindings bindings = gemm_bindings(p, config.access != GemmAccess::StorageBuffer);
    dispatch_split_grid(context, stream, p, config, pipeline, bindings.view(four), shared_push(p, segments));
}

GemmSplit plan_gemm_split(ContextImpl& context, const GemmProblem& p, const GemmConfig* forced) {
    GemmSplit split;
    const uint64_t batches = uint64_t{p.batch_i} * p.batch_j;
    const bool plain = p.a_k_segment == 0 && p.bias.size == 0 && p.residual.size == 0 &&
                       p.activation == Activation::None && p.batch_j == 1 && p.c.stride_col == 1 &&
                       p.c.stride_row == p.N && (p.batch_i == 1 || p.c.batch_i == uint64_t{p.M} * p.N);
    if (!plain || p.M == 0 || p.N == 0 || p.K == 0) return split;
    const GemmConfigTable& table = gemm_configs(context);
    const GemmConfig& config = forced ? *forced : choose_gemm_config(context, p);
    const uint64_t tiles =
        (p.M + config.tile_m() - 1) / config.tile_m() * ((p.N + config.tile_n() - 1) / config.tile_n()) * batches;
    if (tiles >= table.wanted_workgroups) return split;
    // Slices of at least 128 along K: the partial products and their sum then cost little beside the product.
    constexpr uint64_t kMinPiece = 128;
    uint64_t slices = std::min((table.wanted_workgroups + tiles - 1) / tiles, std::max<uint64_t>(1, p.K / kMinPiece));
    const uint64_t product = uint64_t{p.M} * p.N * batches;
    const uint64_t range = context.device->limits().maxStorageBufferRange;
    while (slices > 1 && slices * product * 4 > range) --slices;
    if (slices <= 1) return split;
    uint64_t piece = (p.K + slices - 1) / slices;
    piece = (piece + 3) / 4 * 4;
    slices = (p.K + piece - 1) / piece;
    if (slices <= 1) return split;
    split.slices = static_cast<uint32_t>(slices);
    split.piece = static_cast<uint32_t>(piece);
    split.partial_floats = slices * product;
    return split;
}

void record_split_gemm(ContextImpl& context, CommandStream& stream, const GemmProblem& p, const GemmSplit& split,
                       const BufferRange& partials, const GemmConfig* config) {
    if (split.slices <= 1) return record_gemm(context, stream, p, config);
    const uint64_t product = uint64_t{p.M} * p.N * p.batch_i;
    const uint32_t full = p.K / split.piece, rest = p.K - full * split.piece;
    // The slices' partial products, alpha applied: slice s of batch b at s * product + b * M * N.
    GemmProblem slice = p;
    slice.c = {partials, 0, p.N, 1, uint64_t{p.M} * p.N, product, DataType::F32};
    slice.beta = 0.0f;
    slice.K = split.piece;
    slice.batch_j = full;
    slice.a.batch_j = uint64_t{split.piece} * p.a.stride_col;
    slice.b.batch_j = uint64_t{split.piece} * p.b.stride_row;
    record_gemm(context, stream, slice, config);
    if (rest > 0) {
        GemmProblem last = slice;
        last.K = rest, last.batch_j = 1;
        last.a.offset += uint64_t{full} * slice.a.batch_j, last.b.offset += uint64_t{full} * slice.b.batch_j;
        last.c.offset = uint64_t{full} * product;
        record_gemm(context, stream, last, config);
    }
    // C = beta * C + the slices in order (fp32 partial products: a 16-bit C is rounded once, here).
    record_splitk_reduce(context, stream, partials, p.c.range, p.c.offset, product, int64_t(full + (rest > 0)), p.beta,
                         p.c.type);
}

}  // namespace vkconv::detail
