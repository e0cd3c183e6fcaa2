// The forward epilogue's checks (conv/epilogue.hpp).
#include "conv/epilogue.hpp"

#include <cctype>
#include <cmath>
#include <sstream>
#include <string>

#include "context/pass.hpp"
#include "context/tensor_storage.hpp"
#include "conv/tiled/copy_run.hpp"

namespace vkconv::detail {
namespace {

[[noreturn]] void invalid(const std::string& message) {
    throw Error(ErrorCategory::InvalidArgument, "epilogue: " + message);
}

std::string number(float value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

// True when two tensors cover exactly the same bytes of one buffer.
bool same_memory(const Tensor& a, const Tensor& b) {
    if (a.bytes() != b.bytes()) return false;
    const std::vector<TensorPiece> x = pieces_of(a), y = pieces_of(b);
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
        if (x[i].allocation.buffer != y[i].allocation.buffer || x[i].allocation.offset != y[i].allocation.offset)
            return false;
    return true;
}

}  // namespace

FusedEpilogue fused_epilogue(ContextImpl& context, const ConvProblem& problem, const Epilogue& epilogue,
                             const Tensor& input, const Tensor& filter, const Tensor* bias, const Tensor& output) {
    for (const auto& [value, name] :
         {std::pair{epilogue.alpha, "alpha"}, {epilogue.beta, "beta"}, {epilogue.negative_slope, "negative_slope"}})
        if (!std::isfinite(value)) invalid(std::string(name) + " must be finite, got " + number(value));
    switch (epilogue.activation) {
        case Activation::None:
        case Activation::ReLU:
        case Activation::ReLU6:
        case Activation::LeakyReLU:
            break;
        default:
            invalid("unknown activation value " + std::to_string(static_cast<int>(epilogue.activation)));
    }
    FusedEpilogue fused{epilogue.alpha, epilogue.beta, epilogue.negative_slope, epilogue.activation, {}};
    if (!epilogue.residual) {
        if (epilogue.beta != 0.0f)
            invalid("beta is " + number(epilogue.beta) +
                    " but no residual tensor was given (beta scales the residual)");
        return fused;
    }
    const Tensor& z = *epilogue.residual;
    if (epilogue.beta == 0.0f)
        invalid("a residual tensor was given but beta is 0, so it would be ignored (set beta, or pass no residual)");
    fused.residual = tensor_operand(context, z, "residual", problem.output_shape(), problem.data_type);
    if (!same_memory(z, output) && overlaps(z, output))
        invalid(
            "the residual tensor shares memory with the output without being the output itself (an in-place "
            "residual must be the output's exact memory)");
    for (const auto& [tensor, role] : {std::pair{&input, "input"}, {&filter, "filter"}, {bias, "bias"}})
        if (tensor && overlaps(*tensor, z))
            invalid(std::string("the residual tensor shares memory with the ") + role + " tensor");
    return fused;
}

void copy_residual_into_output(ContextImpl& context, CommandStream& stream, const FusedEpilogue& epilogue,
                               const Operand& output, DataType type) {
    if (epilogue.has_residual() && !residual_in_place(epilogue, output))
        record_run(context, stream, epilogue.residual, 0, output, 0, output.floats, false, type);
}

}  // namespace vkconv::detail
