// Convolution passes on the GPU: forward (with a fused epilogue), backward-data, backward-filter,
// backward-bias, a layer's whole backward step, and the transposed convolution.
//
// Each pass takes a Target (a Context to run now, a Recording to record into: recording.hpp), the problem,
// its device tensors (shapes checked against the problem) and an algorithm. Algorithm::Auto picks one by
// measuring (find.hpp) or by the heuristic documented in docs/algorithms.md. The returned RunStats say
// what ran, how long the GPU took and what memory it needed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vkconv/algorithm.hpp"
#include "vkconv/context.hpp"
#include "vkconv/error.hpp"
#include "vkconv/export.hpp"
#include "vkconv/gemm.hpp"
#include "vkconv/problem.hpp"
#include "vkconv/recording.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv {
VKCONV_API_BEGIN

// Whether `algorithm` runs `pass` of problems shaped like `problem` at all (depthwise: one input channel per
// group). A pass it applies to may still be refused by the device's limits or a workspace limit; Auto
// applies to every pass.
bool algorithm_applies(Algorithm algorithm, const ConvProblem& problem, Pass pass) noexcept;
// The forms `algorithm` has in `pass` (PassOptions::variant, RunStats::variant): MEC's forward "A" and "B",
// Winograd's "F(4x4,3x3)" and "F(2x2,3x3)"; none for the others, Auto and backward-bias.
std::vector<std::string> algorithm_variants(Algorithm algorithm, Pass pass);

// The options every pass takes: forward, the backward passes, the layer step, their workspace queries
// and find_algorithms.
struct PassOptions {
    // The form of the algorithm to run, as RunStats::variant names it; empty: chosen. Forms:
    // - MEC's forward: "A" or "B", the paper's Solutions A and B (chosen: A when Q <= 100 and the output is
    //   no larger than the lowered matrix, else B; banded NCHW chunks and a workspace limit A does not fit
    //   run B unless A is asked for);
    // - Winograd's: "F(4x4,3x3)" or "F(2x2,3x3)" (chosen by the error bound and the tile count,
    //   docs/algorithms.md); F(4x4) past its error bound's limit is refused as Unsupported.
    // A form applies to the algorithm and passes that have it, and the others run without it (so one options
    // value serves forward and backward); with it empty, find measures each form. A form that is no
    // algorithm's (or not the named algorithm's in any pass) is refused with Error(InvalidArgument) naming
    // the forms there are.
    std::string variant;
    // Largest binding (and so lowered chunk) in bytes; 0 = the device's maxStorageBufferRange. Lower it to
    // run im2col and MEC in smaller chunks of images or bands of output rows.
    uint64_t max_binding_bytes = 0;
    // Largest workspace a pass may allocate, in bytes; 0 = no limit. im2col and MEC then run in chunks
    // whose workspace fits, split reductions use fewer pieces; an algorithm whose smallest chunk does not
    // fit gets Error(Unsupported), and Auto skips it (Error(InvalidArgument) naming the smallest workspace
    // any algorithm needs when none fits).
    uint64_t workspace_limit = 0;
    // Unset: the context's (ContextOptions::auto_choice).
    std::optional<AutoChoice> auto_choice;
    // Timed runs find makes of each algorithm after its warm-up run (at least 1).
    uint32_t find_repeats = 2;
    // The caller's memory for the pass's workspace (any tensor of the context: a pool tensor, or an
    // application's buffer through wrap_buffer in interop.hpp); null: the pass allocates its workspace from
    // the pool. The pass then plans within the bytes it offers from its first byte on the pool alignment
    // (PoolStats::alignment), as if that were workspace_limit (the lower of the two counts), and allocates
    // nothing: a workspace of the size a workspace query reports, starting on the alignment, is enough.
    // Algorithm::Auto still measures (with pool memory) a problem it has not seen under AutoChoice::Measure.
    // The pass overwrites it; it must not be one of the pass's tensors.
    const Tensor* workspace = nullptr;
};

// Bytes of temporary device memory `algorithm` needs for this forward problem (0 for direct, except an fp32 copy
// of a 16-bit output whose reduction runs in pieces, docs/algorithms.md "Element types"). Exact: the
// pool's in-use counter grows by exactly this much during the pass (allocation rounding included).
// A workspace query never runs GPU work. With Algorithm::Auto it is exact whenever the choice is known
// without measuring (AutoChoice::Stored or Heuristic, or a measurement the context holds); under
// AutoChoice::Measure before measuring, it is the most any algorithm Auto may choose needs, so the
// measured choice fits in it.
uint64_t forward_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                 const PassOptions& options = {});

// The algorithm the heuristic picks for this problem under `options` (docs/algorithms.md, "How auto chooses"); Auto
// uses it where it has no measurement to go by (AutoChoice), and find_algorithms measures instead.
Algorithm choose_forward_algorithm(const Context& context, const ConvProblem& problem, const PassOptions& options = {});

