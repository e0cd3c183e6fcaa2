// CPU reference convolution.
//
// All three products (forward, backward data, backward filter) visit the same set of taps — one
// (output element, input element, filter element) triple per multiply-add — and differ only in which of the
// three they accumulate into. So one loop nest (io/conv_taps.hpp, which find's sampled checks enumerate one
// value at a time) enumerates the taps as flat offsets and each pass is a line,
// which keeps the passes consistent with each other by construction and the layouts out of the arithmetic.
// Backward data is therefore a scatter; it is deterministic because the loop order is fixed.
#include "vkconv/reference.hpp"

#include <string>

#include "io/conv_taps.hpp"
#include "vkconv/error.hpp"

namespace vkconv::reference {

namespace {

void check_size(const char* pass, const char* role, size_t given, int64_t expected) {
    if (given != static_cast<size_t>(expected))
        throw Error(ErrorCategory::InvalidArgument, std::string("reference::") + pass + ": " + role + " has " +
                                                        std::to_string(given) + " elements, expected " +
                                                        std::to_string(expected));
}

std::vector<double> zeros(int64_t count) {
    return std::vector<double>(static_cast<size_t>(count), 0.0);
}

}  // namespace

std::vector<double> forward(const ConvProblem& problem, std::span<const float> input, std::span<const float> filter,
                            std::span<const float> bias) {
    problem.validate();
    check_size("forward", "input", input.size(), problem.input_elements());
    check_size("forward", "filter", filter.size(), problem.filter_elements());
    if (problem.has_bias)
        check_size("forward", "bias", bias.size(), problem.K);
    else if (!bias.empty())  // rejected rather than ignored: it is almost surely a mix-up
        throw Error(ErrorCategory::InvalidArgument, "reference::forward: bias has " + std::to_string(bias.size()) +
                                                        " elements but the problem has no bias (has_bias=false)");

    std::vector<double> y = zeros(problem.output_elements());
    if (problem.has_bias) {
        const detail::ConvIndexer ix(problem);
        for (int64_t n = 0; n < problem.N; ++n)
            for (int64_t k = 0; k < problem.K; ++k)
                for (int64_t p = 0; p < ix.P; ++p)
                    for (int64_t q = 0; q < ix.Q; ++q) y[ix.output(n, k, p, q)] = bias[static_cast<size_t>(k)];
    }
    detail::for_each_tap(problem, [&](size_t i, size_t f, size_t o) {
        y[o] += static_cast<double>(input[i]) * static_cast<double>(filter[f]);
    });
    return y;
}

std::vector<double> backward_data(const ConvProblem& problem, std::span<const float> grad_output,
                                  std::span<const float> filter) {
    problem.validate();
    check_size("backward_data", "grad_output", grad_output.size(), problem.output_elements());
    check_size("backward_data", "filter", filter.size(), problem.filter_elements());

    std::vector<double> dx = zeros(problem.input_elements());
    detail::for_each_tap(problem, [&](size_t i, size_t f, size_t o) {
        dx[i] += static_cast<double>(grad_output[o]) * static_cast<double>(filter[f]);
    });
    return dx;
}

std::vector<double> backward_filter(const ConvProblem& problem, std::span<const float> input,
                                    std::span<const float> grad_output) {
    problem.validate();
    check_size("backward_filter", "input", input.size(), problem.input_elements());
    check_size("backward_filter", "grad_output", grad_output.size(), problem.output_elements());

    std::vector<double> dw = zeros(problem.filter_elements());
    detail::for_each_tap(problem, [&](size_t i, size_t f, size_t o) {
        dw[f] += static_cast<double>(input[i]) * static_cast<double>(grad_output[o]);
    });
    return dw;
}

std::vector<double> backward_bias(const ConvProblem& problem, std::span<const float> grad_output) {
    problem.validate();
    check_size("backward_bias", "grad_output", grad_output.size(), problem.output_elements());

    const detail::ConvIndexer ix(problem);
    std::vector<double> db = zeros(problem.K);
    for (int64_t n = 0; n < problem.N; ++n)
        for (int64_t k = 0; k < problem.K; ++k)
            for (int64_t p = 0; p < ix.P; ++p)
                for (int64_t q = 0; q < ix.Q; ++q)
                    db[static_cast<size_t>(k)] += static_cast<double>(grad_output[ix.output(n, k, p, q)]);
    return db;
}

}  // namespace vkconv::reference
