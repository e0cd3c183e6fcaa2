// The direct algorithm: every pass, no workspace; refused where one of the problem's tensors exceeds
// maxStorageBufferRange (the passes then run direct in tiles, tiled/tiled.hpp).
// Its entry in the algorithm table (conv/algorithm_plan.hpp).
#include <array>

#include "conv/algorithm_plan.hpp"
#include "conv/direct/direct.hpp"
#include "conv/shared/whole_tensors.hpp"
#include "conv/shared/wide_output.hpp"
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

// A 16-bit output would be rounded once per piece. dw's pieces add into an fp32 copy of dw instead (the
// filter tensor's elements, in fp32); forward's and backward-data's would need a copy of a whole activation, and
// are refused (implicit-gemm runs them).
std::optional<Refusal> pieces_refusal_16bit(ContextImpl& context, const ConvProblem& p, Pass pass) {
    if (!pieces_into_16bit(p, pass)) return std::nullopt;
    const DirectReduction reduction = direct_reduction(p, pass);
    if (pass == Pass::BackwardFilter) {
        const uint64_t copy_bytes = uint64_t(p.filter_elements()) * 4;
        const uint64_t range = context.device->limits().maxStorageBufferRange;
        if (copy_bytes <= range) return std::nullopt;
        return unsupported("direct: a " + std::string(to_string(p.data_type)) + " dw summed in pieces needs an fp32 "
                           "copy of " + std::to_string(copy_bytes) + " bytes, above the device's "
                           "maxStorageBufferRange (" + std::to_string(range) + " bytes): " + p.str());
    }
    return unsupported("direct: a " + std::string(to_string(pass)) + " reduction of " +
                       std::to_string(reduction.extent * reduction.unit_iterations) +
                       " terms runs in pieces, which would round a " + to_string(p.data_type) +
                       " output more than once (" + p.str() + ")");
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
    if (pieces_into_16bit(p, pass)) plan.slot(Slot::WideOutput) = uint64_t(p.filter_elements());
    return plan;
}

void record_direct_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                        const ConvOperands& ops, Workspace workspace) {
    switch (plan.pass) {
        case Pass::Forward:
            record_direct_forward(context, stream, p, ops);
            break;
        case Pass::BackwardData:
            record_backward_direct<contract::conv2d_backward_data_direct>(
                context, stream, p, plan.pass, ops.output, ops.filter, ops.input, p.data_type,
                uint64_t(p.input_elements()), ops.add_into_dx);
            break;
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
