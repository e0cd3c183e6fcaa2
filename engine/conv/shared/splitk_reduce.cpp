#include "conv/shared/splitk_reduce.hpp"

#include <array>

#include "vulkan/dispatch.hpp"

namespace vkconv::detail {
namespace {

struct ReducePush {
    uint32_t out_offset, stride, splits, accumulate;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(ReducePush, splitk_reduce)
VKCONV_PUSH_MEMBER(ReducePush, splitk_reduce, stride)
VKCONV_PUSH_MEMBER(ReducePush, splitk_reduce, splits)
VKCONV_PUSH_MEMBER(ReducePush, splitk_reduce, accumulate)

uint32_t u(int64_t v) {
    return static_cast<uint32_t>(v);
}

}  // namespace

void record_splitk_reduce(ContextImpl& context, CommandStream& stream, const BufferRange& partials,
                          const BufferRange& out, uint64_t out_offset, uint64_t count, int64_t splits,
                          bool accumulate) {
    PipelineDesc desc;
    desc.shader = "splitk_reduce";
    desc.bindings.assign(2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(ReducePush);
    desc.specialization = Specialization<contract::splitk_reduce>()
                              .set(contract::splitk_reduce::spec::LOCAL_SIZE_X, kElementwiseWorkgroup)
                              .values();
    const std::array<Binding, 2> bindings{Binding{partials, false}, Binding{out, true}};
    dispatch_elements(stream, context.pipelines->get(desc), bindings,
                      ReducePush{u(int64_t(out_offset)), u(int64_t(count)), u(splits), accumulate ? 1u : 0u, 0, 0},
                      count);
}

}  // namespace vkconv::detail
