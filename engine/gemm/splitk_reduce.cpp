#include "gemm/splitk_reduce.hpp"

#include <array>

#include "context/element_build.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {
namespace {

struct ReducePush {
    uint32_t out_offset, stride, splits;
    float beta;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(ReducePush, splitk_reduce)
VKCONV_PUSH_MEMBER(ReducePush, splitk_reduce, stride)
VKCONV_PUSH_MEMBER(ReducePush, splitk_reduce, splits)
VKCONV_PUSH_MEMBER(ReducePush, splitk_reduce, beta)

struct GroupsPush {
    uint32_t split_floats, splits, group, pad0;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(GroupsPush, splitk_reduce_groups)
VKCONV_PUSH_MEMBER(GroupsPush, splitk_reduce_groups, group)

// More splits than this are summed in two levels: no invocation then adds more than about twice its
// square root one after the other (a GPU's reduce would otherwise be one long dependent chain per output).
constexpr int64_t kOneLevelSplits = 32;

uint32_t u(int64_t v) {
    return static_cast<uint32_t>(v);
}

}  // namespace

void record_splitk_reduce(ContextImpl& context, CommandStream& stream, const BufferRange& partials,
                          const BufferRange& out, uint64_t out_offset, uint64_t count, int64_t splits,
                          bool accumulate, DataType out_type) {
    record_splitk_reduce(context, stream, partials, out, out_offset, count, splits, accumulate ? 1.0f : 0.0f,
                         out_type);
}

void record_splitk_reduce(ContextImpl& context, CommandStream& stream, const BufferRange& partials,
                          const BufferRange& out, uint64_t out_offset, uint64_t count, int64_t splits, float beta,
                          DataType out_type) {
    uint64_t stride = count;  // floats between the sums added last
    if (splits > kOneLevelSplits) {
        // Groups of `group` splits summed in place into each group's first split, in order; then the groups.
        int64_t group = 1;
        while (group * group < splits) ++group;
        const int64_t groups = (splits + group - 1) / group;
        PipelineDesc desc;
        desc.shader = "splitk_reduce_groups";
        desc.bindings.assign(1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
        desc.push_constant_bytes = sizeof(GroupsPush);
        desc.specialization = Specialization<contract::splitk_reduce_groups>()
                                  .set(contract::splitk_reduce_groups::spec::LOCAL_SIZE_X, kElementwiseWorkgroup)
                                  .values();
        const std::array<Binding, 1> bindings{Binding{partials, true}};
        dispatch_elements(stream, context.pipelines->get(desc), bindings,
                          GroupsPush{u(int64_t(count)), u(splits), u(group), 0, 0, 0}, count * uint64_t(groups),
                          ElementWork{double(splits) / double(groups), uint64_t(group)});
        stride = count * uint64_t(group);
        splits = groups;
    }
    PipelineDesc desc;
    desc.shader = "splitk_reduce" + element_build(context, out_type);
    desc.bindings.assign(2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(ReducePush);
    desc.specialization = Specialization<contract::splitk_reduce>()
                              .set(contract::splitk_reduce::spec::LOCAL_SIZE_X, kElementwiseWorkgroup)
                              .set(contract::splitk_reduce::spec::OUT_TYPE, element_constant(out_type))
                              .values();
    const std::array<Binding, 2> bindings{Binding{partials, false}, Binding{out, true}};
    dispatch_elements(stream, context.pipelines->get(desc), bindings,
                      ReducePush{u(int64_t(out_offset)), u(int64_t(stride)), u(splits), beta, 0, 0}, count,
                      ElementWork{double(splits), uint64_t(splits)});
}

}  // namespace vkconv::detail
