// CPU reference convolution: the ground truth every GPU algorithm is tested against.
//
// Straight loops with double accumulation, written for clarity, not speed. All four passes, both layouts,
// groups, stride, padding and dilation. Tensors are flat arrays in the problem's layout (see problem.hpp).
// Results are returned in double so tests can measure a GPU result's error without the reference adding
// its own rounding.
#pragma once

#include <span>
#include <vector>

#include "vkconv/export.hpp"
#include "vkconv/problem.hpp"

namespace vkconv::reference {
VKCONV_API_BEGIN

// y = conv(x, w) (+ bias). `bias` may be empty when the problem has no bias; its size must be K otherwise.
std::vector<double> forward(const ConvProblem& problem, std::span<const float> input, std::span<const float> filter,
                            std::span<const float> bias = {});

// dx from dy and w. The problem carries the input shape (for stride > 1 several input sizes give the
// same output size, so it is an argument, as in PyTorch's conv2d_input).
std::vector<double> backward_data(const ConvProblem& problem, std::span<const float> grad_output,
                                  std::span<const float> filter);

// dw from x and dy.
std::vector<double> backward_filter(const ConvProblem& problem, std::span<const float> input,
                                    std::span<const float> grad_output);

// db[k] = sum of dy over n, p, q.
std::vector<double> backward_bias(const ConvProblem& problem, std::span<const float> grad_output);

VKCONV_API_END
}  // namespace vkconv::reference
