#include "context/pass.hpp"

#include <string>

#include "context/tensor_storage.hpp"

namespace vkconv::detail {

Operand tensor_operand(ContextImpl& context, const Tensor& tensor, std::string_view role, const Shape& expected) {
    if (tensor.empty()) throw Error(ErrorCategory::InvalidArgument, std::string(role) + " tensor is empty");
    if (tensor.storage()->context.get() != &context)
        throw Error(ErrorCategory::InvalidArgument, std::string(role) + " tensor belongs to another context");
    ConvProblem::check_shape(role, tensor.shape(), expected);
    return operand_of(allocation_of(tensor), static_cast<uint64_t>(tensor.elements()), context.pool->alignment());
}

void check_not_aliased(const Tensor& output, std::string_view role, std::initializer_list<const Tensor*> inputs) {
    for (const Tensor* t : inputs)
        if (t && overlaps(*t, output))
            throw Error(ErrorCategory::InvalidArgument,
                        "the " + std::string(role) + " tensor must not also be one of the pass's inputs");
}

}  // namespace vkconv::detail
