#include "conv/shared/permute.hpp"

#include "context/element_build.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {
namespace {

struct PermutePush {
    uint32_t s0, s1, s2, s3;
    uint32_t in_offset, out_offset;
    float beta, negative_slope;
    uint32_t residual_offset;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(PermutePush, permute4d)
VKCONV_PUSH_MEMBER(PermutePush, permute4d, s3)
VKCONV_PUSH_MEMBER(PermutePush, permute4d, in_offset)
VKCONV_PUSH_MEMBER(PermutePush, permute4d, out_offset)
VKCONV_PUSH_MEMBER(PermutePush, permute4d, beta)
VKCONV_PUSH_MEMBER(PermutePush, permute4d, residual_offset)

uint32_t u(int64_t v) {
    return static_cast<uint32_t>(v);
}

}  // namespace

void record_permute(ContextImpl& context, CommandStream& stream, const BufferRange& in, uint64_t in_offset,
                    const BufferRange& out, uint64_t out_offset, std::array<int64_t, 4> d, std::array<int64_t, 4> s,
                    const PermuteEpilogue& epilogue, DataType in_type, DataType out_type) {
    const FusedEpilogue& e = epilogue.epilogue;
    PipelineDesc desc;
    desc.shader = "permute4d" + element_build(context, in_type == DataType::F32 ? out_type : in_type);
    desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(PermutePush);
    using Id = contract::permute4d::spec;
    Specialization<contract::permute4d> spec;
    spec.set(Id::LOCAL_SIZE_X, kElementwiseWorkgroup).set(Id::D1, d[1]).set(Id::D2, d[2]).set(Id::D3, d[3]);
    spec.set(Id::ACTIVATION, activation_constant(e.activation)).set(Id::HAS_RESIDUAL, e.has_residual());
    spec.set(Id::SRC_TYPE, element_constant(in_type)).set(Id::DST_TYPE, element_constant(out_type));
    desc.specialization = spec.values();
    const Pipeline& pipeline = context.pipelines->get(desc);
    // Without a residual the shader never reads binding 2, but it must be bound: the input stands in.
    const BufferRange residual = e.has_residual() ? epilogue.residual.range : in;
    const std::array<Binding, 3> bindings{Binding{in, false}, Binding{out, true}, Binding{residual, false}};
    PermutePush push{u(s[0]),
                     u(s[1]),
                     u(s[2]),
                     u(s[3]),
                     u(in_offset),
                     u(out_offset),
                     e.beta,
                     e.negative_slope,
                     u(e.has_residual() ? epilogue.residual.delta : 0),
                     0,
                     0};
    dispatch_elements(stream, pipeline, bindings, push, uint64_t(d[0] * d[1] * d[2] * d[3]));
}

}  // namespace vkconv::detail
