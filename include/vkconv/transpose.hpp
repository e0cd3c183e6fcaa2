// Transposed convolution, as ONNX's ConvTranspose and PyTorch's conv_transpose2d define it.
//
// Each input pixel scatters its C values, through a C x K/groups x R x S filter, into an R x S window of the
// output, windows `stride` apart and taps `dilation` apart; the pads crop the full result at each side and
// output_padding adds rows and columns at the bottom and right. It is the backward-data pass of the
// convolution that maps the output back to the input (`convolution()`), so every backward-data algorithm
// runs it, with that pass's workspace and memory figures; the bias is added as the output is finished.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "vkconv/backward.hpp"
#include "vkconv/export.hpp"

namespace vkconv {
VKCONV_API_BEGIN

struct ConvTransposeProblem {
    int64_t N = 1, C = 1, H = 1, W = 1;  // input: N images of C channels (ONNX's C_in), H x W
    int64_t K = 1, R = 1, S = 1;         // K output channels (C_out); the filter is C x K/groups x R x S
    int64_t stride_h = 1, stride_w = 1;
    int64_t dilation_h = 1, dilation_w = 1;
    int64_t groups = 1;
    // Rows and columns cropped from the full result (ONNX's pads [top, left, bottom, right]).
    int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
    // Rows and columns added at the bottom and right (each less than its stride or its dilation).
    int64_t output_padding_h = 0, output_padding_w = 0;
    // SameUpper / SameLower: the output is H*stride_h x W*stride_w and the pads follow, the odd crop at the
    // end (SameUpper) or the start (SameLower), as ONNX defines them; the explicit pads must then be 0.
    std::optional<AutoPad> auto_pad;
    // ONNX's output_shape {rows, columns}: the pads follow from it (the explicit ones must then be 0). Rows
    // and columns past the full result, at either end, get the bias alone.
    std::optional<std::array<int64_t, 2>> output_size;
    Layout layout = Layout::NCHW;  // NCHW activations with C x K/G x R x S filters, or NHWC with C x R x S x K/G
    bool has_bias = false;

    // Throws Error(InvalidArgument) naming the field and its value: non-positive sizes, negative pads or
    // output padding, output padding not less than the stride or the dilation, C or K not divisible by
    // groups, auto_pad or output_size together with explicit pads, a crop larger than the dilated kernel,
    // an output_size that reaches no row of the result, sizes from 2^31 on.
    void validate() const;

    // The four pads after auto_pad and output_size (negative where the output reaches past the full result).
    std::array<int64_t, 4> resolved_pads() const;  // top, bottom, left, right
    int64_t P() const;                             // output rows
    int64_t Q() const;                             // output columns

    Shape input_shape() const;   // N,C,H,W or N,H,W,C
    Shape filter_shape() const;  // C,K/G,R,S or C,R,S,K/G
    Shape output_shape() const;  // N,K,P,Q or N,P,Q,K
    Shape bias_shape() const { return {K}; }

    // The convolution whose backward-data pass this is: N images of K channels, C filters of K/groups x R x S,
    // with the strides, dilations and groups, and pads that make its output H x W. Its input is the output's
    // rows and columns the result reaches: all P x Q unless output_size asks for more (output_beyond_result).
    ConvProblem convolution() const;
    // Where the convolution's input sits in the output: rows and columns before it (of the output_size past
    // the full result's start).
    std::array<int64_t, 2> convolution_origin() const;
    // Whether the output reaches past what the convolution covers (output_size beyond the full result): the
    // pass then writes the convolution's input to a workspace and places it in the output with the bias.
    bool output_beyond_result() const;

    // One line: "N=1 C=3 H=5 W=7 K=4 R=3 S=3 pad=0,1,0,1 output_padding=1,1 stride=2,2 dilation=1,1 groups=1 nchw".
    std::string str() const;
};

// Bytes of temporary device memory conv_transpose needs: its convolution's backward-data workspace, and
// where the output reaches past the full result, the convolution's input it places from.
uint64_t conv_transpose_workspace_bytes(const Context& context, const ConvTransposeProblem& problem,
                                        Algorithm algorithm = Algorithm::Auto, const PassOptions& options = {});

// output = conv_transpose(input, filter) + bias (bias: [K], only with problem.has_bias). Every
// backward-data algorithm runs it (Auto as backward_data chooses). Overwrites output.
RunStats conv_transpose(Context& context, const ConvTransposeProblem& problem, const Tensor& input,
                        const Tensor& filter, const Tensor* bias, Tensor& output, Algorithm algorithm = Algorithm::Auto,
                        const PassOptions& options = {});
RunStats conv_transpose(Recording& recording, const ConvTransposeProblem& problem, const Tensor& input,
                        const Tensor& filter, const Tensor* bias, Tensor& output, Algorithm algorithm = Algorithm::Auto,
                        const PassOptions& options = {});

VKCONV_API_END
}  // namespace vkconv
