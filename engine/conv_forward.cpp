// The public forward pass: argument checks, algorithm choice, workspace, timing and memory measurement.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <string>

#include "conv_direct.hpp"
#include "conv_lowered.hpp"
#include "tensor_storage.hpp"
#include "vkconv/conv.hpp"

namespace vkconv {

const char* to_string(Algorithm algorithm) noexcept {
    switch (algorithm) {
        case Algorithm::Auto:
            return "auto";
        case Algorithm::Direct:
            return "direct";
        case Algorithm::Im2col:
            return "im2col";
        case Algorithm::Mec:
            return "mec";
    }
    return "unknown";
}

const char* to_string(MecSchedule schedule) noexcept {
    switch (schedule) {
        case MecSchedule::Auto:
            return "auto";
        case MecSchedule::A:
            return "A";
        case MecSchedule::B:
            return "B";
    }
    return "unknown";
}

Algorithm parse_algorithm(std::string_view text) {
    std::string name(text);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (Algorithm a : {Algorithm::Auto, Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec})
        if (name == to_string(a)) return a;
    throw Error(ErrorCategory::InvalidArgument,
                "unknown algorithm '" + std::string(text) + "' (expected auto, direct, im2col or mec)");
}

Algorithm choose_forward_algorithm(const Context& context, const ConvProblem& problem) {
    detail::ContextImpl& impl = detail::impl_of(context);
    problem.validate();
    const uint64_t range = impl.device->limits().maxStorageBufferRange;
    const bool direct_fits =
        uint64_t(std::max({problem.input_elements(), problem.output_elements(), problem.filter_elements()})) * 4 <=
        range;
    // One input channel per group (depthwise): a GEMM with a reduction of R*S per group is all overhead.
    if (problem.channels_per_group() == 1 && direct_fits) return Algorithm::Direct;
    // Otherwise the lowering with the smaller workspace: less memory, and on every device measured it is
    // also the one that moves fewer bytes. In NHWC that is MEC unless the kernel is one row tall (then
    // the two are the same size and im2col's plain GEMM wins); in NCHW, MEC's OHWI filter copy can
    // outweigh its smaller lowered matrix on late layers with many channels.
    const ForwardOptions defaults;
    const uint64_t im2col = detail::plan_lowered(impl, problem, Algorithm::Im2col, defaults).workspace_bytes;
    const uint64_t mec = detail::plan_lowered(impl, problem, Algorithm::Mec, defaults).workspace_bytes;
    return mec < im2col ? Algorithm::Mec : Algorithm::Im2col;
}

namespace {

detail::Operand operand(detail::ContextImpl& context, const Tensor& tensor, std::string_view role,
                        const Shape& expected) {
    if (tensor.empty()) throw Error(ErrorCategory::InvalidArgument, std::string(role) + " tensor is empty");
    if (tensor.storage()->context.get() != &context)
        throw Error(ErrorCategory::InvalidArgument, std::string(role) + " tensor belongs to another context");
    ConvProblem::check_shape(role, tensor.shape(), expected);
    return {tensor.storage()->allocation, static_cast<uint64_t>(tensor.elements())};
}

void check_whole_binding(const detail::ContextImpl& context, const detail::Operand& op, std::string_view role) {
    const uint64_t max_range = context.device->limits().maxStorageBufferRange;
    if (op.floats * 4 > max_range)
        throw Error(ErrorCategory::Unsupported, std::string(role) + " tensor of " + std::to_string(op.floats * 4) +
                                                    " bytes exceeds the device's maxStorageBufferRange of " +
                                                    std::to_string(max_range) +
                                                    " bytes (the direct algorithm binds "
                                                    "whole tensors; im2col and mec run in chunks)");
}

// Pool memory for the pass's workspace, handed back on every exit path.
struct Scratch {
    detail::BufferPool& pool;
    detail::Operand operand;
    Scratch(detail::BufferPool& p, uint64_t floats) : pool(p) {
        if (floats) operand = {pool.allocate(floats * 4), floats};
    }
    ~Scratch() { pool.release(operand.allocation); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
};

Algorithm resolve(const Context& context, const ConvProblem& problem, Algorithm algorithm) {
    return algorithm == Algorithm::Auto ? choose_forward_algorithm(context, problem) : algorithm;
}

}  // namespace

uint64_t forward_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                 const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    problem.validate();
    const Algorithm chosen = resolve(context, problem, algorithm);
    if (chosen == Algorithm::Direct) return 0;
    return detail::plan_lowered(impl, problem, chosen, options).workspace_bytes;
}

RunStats forward(Context& context, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, Algorithm algorithm, const ForwardOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    impl.device->throw_if_lost();
    problem.validate();
    detail::ForwardOperands ops;
    ops.input = operand(impl, input, "input", problem.input_shape());
    ops.filter = operand(impl, filter, "filter", problem.filter_shape());
    ops.output = operand(impl, output, "output", problem.output_shape());
    if (problem.has_bias && !bias)
        throw Error(ErrorCategory::InvalidArgument, "the problem has a bias but no bias tensor was given");
    if (!problem.has_bias && bias)
        throw Error(ErrorCategory::InvalidArgument, "a bias tensor was given but the problem has has_bias = false");
    if (bias) ops.bias = operand(impl, *bias, "bias", problem.bias_shape());
    for (const Tensor* t : {&input, &filter, bias})
        if (t && t->storage() == output.storage())
            throw Error(ErrorCategory::InvalidArgument,
                        "the output tensor must not be an input, filter or bias tensor");

    RunStats stats;
    stats.algorithm = resolve(context, problem, algorithm);
    detail::LoweredPlan plan;
    if (stats.algorithm == Algorithm::Direct) {
        for (const auto& [op, role] :
             {std::pair{&ops.input, "input"}, {&ops.filter, "filter"}, {&ops.output, "output"}})
            check_whole_binding(impl, *op, role);
    } else {
        plan = detail::plan_lowered(impl, problem, stats.algorithm, options);
        stats.workspace_bytes = plan.workspace_bytes;
        stats.chunks = plan.chunks;
        if (stats.algorithm == Algorithm::Mec) stats.mec_schedule = plan.schedule;
    }

    PeakScope peak(context);
    const auto start = std::chrono::steady_clock::now();
    Scratch scratch(*impl.pool, plan.scratch_floats);
    Scratch filter_copy(*impl.pool, plan.filter_floats);
    detail::CommandStream stream(impl);
    stream.begin_timing();
    switch (stats.algorithm) {
        case Algorithm::Direct:
            detail::record_direct_forward(impl, stream, problem, ops);
            break;
        case Algorithm::Im2col:
            detail::record_im2col_forward(impl, stream, problem, ops, plan, scratch.operand);
            break;
        case Algorithm::Mec:
            detail::record_mec_forward(impl, stream, problem, ops, plan, scratch.operand, filter_copy.operand);
            break;
        case Algorithm::Auto:
            break;
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
