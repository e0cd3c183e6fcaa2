#include "conv_pass.hpp"

#include <string>

#include "tensor_storage.hpp"

namespace vkconv::detail {

Operand tensor_operand(ContextImpl& context, const Tensor& tensor, std::string_view role, const Shape& expected) {
    if (tensor.empty()) throw Error(ErrorCategory::InvalidArgument, std::string(role) + " tensor is empty");
    if (tensor.storage()->context.get() != &context)
        throw Error(ErrorCategory::InvalidArgument, std::string(role) + " tensor belongs to another context");
    ConvProblem::check_shape(role, tensor.shape(), expected);
    return {allocation_of(tensor), static_cast<uint64_t>(tensor.elements())};
}

void check_whole_binding(const ContextImpl& context, const Operand& operand, std::string_view role) {
    const uint64_t max_range = context.device->limits().maxStorageBufferRange;
    if (operand.floats * 4 > max_range)
        throw Error(ErrorCategory::Unsupported,
                    std::string(role) + " tensor of " + std::to_string(operand.floats * 4) +
                        " bytes exceeds the device's maxStorageBufferRange of " + std::to_string(max_range) +
                        " bytes (the direct algorithm binds whole tensors; im2col and mec run in chunks)");
}

void check_not_aliased(const Tensor& output, std::string_view role, std::initializer_list<const Tensor*> inputs) {
    for (const Tensor* t : inputs)
        if (t && overlaps(*t, output))
            throw Error(ErrorCategory::InvalidArgument,
                        "the " + std::string(role) + " tensor must not also be one of the pass's inputs");
}

}  // namespace vkconv::detail
