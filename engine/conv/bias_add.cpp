#include "conv/bias_add.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "context/context_impl.hpp"
#include "context/element_build.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {
namespace {

struct BiasAddPush {
    uint32_t first_y, first_bias, channels, plane, origin;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(BiasAddPush, add_bias)
VKCONV_PUSH_MEMBER(BiasAddPush, add_bias, origin)

struct PlacePush {
    uint32_t first_staged, first_bias, first_y;
    uint32_t channels, P, Q;
    uint32_t rows, columns, top, left;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(PlacePush, place_output)
VKCONV_PUSH_MEMBER(PlacePush, place_output, left)

// Adding the bias or placing binds a whole tensor: refused past the binding limit.
void check_bindable(ContextImpl& context, const Window& window, const char* what) {
    const uint64_t range = context.device->limits().maxStorageBufferRange;
    if (window.range.size > range)
        throw Error(ErrorCategory::Unsupported, std::string(what) + " binds the whole output (" +
                                                    std::to_string(window.range.size) +
                                                    " bytes), beyond the device's maxStorageBufferRange (" +
                                                    std::to_string(range) + " bytes)");
}

}  // namespace

void record_bias_add(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const Operand& y,
                     const Operand& bias, bool overwrite) {
    const Window bw = bias.whole();
    PipelineDesc desc;
    desc.shader = std::string("add_bias") + element_build(context, problem.data_type);
    desc.bindings.assign(2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(BiasAddPush);
    using Id = contract::add_bias::spec;
    const uint32_t type = element_constant(problem.data_type);
    desc.specialization = Specialization<contract::add_bias>()
                              .set(Id::LOCAL_SIZE_X, kElementwiseWorkgroup)
                              .set(Id::NHWC, problem.layout == Layout::NHWC)
                              .set(Id::OVERWRITE, overwrite)
                              .set(Id::BIAS_TYPE, type)
                              .set(Id::Y_TYPE, type)
                              .values();
    const Pipeline& pipeline = context.pipelines->get(desc);
    // In parts that each lie in one page of a paged output and fit one binding; the shader finds each
    // element's channel from its index in the tensor.
    const uint64_t align = context.pool->alignment();
    const uint64_t range = context.device->limits().maxStorageBufferRange;
    const uint64_t most = range > 2 * align ? (range - align) / element_bytes(problem.data_type) : 1;
    std::vector<std::pair<uint64_t, uint64_t>> pages;  // [begin, end) of y's elements
    if (y.paged())
        for (const OperandPage& page : *y.pages) pages.push_back({page.begin, page.end});
    else
        pages.push_back({0, uint64_t(problem.input_elements())});
    std::vector<std::pair<uint64_t, uint64_t>> parts;
    for (const auto& [first, last] : pages)
        for (uint64_t at = first; at < last; at += most) parts.push_back({at, std::min(last, at + most)});
    for (const auto& [begin, end] : parts) {
        const Window yw = window(y, begin, end - begin, align);
        check_bindable(context, yw, "adding the bias");
        const std::array<Binding, 2> bindings{Binding{bw.range, false}, Binding{yw.range, true}};
        dispatch_elements(stream, pipeline, bindings,
                          BiasAddPush{uint32_t(yw.delta), uint32_t(bw.delta), uint32_t(problem.C),
                                      uint32_t(problem.H * problem.W), uint32_t(begin), 0, 0},
                          end - begin, ElementWork{1.0, 1});
    }
}

void record_place_output(ContextImpl& context, CommandStream& stream, const Placement& placement,
                         const Operand& staged, const Operand& bias, const Operand& y) {
    const Window sw = staged.whole(), yw = y.whole(), bw = bias ? bias.whole() : staged.whole();
    check_bindable(context, yw, "placing the result");
    check_bindable(context, sw, "placing the result");
    PipelineDesc desc;
    desc.shader = std::string("place_output") + element_build(context, placement.type);
    desc.bindings.assign(3, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(PlacePush);
    desc.specialization = Specialization<contract::place_output>()
                              .set(contract::place_output::spec::LOCAL_SIZE_X, kElementwiseWorkgroup)
                              .set(contract::place_output::spec::NHWC, placement.layout == Layout::NHWC)
                              .set(contract::place_output::spec::HAS_BIAS, static_cast<bool>(bias))
                              .set(contract::place_output::spec::TENSOR_TYPE, element_constant(placement.type))
                              .values();
    const std::array<Binding, 3> bindings{Binding{sw.range, false}, Binding{bw.range, false}, Binding{yw.range, true}};
    auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
    const Placement& p = placement;
    dispatch_elements(stream, context.pipelines->get(desc), bindings,
                      PlacePush{u(int64_t(sw.delta)), u(int64_t(bw.delta)), u(int64_t(yw.delta)), u(p.K), u(p.P),
                                u(p.Q), u(p.rows), u(p.columns), u(p.top), u(p.left), 0, 0},
                      uint64_t(p.N * p.K * p.P * p.Q), ElementWork{1.0, 1});
}

}  // namespace vkconv::detail
