// ConvProblem — the one descriptor every algorithm, test, benchmark and the CLI speak (and
// ConvTransposeProblem, the transposed convolution's, below).
//
// Sizes follow cuDNN/CUTLASS naming: N images of C channels, H×W pixels; K filters of C/groups channels,
// R×S taps. The output is N×K×P×Q. Cross-correlation (no kernel flip), as every DL framework uses.
// Layout picks both the activation and the filter layout, the two pairs users meet in practice:
//   NCHW activations with OIHW filters (PyTorch), NHWC activations with OHWI (= KRSC) filters (cuDNN NHWC).
// Shapes returned here are in the order of the chosen layout, so they can be compared with a user's .npy.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vkconv/export.hpp"

namespace vkconv {
VKCONV_API_BEGIN

enum class Layout { NCHW, NHWC };

const char* to_string(Layout layout) noexcept;
Layout parse_layout(std::string_view text);  // "nchw" / "nhwc", case-insensitive; throws InvalidArgument

using Shape = std::vector<int64_t>;
std::string shape_string(const Shape& shape);  // "[2, 3, 5, 7]"
// The product of the extents: 1 for an empty shape, 0 when any extent is 0 (however large the others).
// Error(InvalidArgument) for a negative extent or a product past int64.
int64_t shape_elements(const Shape& shape);

// The element type of a tensor: fp32, or 16-bit storage whose values vkconv computes with in fp32. F16 is
// IEEE 754 binary16; BF16 is the top half of an fp32 (fp32's range, 8 bits of precision). Narrowing an
// fp32 value rounds to nearest, ties to even, as PyTorch's .half() and .bfloat16() do.
enum class DataType { F32, F16, BF16 };
const char* to_string(DataType type) noexcept;  // "f32", "f16", "bf16"
// Those names, or "float32", "float16", "bfloat16", case-insensitive; throws InvalidArgument naming them.
DataType parse_data_type(std::string_view text);
uint32_t element_bytes(DataType type) noexcept;  // 4, 2, 2

// How padding follows from the input size, as ONNX's auto_pad and TensorFlow's padding define it: Valid
// pads nothing; SameUpper and SameLower pad so that the output has ceil(input / stride) rows and columns,
// the odd pad going at the end (SameUpper, TensorFlow's SAME) or at the start (SameLower).
enum class AutoPad { Valid, SameUpper, SameLower };

const char* to_string(AutoPad mode) noexcept;  // "valid", "same-upper", "same-lower"
// "valid", "same-upper", "same-lower", case-insensitive, also with '_' (ONNX's SAME_UPPER); throws
// InvalidArgument naming the accepted forms.
AutoPad parse_auto_pad(std::string_view text);

struct ConvProblem {
    int64_t N = 1, C = 1, H = 1, W = 1;  // input
    int64_t K = 1, R = 1, S = 1;         // filters
    // Padding: pad_h rows of zeros above the image and pad_w columns left of it, and as many below and right
    // unless pad_h_end / pad_w_end say otherwise (ONNX's pads [top, left, bottom, right] are pad_h, pad_w,
    // pad_h_end, pad_w_end; TensorFlow's SAME with an even input and stride 2 pads one more at the end).
    int64_t pad_h = 0, pad_w = 0;
    std::optional<int64_t> pad_h_end, pad_w_end;
    int64_t stride_h = 1, stride_w = 1;
    int64_t dilation_h = 1, dilation_w = 1;
    int64_t groups = 1;
    Layout layout = Layout::NCHW;
    bool has_bias = false;
    // The element type of every tensor of the problem (its inputs, outputs and lowered workspaces); products
    // and sums are fp32 whatever it is, and each output is rounded to it once. A pass refuses tensors of
    // another type; algorithms that do not take 16-bit tensors yet refuse F16 and BF16 as Unsupported.
    DataType data_type = DataType::F32;
    // With a 16-bit data_type: backward-filter writes dw and db, and backward-bias db, in fp32 (a training loop
    // that keeps fp32 master weights adds them in as they are); their fp32 sums are stored without rounding.
    // Every other tensor stays in data_type. No effect on an F32 problem.
    bool fp32_weight_gradients = false;
    // The element type of dw and db: F32 where fp32_weight_gradients is set, else data_type.
    DataType weight_gradient_type() const { return fp32_weight_gradients ? DataType::F32 : data_type; }

