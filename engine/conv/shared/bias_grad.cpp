#include "conv/shared/bias_grad.hpp"

#include <algorithm>
#include <array>
#include <string>

#include "context/element_build.hpp"
#include "gemm/splitk_reduce.hpp"
#include "gemm/gemm_config.hpp"
#include "vulkan/dispatch.hpp"
#include "vulkan/shader_limits.hpp"

namespace vkconv::detail {
namespace {

struct BiasPush {
    uint32_t dy_offset, positions, piece, accumulate, first_piece, db_offset;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(BiasPush, bias_grad)
VKCONV_PUSH_MEMBER(BiasPush, bias_grad, positions)
VKCONV_PUSH_MEMBER(BiasPush, bias_grad, piece)
VKCONV_PUSH_MEMBER(BiasPush, bias_grad, accumulate)
VKCONV_PUSH_MEMBER(BiasPush, bias_grad, first_piece)
VKCONV_PUSH_MEMBER(BiasPush, bias_grad, db_offset)

}  // namespace

int64_t bias_pieces_for_loop_limit(const ConvProblem& p, int64_t images) {
    const int64_t positions = images * p.P() * p.Q();
    return std::max<int64_t>(1, (positions + kMaxLoopIterations - 1) / kMaxLoopIterations);
}

Planned<BiasPlan> plan_bias_grad(ContextImpl& context, const ConvProblem& p, uint64_t max_binding_bytes) {
    const uint64_t y_image = uint64_t(p.K * p.P() * p.Q()), align = context.pool->alignment();
    const uint64_t image_bytes = y_image * element_bytes(p.data_type);
    uint64_t limit = context.device->limits().maxStorageBufferRange;
    if (max_binding_bytes) limit = std::min(limit, max_binding_bytes);
    if (image_bytes + align > limit)
        return unsupported("one image of grad_output (" + std::to_string(image_bytes) +
                           " bytes) exceeds the binding limit of " + std::to_string(limit) + " bytes");
    BiasPlan plan;
    plan.images = std::max<int64_t>(1, std::min<int64_t>(p.N, int64_t((limit - align) / image_bytes)));
    const bool sixteen = p.weight_gradient_type() != DataType::F32;  // db rounded to 16 bits (once)
    // Enough (piece, channel) invocations to keep the device's loads in flight (a memory-bound sum; on a CPU
    // device four workgroups per thread: measured on lavapipe, fewer leave the long per-invocation sums
    // latency-bound), each summing at least 256 positions.
    const GemmConfigTable& fill = gemm_configs(context);
    const int64_t wanted = int64_t(std::max(fill.wanted_invocations, 4 * fill.wanted_workgroups * kElementwiseWorkgroup));
    const int64_t positions = plan.images * p.P() * p.Q();
    plan.pieces = std::clamp<int64_t>((wanted + p.K - 1) / p.K, 1, std::max<int64_t>(1, positions / 256));
    // No invocation may loop over more positions than lavapipe lets it (shader_limits.hpp).
    plan.pieces = std::max<int64_t>(plan.pieces, bias_pieces_for_loop_limit(p, plan.images));
    plan.partial_floats = plan.pieces > 1 || sixteen ? uint64_t(plan.pieces * p.K) : 0;
    // A 16-bit db is rounded once: fp32 partial sums always, and over several chunks an fp32 sum of the
    // chunks ahead of them (padded to the alignment, where the partial sums' binding starts).
    if (sixteen && plan.images < p.N) plan.accumulator_floats = aligned_floats(uint64_t(p.K), align);
    plan.partial_floats += plan.accumulator_floats;
    return plan;
}

void record_bias_grad(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const BiasPlan& plan,
                      const Operand& dy, const Operand& db, const Operand& partials) {
    const uint64_t y_image = uint64_t(p.K * p.P() * p.Q()), align = context.pool->alignment();
    // A 16-bit db: partial sums, then one rounding (plan_bias_grad). An fp32 one (of an fp32 problem, or
    // ConvProblem::fp32_weight_gradients) is summed into in place.
    const DataType db_type = p.weight_gradient_type();
    const bool sixteen = db_type != DataType::F32;
    // Every chunk's window starts a whole number of images in, so K % 4 == 0 keeps its delta vec4-aligned
    // (with dy's element 0 on a 4-float boundary: a view may start mid-vec4). fp32 dy only.
    const bool channels4 =
        p.data_type == DataType::F32 && p.layout == Layout::NHWC && p.K % 4 == 0 && dy.first % 4 == 0;
    // The kernel writing out of `out_type`: db's, or fp32 partial sums.
    auto pipeline_for = [&](DataType out_type) -> const Pipeline& {
        PipelineDesc desc;
        desc.shader = "bias_grad" + element_build(context, p.data_type);
        desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
        desc.push_constant_bytes = sizeof(BiasPush);
        using Id = contract::bias_grad::spec;
        desc.specialization = Specialization<contract::bias_grad>()
                                  .set(Id::LOCAL_SIZE_X, kElementwiseWorkgroup)
                                  .set(Id::K, p.K)
                                  .set(Id::PQ, p.P() * p.Q())
                                  .set(Id::NHWC, p.layout == Layout::NHWC)
                                  .set(Id::CHANNELS4, channels4)
                                  .set(Id::DY_TYPE, element_constant(p.data_type))
                                  .set(Id::OUT_TYPE, element_constant(out_type))
                                  .values();
        return context.pipelines->get(desc);
    };
    const Pipeline& pipeline = pipeline_for(db_type);
    const Pipeline& partial_pipeline = sixteen ? pipeline_for(DataType::F32) : pipeline;
    const uint64_t lanes = channels4 ? uint64_t(p.K / 4) : uint64_t(p.K);
    const Window db_all = db.whole();
    for (int64_t n0 = 0; n0 < p.N; n0 += plan.images) {
        const int64_t images = std::min(plan.images, p.N - n0);
        const Window w = window(dy, n0 * y_image, images * y_image, align);
        const int64_t positions = images * p.P() * p.Q();
        const int64_t piece = (positions + plan.pieces - 1) / plan.pieces;
        const int64_t pieces = (positions + piece - 1) / piece;
        BiasPush push{static_cast<uint32_t>(w.delta),
                      static_cast<uint32_t>(positions),
                      static_cast<uint32_t>(piece),
                      0,
                      0,
                      0,
                      0,
                      0};
        if (!sixteen && (pieces == 1 || plan.in_place)) {
            // Straight into db, one piece after another, each adding to the pieces and chunks before it.
            const std::array<Binding, 3> bindings{Binding{w.range, false}, Binding{db_all.range, true},
                                                  Binding{w.range, false}};
            push.db_offset = static_cast<uint32_t>(db_all.delta);
            for (int64_t s = 0; s < pieces; ++s) {
                push.accumulate = n0 > 0 || s > 0 ? 1u : 0u;
                push.first_piece = static_cast<uint32_t>(s);
                const uint64_t adds = uint64_t(std::min(piece, positions - s * piece)) * uint64_t(p.K);
                dispatch_elements(stream, pipeline, bindings, push, lanes, {double(adds) / double(lanes),
                                                                            (adds + lanes - 1) / lanes});
            }
        } else {
            // Partial sums of every piece at once, added in order (into db, or the chunks' fp32 sum).
            const BufferRange all = partials.whole().range;  // workspace: element 0 at its start
            const BufferRange sums{all.buffer, all.offset + plan.accumulator_floats * 4, uint64_t(plan.pieces * p.K) * 4};
            const std::array<Binding, 3> bindings{Binding{w.range, false}, Binding{sums, true},
                                                  Binding{w.range, false}};
            const uint64_t adds = uint64_t(positions) * uint64_t(p.K), invocations = uint64_t(pieces) * lanes;
            dispatch_elements(stream, partial_pipeline, bindings, push, invocations,
                              {double(adds) / double(invocations), (adds + invocations - 1) / invocations});
            if (plan.accumulator_floats)
                record_splitk_reduce(context, stream, sums, {all.buffer, all.offset, uint64_t(p.K) * 4}, 0,
                                     uint64_t(p.K), pieces, n0 > 0);
            else
                record_splitk_reduce(context, stream, sums, db_all.range, db_all.delta, uint64_t(p.K), pieces, n0 > 0,
                                     db_type);
        }
    }
    if (plan.accumulator_floats) {
        const BufferRange all = partials.whole().range;
        record_splitk_reduce(context, stream, {all.buffer, all.offset, uint64_t(p.K) * 4}, db_all.range, db_all.delta,
                             uint64_t(p.K), 1, false, db_type);
    }
}
}  // namespace vkconv::detail
