// Backward passes: gradients of the forward convolution with respect to its input, filter and bias.
//
// Shapes follow the problem's layout (problem.hpp): grad_output has the output shape, grad_input the
// input shape (the problem carries it: for stride > 1 several input sizes give the same output size,
// as in PyTorch's conv2d_input), grad_filter the filter shape, grad_bias [K].
#pragma once

#include "vkconv/conv.hpp"

namespace vkconv {

// Algorithms: direct and im2col (mec runs forward only in this version). Auto picks im2col, or direct
// for one input channel per group. `options.max_binding_bytes` caps im2col's chunks as in forward.

// Bytes of temporary device memory each pass needs (exact, as the pool counts them).
uint64_t backward_data_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                       const ForwardOptions& options = {});
uint64_t backward_filter_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                         const ForwardOptions& options = {});

// dx = conv_transpose(dy, w). Overwrites grad_input.
RunStats backward_data(Context& context, const ConvProblem& problem, const Tensor& grad_output, const Tensor& filter,
                       Tensor& grad_input, Algorithm algorithm = Algorithm::Auto, const ForwardOptions& options = {});

// dw from x and dy; with a non-null grad_bias also db = sum of dy over n, p, q (problem.has_bias must then
// be true). Overwrites its outputs. The reduction order is fixed: results are bit-identical across runs.
RunStats backward_filter(Context& context, const ConvProblem& problem, const Tensor& input, const Tensor& grad_output,
                         Tensor& grad_filter, Tensor* grad_bias = nullptr, Algorithm algorithm = Algorithm::Auto,
                         const ForwardOptions& options = {});

// db alone.
RunStats backward_bias(Context& context, const ConvProblem& problem, const Tensor& grad_output, Tensor& grad_bias);

}  // namespace vkconv
