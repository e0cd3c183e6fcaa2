#include "conv/bias_add.hpp"

#include <array>

#include "context/context_impl.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv::detail {
namespace {

struct BiasAddPush {
    uint32_t first_y, first_bias, channels, plane;
    uint32_t base, count;
};
VKCONV_PUSH_SIZE(BiasAddPush, add_bias)
VKCONV_PUSH_MEMBER(BiasAddPush, add_bias, plane)

}  // namespace

void record_bias_add(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const Operand& y,
                     const Operand& bias) {
    const uint64_t range = context.device->limits().maxStorageBufferRange;
    const Window yw = y.whole(), bw = bias.whole();
    if (yw.range.size > range)
        throw Error(ErrorCategory::Unsupported,
                    "adding the bias binds the whole output (" + std::to_string(yw.range.size) +
                        " bytes), beyond the device's maxStorageBufferRange (" + std::to_string(range) + " bytes)");
    PipelineDesc desc;
    desc.shader = "add_bias";
    desc.bindings.assign(2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(BiasAddPush);
    desc.specialization = Specialization<contract::add_bias>()
                              .set(contract::add_bias::spec::LOCAL_SIZE_X, kElementwiseWorkgroup)
                              .set(contract::add_bias::spec::NHWC, problem.layout == Layout::NHWC)
                              .values();
    const std::array<Binding, 2> bindings{Binding{bw.range, false}, Binding{yw.range, true}};
    dispatch_elements(stream, context.pipelines->get(desc), bindings,
                      BiasAddPush{uint32_t(yw.delta), uint32_t(bw.delta), uint32_t(problem.C),
                                  uint32_t(problem.H * problem.W), 0, 0},
                      uint64_t(problem.input_elements()), ElementWork{1.0, 1});
}

}  // namespace vkconv::detail
