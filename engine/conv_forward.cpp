// The public forward pass: argument checks, algorithm choice, timing and memory measurement.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <string>

#include "conv_direct.hpp"
#include "tensor_storage.hpp"
#include "vkconv/conv.hpp"

namespace vkconv {

const char* to_string(Algorithm algorithm) noexcept {
    switch (algorithm) {
        case Algorithm::Auto:
            return "auto";
        case Algorithm::Direct:
            return "direct";
    }
    return "unknown";
}

Algorithm parse_algorithm(std::string_view text) {
    std::string name(text);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (Algorithm a : {Algorithm::Auto, Algorithm::Direct})
        if (name == to_string(a)) return a;
    throw Error(ErrorCategory::InvalidArgument,
                "unknown algorithm '" + std::string(text) + "' (expected auto or direct)");
}

namespace {

Algorithm resolve(Algorithm algorithm) {
    // Only the direct algorithm exists so far; Auto is its synonym until the lowered algorithms land.
    return algorithm == Algorithm::Auto ? Algorithm::Direct : algorithm;
}

detail::BufferRange operand(detail::ContextImpl& context, const Tensor& tensor, std::string_view role,
                            const Shape& expected) {
    if (tensor.empty()) throw Error(ErrorCategory::InvalidArgument, std::string(role) + " tensor is empty");
    if (tensor.storage()->context.get() != &context)
        throw Error(ErrorCategory::InvalidArgument, std::string(role) + " tensor belongs to another context");
    ConvProblem::check_shape(role, tensor.shape(), expected);
    const uint64_t max_range = context.device->limits().maxStorageBufferRange;
    if (tensor.bytes() > max_range)
        throw Error(ErrorCategory::Unsupported, std::string(role) + " tensor of " + std::to_string(tensor.bytes()) +
                                                    " bytes exceeds the device's maxStorageBufferRange of " +
                                                    std::to_string(max_range) + " bytes");
    const auto& a = tensor.storage()->allocation;
    return {a.buffer, a.offset, tensor.bytes()};
}

}  // namespace

uint64_t forward_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm) {
    detail::impl_of(context);
    problem.validate();
    switch (resolve(algorithm)) {
        case Algorithm::Direct:
            return 0;
        default:
            break;
    }
    return 0;
}

RunStats forward(Context& context, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, Algorithm algorithm) {
    detail::ContextImpl& impl = detail::impl_of(context);
    impl.device->throw_if_lost();
    problem.validate();
    detail::ForwardOperands operands;
    operands.input = operand(impl, input, "input", problem.input_shape());
    operands.filter = operand(impl, filter, "filter", problem.filter_shape());
    operands.output = operand(impl, output, "output", problem.output_shape());
    if (problem.has_bias && !bias)
        throw Error(ErrorCategory::InvalidArgument, "the problem has a bias but no bias tensor was given");
    if (!problem.has_bias && bias)
        throw Error(ErrorCategory::InvalidArgument, "a bias tensor was given but the problem has has_bias = false");
    if (bias) operands.bias = operand(impl, *bias, "bias", problem.bias_shape());
    for (const Tensor* t : {&input, &filter, bias})
        if (t && t->storage() == output.storage())
            throw Error(ErrorCategory::InvalidArgument,
                        "the output tensor must not be an input, filter or bias tensor");

    RunStats stats;
    stats.algorithm = resolve(algorithm);
    stats.workspace_bytes = forward_workspace_bytes(context, problem, stats.algorithm);
    PeakScope peak(context);
    const auto start = std::chrono::steady_clock::now();
    detail::CommandStream stream(impl);
    stream.begin_timing();
    switch (stats.algorithm) {
        case Algorithm::Direct:
            detail::record_direct_forward(impl, stream, problem, operands);
            break;
        default:
            throw Error(ErrorCategory::Unsupported, std::string("algorithm ") + to_string(stats.algorithm));
    }
    stream.end_timing();
    stream.submit_and_wait();
    stats.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    stats.gpu_timed = stream.gpu_ms() >= 0;
    stats.gpu_ms = stats.gpu_timed ? stream.gpu_ms() : stats.wall_ms;
    stats.peak_bytes = peak.peak();
    stats.dispatches = stream.dispatch_count();
    return stats;
}

}  // namespace vkconv