    // Throws Error(InvalidArgument) naming the field and its value: non-positive sizes, negative padding,
    // C or K not divisible by groups, a dilated kernel larger than the padded input, element counts,
    // the forward multiply-add count or float32 byte counts that overflow int64.
    void validate() const;

    // The four pads, whichever way they were given.
    int64_t pad_top() const { return pad_h; }
    int64_t pad_bottom() const { return pad_h_end.value_or(pad_h); }
    int64_t pad_left() const { return pad_w; }
    int64_t pad_right() const { return pad_w_end.value_or(pad_w); }
    bool symmetric_padding() const { return pad_bottom() == pad_top() && pad_right() == pad_left(); }
    // Sets all four pads; the symmetric ones leave pad_h_end / pad_w_end empty.
    void set_padding(int64_t top, int64_t bottom, int64_t left, int64_t right);
    // Sets the four pads `mode` gives for the current H, W, R, S, strides and dilations (set those first).
    // Throws InvalidArgument naming the field when one of them is not positive.
    void set_auto_padding(AutoPad mode);

    // Derived output size; call validate() first (these assume a valid problem).
    int64_t P() const;
    int64_t Q() const;
    int64_t channels_per_group() const { return C / groups; }
    int64_t filters_per_group() const { return K / groups; }

    // Shapes in the layout's order: input N,C,H,W or N,H,W,C; filter K,C/G,R,S or K,R,S,C/G;
    // output N,K,P,Q or N,P,Q,K; bias K.
    Shape input_shape() const;
    Shape filter_shape() const;
    Shape output_shape() const;
    Shape bias_shape() const { return {K}; }

    int64_t input_elements() const { return N * C * H * W; }
    int64_t filter_elements() const { return K * (C / groups) * R * S; }
    int64_t output_elements() const { return N * K * P() * Q(); }

    // Multiply-adds counted as 2 FLOPs, the convention every benchmark in the field uses.
    double forward_flops() const;

    // Throws InvalidArgument naming `role` ("input", "filter", ...) when `given` differs from `expected`.
    static void check_shape(std::string_view role, const Shape& given, const Shape& expected);

    // One line: "N=1 C=3 H=5 W=7 K=4 R=3 S=3 pad=1,1 stride=1,1 dilation=1,1 groups=1 nchw bias"; with
    // asymmetric padding "pad=top,bottom,left,right" ("pad=0,1,0,1"), and a 16-bit type at the end ("f16", or
    // "f16 dw-f32" with fp32_weight_gradients).
    std::string str() const;
};

// Transposed convolution, as ONNX's ConvTranspose and PyTorch's conv_transpose2d define it (conv_transpose
// in conv.hpp runs it).
//
// Each input pixel scatters its C values, through a C x K/groups x R x S filter, into an R x S window of the
// output, windows `stride` apart and taps `dilation` apart; the pads crop the full result at each side and
// output_padding adds rows and columns at the bottom and right. It is the backward-data pass of the
// convolution that maps the output back to the input (`convolution()`).
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
    // The element type of every tensor (input, filter, bias, output), as ConvProblem::data_type: sums in fp32,
    // each output value rounded once (the bias included).
    DataType data_type = DataType::F32;

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

    // One line: "N=1 C=3 H=5 W=7 K=4 R=3 S=3 pad=0,1,0,1 output_padding=1,1 stride=2,2 dilation=1,1 groups=1 nchw",
    // then " bias" with a bias and the type where it is 16-bit (" f16").
    std::string str() const;
};

// The passes of a convolution. Backward-bias has one algorithm (the bias-gradient kernel): find_algorithms
// (find.hpp) has nothing to choose among there and refuses it.
enum class Pass { Forward, BackwardData, BackwardFilter, BackwardBias };
const char* to_string(Pass pass) noexcept;  // "forward", "backward-data", "backward-filter", "backward-bias"
Pass parse_pass(std::string_view text);     // those names, case-insensitive; throws InvalidArgument

VKCONV_API_END
}  // namespace vkconv