// What the forward pass applies as it writes y (cuDNN's convolution-bias-activation):
//     y = activation(alpha * conv(x, w) + bias + beta * residual)
// inside the kernel that writes each value of y, never as a pass of its own over y; it needs no workspace.
// `residual` (z) has the output's shape and belongs to the context; it may be the output tensor itself (an
// in-place residual add: y's previous contents are z), but must not otherwise share memory with the output,
// and never with the input, filter or bias. A residual needs beta != 0, and beta != 0 needs a residual.
// alpha, beta and negative_slope must be finite. The default epilogue gives exactly the plain forward's y.
struct Epilogue {
    float alpha = 1.0f;
    float beta = 0.0f;
    const Tensor* residual = nullptr;
    Activation activation = Activation::None;
    float negative_slope = 0.01f;  // LeakyReLU's slope for v < 0
};

// y = activation(alpha * conv(x, w) + bias + beta * residual) (Epilogue above; the default one gives
// y = conv(x, w) + bias). `bias` must be non-null exactly when problem.has_bias. `output` must already have
// the problem's output shape; its previous contents are overwritten. The epilogue changes neither the
// algorithms, the plans nor the workspace; RunStats::operand_bytes also counts a residual of its own.
// Error(InvalidArgument) naming the problem for an epilogue that breaks Epilogue's rules.
RunStats forward(Target target, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, Algorithm algorithm = Algorithm::Auto,
                 const PassOptions& options = {}, const Epilogue& epilogue = {});

// Backward passes: gradients of the forward convolution with respect to its input, filter and bias.
// Shapes follow the problem's layout: grad_output has the output shape, grad_input the input shape (the
// problem carries it: for stride > 1 several input sizes give the same output size, as in PyTorch's
// conv2d_input), grad_filter the filter shape, grad_bias [K]. Every algorithm whose row lists the pass runs
// it (algorithm_applies); Auto picks depthwise for depthwise problems, otherwise the lowering (im2col or mec)
// with the smaller workspace for that pass, and direct where neither fits (docs/algorithms.md).
// `options.max_binding_bytes` caps the lowered chunks as in forward.

// Bytes of temporary device memory each pass needs (exact, as forward_workspace_bytes says). For a problem
// with has_bias, backward-filter's figure includes the bias gradient's partial sums (allocated whether or
// not a grad_bias tensor is passed).
uint64_t backward_data_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                       const PassOptions& options = {});
uint64_t backward_filter_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                         const PassOptions& options = {});
// backward_bias's workspace (its partial sums; 0 where it sums straight into db), which backward_bias also
// reports in RunStats::workspace_bytes.
uint64_t backward_bias_workspace_bytes(const Context& context, const ConvProblem& problem,
                                       const PassOptions& options = {});

// dx = conv_transpose(dy, w). Overwrites grad_input.
RunStats backward_data(Target target, const ConvProblem& problem, const Tensor& grad_output, const Tensor& filter,
                       Tensor& grad_input, Algorithm algorithm = Algorithm::Auto, const PassOptions& options = {});

// dw from x and dy; with a non-null grad_bias also db = sum of dy over n, p, q (problem.has_bias must then
// be true). Overwrites its outputs. The reduction order is fixed: results are bit-identical across runs.
RunStats backward_filter(Target target, const ConvProblem& problem, const Tensor& input, const Tensor& grad_output,
                         Tensor& grad_filter, Tensor* grad_bias = nullptr, Algorithm algorithm = Algorithm::Auto,
                         const PassOptions& options = {});

// db alone (options: its workspace limit and caller workspace).
RunStats backward_bias(Target target, const ConvProblem& problem, const Tensor& grad_output, Tensor& grad_bias,
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
LayerBackwardStats layer_backward(Target target, const ConvProblem& problem, const Tensor& input,
                                  const Tensor& filter, const Tensor& grad_output, Tensor& grad_input,
                                  Tensor& grad_filter, Tensor* grad_bias = nullptr,
                                  Algorithm algorithm = Algorithm::Auto, const PassOptions& options = {});

// The transposed convolution (ConvTransposeProblem in problem.hpp) is the backward-data pass of
// problem.convolution(), so every backward-data algorithm runs it (Auto as backward_data chooses), with that
// pass's workspace and memory figures; the bias is added as the output is finished.

// Its workspace: the convolution's backward-data workspace, and where the output reaches past the full
// result, the convolution's input it places from.
uint64_t conv_transpose_workspace_bytes(const Context& context, const ConvTransposeProblem& problem,
                                        Algorithm algorithm = Algorithm::Auto, const PassOptions& options = {});

// output = conv_transpose(input, filter) + bias (bias: [K], only with problem.has_bias). Overwrites output.
RunStats conv_transpose(Target target, const ConvTransposeProblem& problem, const Tensor& input, const Tensor& filter,
                        const Tensor* bias, Tensor& output, Algorithm algorithm = Algorithm::Auto,
                        const PassOptions& options = {});

VKCONV_API_END
}  // namespace vkconv
