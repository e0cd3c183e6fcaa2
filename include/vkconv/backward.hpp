// Backward passes: gradients of the forward convolution with respect to its input, filter and bias.
//
// Shapes follow the problem's layout (problem.hpp): grad_output has the output shape, grad_input the
// input shape (the problem carries it: for stride > 1 several input sizes give the same output size,
// as in PyTorch's conv2d_input), grad_filter the filter shape, grad_bias [K].
#pragma once

#include "vkconv/conv.hpp"
#include "vkconv/export.hpp"

namespace vkconv {
VKCONV_API_BEGIN

// Algorithms: direct, im2col, mec and depthwise (one input channel per group). Auto picks depthwise for
// depthwise problems, otherwise the lowering (im2col or mec) with the smaller workspace for that pass, and
// direct where neither fits. `options.max_binding_bytes` caps the lowered chunks as in forward.

// Bytes of temporary device memory each pass needs (exact, as the pool counts them; with Auto, as
// forward_workspace_bytes says: exact once the choice is known, else the most any candidate needs; never
// any GPU work). For a problem with
// has_bias, backward-filter's figure includes the bias gradient's partial sums (allocated whether or not a
// grad_bias tensor is passed); backward_bias reports its own in RunStats::workspace_bytes.
uint64_t backward_data_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                       const PassOptions& options = {});
uint64_t backward_filter_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                         const PassOptions& options = {});

// backward_bias's workspace (its partial sums; 0 where it sums straight into db).
uint64_t backward_bias_workspace_bytes(const Context& context, const ConvProblem& problem,
                                       const PassOptions& options = {});

// dx = conv_transpose(dy, w). Overwrites grad_input.
RunStats backward_data(Context& context, const ConvProblem& problem, const Tensor& grad_output, const Tensor& filter,
                       Tensor& grad_input, Algorithm algorithm = Algorithm::Auto, const PassOptions& options = {});
RunStats backward_data(Recording& recording, const ConvProblem& problem, const Tensor& grad_output,
                       const Tensor& filter, Tensor& grad_input, Algorithm algorithm = Algorithm::Auto,
                       const PassOptions& options = {});

// dw from x and dy; with a non-null grad_bias also db = sum of dy over n, p, q (problem.has_bias must then
// be true). Overwrites its outputs. The reduction order is fixed: results are bit-identical across runs.
RunStats backward_filter(Context& context, const ConvProblem& problem, const Tensor& input, const Tensor& grad_output,
                         Tensor& grad_filter, Tensor* grad_bias = nullptr, Algorithm algorithm = Algorithm::Auto,
                         const PassOptions& options = {});
RunStats backward_filter(Recording& recording, const ConvProblem& problem, const Tensor& input,
                         const Tensor& grad_output, Tensor& grad_filter, Tensor* grad_bias = nullptr,
                         Algorithm algorithm = Algorithm::Auto, const PassOptions& options = {});

// db alone (options: its workspace limit and caller workspace).
RunStats backward_bias(Context& context, const ConvProblem& problem, const Tensor& grad_output, Tensor& grad_bias,
                       const PassOptions& options = {});
RunStats backward_bias(Recording& recording, const ConvProblem& problem, const Tensor& grad_output, Tensor& grad_bias,
                       const PassOptions& options = {});

// A layer's whole backward step: dx, dw and (with a non-null grad_bias) db in one submission. The two
// passes run one after the other on one workspace allocation, each slot (lowered matrix, OHWI filter copy,
// split partials) sized to the larger pass, so the step needs the larger pass's workspace, not the sum,
// and one pool allocation per slot instead of one per pass.
struct LayerBackwardStats {
    RunStats step;  // the whole step: GPU time, shared workspace, pool peak, dispatches
    Algorithm data_algorithm = Algorithm::Auto, filter_algorithm = Algorithm::Auto;  // never Auto after a run
    ChoiceSource data_chosen_by = ChoiceSource::Named, filter_chosen_by = ChoiceSource::Named;  // how
    uint64_t data_workspace_bytes = 0;                                               // what each pass needs alone
    uint64_t filter_workspace_bytes = 0;
    uint32_t data_chunks = 1, filter_chunks = 1;
};
uint64_t layer_backward_workspace_bytes(const Context& context, const ConvProblem& problem,
                                        Algorithm algorithm = Algorithm::Auto, const PassOptions& options = {});
LayerBackwardStats layer_backward(Context& context, const ConvProblem& problem, const Tensor& input,
                                  const Tensor& filter, const Tensor& grad_output, Tensor& grad_input,
                                  Tensor& grad_filter, Tensor* grad_bias = nullptr,
                                  Algorithm algorithm = Algorithm::Auto, const PassOptions& options = {});
LayerBackwardStats layer_backward(Recording& recording, const ConvProblem& problem, const Tensor& input,
                                  const Tensor& filter, const Tensor& grad_output, Tensor& grad_input,
                                  Tensor& grad_filter, Tensor* grad_bias = nullptr,
                                  Algorithm algorithm = Algorithm::Auto, const PassOptions& options = {});

VKCONV_API_END
}  // namespace vkconv
