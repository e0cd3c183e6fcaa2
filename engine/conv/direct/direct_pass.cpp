// The direct algorithm: every pass, no workspace (but an fp32 copy of a 16-bit output whose reduction runs in
// pieces); refused where one of the problem's tensors exceeds
// maxStorageBufferRange (the passes then run direct in tiles, tiled/tiled.hpp).
// Its entry in the algorithm table (conv/algorithm_plan.hpp).
#include <array>

#include "conv/algorithm_plan.hpp"
#include "conv/direct/direct.hpp"
#include "conv/shared/whole_tensors.hpp"
#include "conv/shared/wide_output.hpp"
#include "conv/tiled/copy_run.hpp"
#include "context/element_build.hpp"

namespace vkconv::detail {
namespace {

// A backward direct kernel reading `a` and `b` into `out` (of `out_type`): `elements` outputs, each the pass's
// reduction.
template <typename Shader>
void record_backward_direct(ContextImpl& context, CommandStream& stream, const ConvProblem& p, Pass pass,
                            const Operand& a, const Operand& b, const Operand& out, DataType out_type,
                            uint64_t elements, bool add_into_out = false) {
    PipelineDesc desc;
    desc.shader = std::string(Shader::name) + element_build(context, p.data_type);
    desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(DirectSizes);
    Specialization<Shader> spec;
    set_geometry(spec, p);
    const uint32_t type = element_constant(p.data_type);
    spec.set(Shader::spec::A_TYPE, type).set(Shader::spec::B_TYPE, type).set(Shader::spec::OUT_TYPE,
                                                                             element_constant(out_type));
    desc.specialization = spec.values();
    const Window a_all = a.whole(), b_all = b.whole(), out_all = out.whole();
    const std::array<Binding, 3> bindings{Binding{a_all.range, false}, Binding{b_all.range, false},
                                          Binding{out_all.range, true}};
    DirectSizes push = direct_sizes(p);
    push.first0 = uint32_t(a_all.delta), push.first1 = uint32_t(b_all.delta), push.first2 = uint32_t(out_all.delta);
    const DirectReduction reduction = direct_reduction(p, pass);
    dispatch_direct(context, stream, context.pipelines->get(desc), bindings, push, elements, reduction.extent,
                    reduction.unit_iterations, add_into_out);
}

// Whether the pass's output is 16-bit and its reduction runs in pieces (dispatch_direct), each adding into it.
bool pieces_into_16bit(const ConvProblem& p, Pass pass) {
    const DataType out_type = pass == Pass::BackwardFilter ? p.weight_gradient_type() : p.data_type;
    return out_type != DataType::F32 && direct_reduction(p, pass).in_pieces();
}

// The elements of a 16-bit output whose reduction runs in pieces: they add up in an fp32 copy (Slot::WideOutput),
// rounded into the output once at the end.
uint64_t wide_elements(const ConvProblem& p, Pass pass) {
    if (!pieces_into_16bit(p, pass)) return 0;
    return uint64_t(pass == Pass::Forward ? p.output_elements() : pass == Pass::BackwardData ? p.input_elements()
                                                                                           : p.filter_elements());
}

// Where that copy, bound whole like every direct operand, would exceed a binding.
std::optional<Refusal> pieces_refusal_16bit(ContextImpl& context, const ConvProblem& p, Pass pass) {
    const uint64_t copy_bytes = wide_elements(p, pass) * 4, range = context.device->limits().maxStorageBufferRange;
    if (copy_bytes <= range) return std::nullopt;
    const DirectReduction reduction = direct_reduction(p, pass);
    return wide_copy_refusal("direct: a " + std::string(to_string(p.data_type)) + " " + to_string(pass) +
                       " whose reduction of " + std::to_string(reduction.extent * reduction.unit_iterations) +
                       " terms runs in pieces adds up in an fp32 copy of its output, " + std::to_string(copy_bytes) +
                       " bytes, above the device's maxStorageBufferRange (" + std::to_string(range) +
                       " bytes): " + p.str());
}

Planned<AlgorithmPlan> plan_direct_pass(ContextImpl& context, const ConvProblem& p, Pass pass, const PassOptions&) {
    if (auto refusal = whole_tensors_refusal(context, p, "direct")) return *refusal;
    if (auto refusal = pieces_refusal_16bit(context, p, pass)) return *refusal;
    // The forward kernel binds x, w, the bias and y (and the epilogue's residual where the device allows
    // more than 4 storage buffers; else it reads z from y); the backward ones three.
    const uint32_t storage_buffers = pass == Pass::Forward ? 4 : 3;
    if (auto refusal = descriptor_refusal(storage_buffer_shortfall(
            *context.device, "the direct " + std::string(to_string(pass)) + " kernel", storage_buffers)))
        return *refusal;
    AlgorithmPlan plan;
    plan.pass = pass;
    plan.algorithm = Algorithm::Direct;
    plan.slot(Slot::WideOutput) = wide_elements(p, pass);
    return plan;
}

void record_direct_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                        const ConvOperands& ops, Workspace workspace) {
    switch (plan.pass) {
        case Pass::Forward:
            record_direct_forward(context, stream, p, ops, plan.own_slot(workspace, Slot::WideOutput));
            break;
        case Pass::BackwardData: {
            // A 16-bit dx in pieces: summed in its fp32 copy (from what dx holds, where the pass adds into it),
            // rounded into dx once.
            const Operand wide = plan.own_slot(workspace, Slot::WideOutput);
            const uint64_t elements = uint64_t(p.input_elements());
            if (wide && ops.add_into_dx)
                record_run(context, stream, ops.input, 0, wide, 0, elements, false, p.data_type, DataType::F32);
            record_backward_direct<contract::conv2d_backward_data_direct>(
                context, stream, p, plan.pass, ops.output, ops.filter, wide ? wide : ops.input,
                wide ? DataType::F32 : p.data_type, elements, ops.add_into_dx);
            round_wide_output(context, stream, wide, ops.input, elements, p.data_type);
            break;
        }
        case Pass::BackwardFilter: {
            // A 16-bit dw in pieces: summed in its fp32 copy, rounded into dw once.
            const Operand wide = plan.own_slot(workspace, Slot::WideOutput);
            const uint64_t elements = uint64_t(p.filter_elements());
            record_backward_direct<contract::conv2d_backward_filter_direct>(
                context, stream, p, plan.pass, ops.input, ops.output, wide ? wide : ops.filter,
                wide ? DataType::F32 : p.weight_gradient_type(), elements);
            round_wide_output(context, stream, wide, ops.filter, elements, p.weight_gradient_type());
            break;
        }
        case Pass::BackwardBias:
            break;  // the bias gradient alone (plan_algorithm)
    }
}

}  // namespace

extern const AlgorithmEntry direct_algorithm{.plan = plan_direct_pass,
                                             .record = record_direct_pass,
                                             .passes_16bit = kConvPasses};

}  // namespace vkconv::detail
