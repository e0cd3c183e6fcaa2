// ConvProblem: validation, derived sizes, shapes and the layout names.
#include "vkconv/problem.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <limits>

#include "vkconv/error.hpp"

namespace vkconv {

namespace {

[[noreturn]] void invalid(const std::string& message) {
    throw Error(ErrorCategory::InvalidArgument, "ConvProblem: " + message);
}

std::string named(const char* name, int64_t value) {
    return std::string(name) + " (=" + std::to_string(value) + ")";
}

void require_positive(const char* name, int64_t value) {
    if (value <= 0) invalid(named(name, value) + " must be positive");
}

void require_non_negative(const char* name, int64_t value) {
    if (value < 0) invalid(named(name, value) + " must be >= 0");
}

struct Factor {
    const char* name;
    int64_t value;
};

// The message lists every factor, because the caller usually cannot tell which size was the absurd one.
void require_product_fits(const char* what, std::initializer_list<Factor> factors) {
    int64_t product = 1;
    bool overflow = false;
    std::string formula, values;
    for (const Factor& f : factors) {
        overflow = __builtin_mul_overflow(product, f.value, &product) || overflow;
        formula += (formula.empty() ? "" : "*") + std::string(f.name);
        values += (values.empty() ? "" : ", ") + std::string(f.name) + "=" + std::to_string(f.value);
    }
    if (overflow) invalid(std::string(what) + " " + formula + " overflows int64 (" + values + ")");
}

// Tensors are float32, and the engine sizes their buffers in bytes as int64 (elements * 4): that must fit too.
void require_bytes_fit(const char* tensor, const char* formula, int64_t elements) {
    if (elements > std::numeric_limits<int64_t>::max() / int64_t(sizeof(float)))
        invalid(std::string(tensor) + " size in bytes " + formula + "*4 overflows int64 (" + formula + "=" +
                std::to_string(elements) + ")");
}

// One spatial dimension's names, so height and width share the checks and their messages.
struct Axis {
    const char* dimension;  // "height"
    const char* size_name;  // "H"
    const char* pad_name;   // "pad_h"
    const char* end_name;   // "pad_h_end"
    const char* dilation_name;
    const char* taps_name;  // "R"
    int64_t size, pad, pad_end, dilation, taps;
    bool symmetric;  // no end pad of its own: the messages say size+2*pad
};

void require_window_fits(const Axis& a) {
    int64_t padded = 0, extent = 0;
    const std::string padded_formula = std::string(a.size_name) + (a.symmetric ? std::string("+2*") + a.pad_name
                                                                               : std::string("+") + a.pad_name + "+" +
                                                                                     a.end_name);
    const std::string pads = a.symmetric ? std::string(a.pad_name) + "=" + std::to_string(a.pad)
                                         : std::string(a.pad_name) + "=" + std::to_string(a.pad) + ", " + a.end_name +
                                               "=" + std::to_string(a.pad_end);
    if (__builtin_add_overflow(a.pad, a.pad_end, &padded) || __builtin_add_overflow(a.size, padded, &padded))
        invalid(std::string("padded input ") + a.dimension + " " + padded_formula + " overflows int64 (" +
                a.size_name + "=" + std::to_string(a.size) + ", " + pads + ")");
    if (__builtin_mul_overflow(a.dilation, a.taps - 1, &extent) || __builtin_add_overflow(extent, int64_t{1}, &extent))
        invalid(std::string("dilated kernel ") + a.dimension + " " + a.dilation_name + "*(" + a.taps_name +
                "-1)+1 overflows int64 (" + a.dilation_name + "=" + std::to_string(a.dilation) + ", " + a.taps_name +
                "=" + std::to_string(a.taps) + ")");
    // A pad beyond the dilated kernel is allowed, as torch and ONNX allow it: the outer output rows (columns)
    // see nothing but padding, so the forward pass gives them the bias alone and they add nothing to dx or dw.
    if (extent > padded)
        invalid(std::string("dilated kernel ") + a.dimension + " " + a.dilation_name + "*(" + a.taps_name +
                "-1)+1 (=" + std::to_string(extent) + ") is larger than the padded input " + a.dimension + " " +
                padded_formula + " (=" + std::to_string(padded) + ")");
}

int64_t output_size(int64_t size, int64_t pad, int64_t pad_end, int64_t dilation, int64_t taps, int64_t stride) {
    return (size + pad + pad_end - dilation * (taps - 1) - 1) / stride + 1;
}

}  // namespace

const char* to_string(Layout layout) noexcept {
    switch (layout) {
        case Layout::NCHW:
            return "nchw";
        case Layout::NHWC:
            return "nhwc";
    }
    return "unknown";
}

Layout parse_layout(std::string_view text) {
    std::string lower;
    for (char ch : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == "nchw") return Layout::NCHW;
    if (lower == "nhwc") return Layout::NHWC;
    throw Error(ErrorCategory::InvalidArgument, "unknown layout '" + std::string(text) + "' (expected nchw or nhwc)");
}

std::string shape_string(const Shape& shape) {
    std::string out = "[";
    for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
    return out + "]";
}

int64_t shape_elements(const Shape& shape) {
    for (int64_t extent : shape)
        if (extent < 0)
            throw Error(ErrorCategory::InvalidArgument,
                        "shape " + shape_string(shape) + " has a negative extent " + std::to_string(extent));
    // A zero extent wins over any overflow of the others, as in numpy: (2**40, 2**40, 0) holds nothing.
    for (int64_t extent : shape)
        if (extent == 0) return 0;
    int64_t product = 1;
    for (int64_t extent : shape)
        if (__builtin_mul_overflow(product, extent, &product))
            throw Error(ErrorCategory::InvalidArgument,
                        "shape " + shape_string(shape) + " has more elements than int64 holds");
    return product;
}

void ConvProblem::validate() const {
    require_positive("N", N);
    require_positive("C", C);
    require_positive("H", H);
    require_positive("W", W);
    require_positive("K", K);
    require_positive("R", R);
    require_positive("S", S);
    require_non_negative("pad_h", pad_h);
    require_non_negative("pad_w", pad_w);
    if (pad_h_end) require_non_negative("pad_h_end", *pad_h_end);
    if (pad_w_end) require_non_negative("pad_w_end", *pad_w_end);
    require_positive("stride_h", stride_h);
    require_positive("stride_w", stride_w);
    require_positive("dilation_h", dilation_h);
    require_positive("dilation_w", dilation_w);
    require_positive("groups", groups);
    if (data_type != DataType::F32 && data_type != DataType::F16 && data_type != DataType::BF16)
        invalid("data_type " + std::to_string(static_cast<int>(data_type)) + " is not F32, F16 or BF16");
    if (C % groups != 0) invalid(named("C", C) + " is not divisible by " + named("groups", groups));
    if (K % groups != 0) invalid(named("K", K) + " is not divisible by " + named("groups", groups));

    require_window_fits({"height", "H", "pad_h", "pad_h_end", "dilation_h", "R", H, pad_h, pad_bottom(), dilation_h, R,
                         pad_bottom() == pad_h});
    require_window_fits({"width", "W", "pad_w", "pad_w_end", "dilation_w", "S", W, pad_w, pad_right(), dilation_w, S,
                         pad_right() == pad_w});
    // Unreachable once the window fits; kept so a future change to the formula cannot yield an empty output.
    if (P() <= 0 || Q() <= 0) invalid("output size " + named("P", P()) + " x " + named("Q", Q()) + " is empty");

    const int64_t Cg = C / groups, p = P(), q = Q();
    require_product_fits("input element count", {{"N", N}, {"C", C}, {"H", H}, {"W", W}});
    require_product_fits("filter element count", {{"K", K}, {"C/groups", Cg}, {"R", R}, {"S", S}});
    require_product_fits("output element count", {{"N", N}, {"K", K}, {"P", p}, {"Q", q}});
    require_product_fits("forward multiply-add count",
                         {{"N", N}, {"K", K}, {"P", p}, {"Q", q}, {"C/groups", Cg}, {"R", R}, {"S", S}});
    require_bytes_fit("input", "N*C*H*W", input_elements());
    require_bytes_fit("filter", "K*C/groups*R*S", filter_elements());
    require_bytes_fit("output", "N*K*P*Q", output_elements());
}

int64_t ConvProblem::P() const {
    return output_size(H, pad_top(), pad_bottom(), dilation_h, R, stride_h);
}
int64_t ConvProblem::Q() const {
    return output_size(W, pad_left(), pad_right(), dilation_w, S, stride_w);
}

const char* to_string(Pass pass) noexcept {
    switch (pass) {
        case Pass::Forward:
            return "forward";
        case Pass::BackwardData:
            return "backward-data";
        case Pass::BackwardFilter:
            return "backward-filter";
        case Pass::BackwardBias:
            return "backward-bias";
    }
    return "unknown";
}

Pass parse_pass(std::string_view text) {
    std::string name(text);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter, Pass::BackwardBias})
        if (name == to_string(pass)) return pass;
    throw Error(ErrorCategory::InvalidArgument, "unknown pass '" + std::string(text) +
                                                    "' (expected forward, backward-data, backward-filter or "
                                                    "backward-bias)");
}

const char* to_string(DataType type) noexcept {
    switch (type) {
        case DataType::F32:
            return "f32";
        case DataType::F16:
            return "f16";
        case DataType::BF16:
            return "bf16";
    }
    return "unknown";
}

DataType parse_data_type(std::string_view text) {
    std::string name(text);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "f32" || name == "float32") return DataType::F32;
    if (name == "f16" || name == "float16") return DataType::F16;
    if (name == "bf16" || name == "bfloat16") return DataType::BF16;
    throw Error(ErrorCategory::InvalidArgument, "unknown element type '" + std::string(text) +
                                                    "' (expected f32, f16 or bf16, or float32, float16 or bfloat16)");
}

uint32_t element_bytes(DataType type) noexcept {
    return type == DataType::F32 ? 4 : 2;
}

const char* to_string(AutoPad mode) noexcept {
    switch (mode) {
        case AutoPad::Valid:
            return "valid";
        case AutoPad::SameUpper:
            return "same-upper";
        case AutoPad::SameLower:
            return "same-lower";
    }
    return "unknown";
}

AutoPad parse_auto_pad(std::string_view text) {
    std::string lower;
    for (char ch : text) lower += ch == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (AutoPad mode : {AutoPad::Valid, AutoPad::SameUpper, AutoPad::SameLower})
        if (lower == to_string(mode)) return mode;
    throw Error(ErrorCategory::InvalidArgument,
                "unknown auto padding '" + std::string(text) + "' (expected valid, same-upper or same-lower)");
}

void ConvProblem::set_auto_padding(AutoPad mode) {
    for (const auto& [name, value] : {std::pair{"H", H}, {"W", W}, {"R", R}, {"S", S}, {"stride_h", stride_h},
                                      {"stride_w", stride_w}, {"dilation_h", dilation_h}, {"dilation_w", dilation_w}})
        if (value <= 0) invalid("auto padding needs " + named(name, value) + " to be positive");
    // ONNX: output = ceil(size / stride); the pads make up what its windows reach beyond the input.
    auto pads = [mode](int64_t size, int64_t taps, int64_t stride, int64_t dilation) {
        if (mode == AutoPad::Valid) return std::pair<int64_t, int64_t>{0, 0};
        const int64_t out = (size + stride - 1) / stride;
        const __int128 reach = __int128(out - 1) * stride + __int128(taps - 1) * dilation + 1 - size;
        if (reach > std::numeric_limits<int64_t>::max())
            invalid("auto padding: the windows' reach (output-1)*stride+dilation*(taps-1)+1 overflows int64");
        const int64_t total = std::max<int64_t>(0, int64_t(reach));
        const int64_t small = total / 2, large = total - small;
        return mode == AutoPad::SameUpper ? std::pair{small, large} : std::pair{large, small};
    };
    const auto [top, bottom] = pads(H, R, stride_h, dilation_h);
    const auto [left, right] = pads(W, S, stride_w, dilation_w);
    set_padding(top, bottom, left, right);
}

void ConvProblem::set_padding(int64_t top, int64_t bottom, int64_t left, int64_t right) {
    pad_h = top, pad_w = left;
    pad_h_end = bottom == top ? std::nullopt : std::optional<int64_t>(bottom);
    pad_w_end = right == left ? std::nullopt : std::optional<int64_t>(right);
}

Shape ConvProblem::input_shape() const {
    return layout == Layout::NCHW ? Shape{N, C, H, W} : Shape{N, H, W, C};
}

Shape ConvProblem::filter_shape() const {
    const int64_t Cg = channels_per_group();
    return layout == Layout::NCHW ? Shape{K, Cg, R, S} : Shape{K, R, S, Cg};
}

Shape ConvProblem::output_shape() const {
    return layout == Layout::NCHW ? Shape{N, K, P(), Q()} : Shape{N, P(), Q(), K};
}

double ConvProblem::forward_flops() const {
    // validate() guarantees the integer product fits, so it is exact before the conversion.
    return 2.0 * static_cast<double>(N * K * P() * Q() * channels_per_group() * R * S);
}

void ConvProblem::check_shape(std::string_view role, const Shape& given, const Shape& expected) {
    if (given != expected)
        throw Error(ErrorCategory::InvalidArgument, std::string(role) + " shape " + shape_string(given) +
                                                        " does not match the expected shape " + shape_string(expected));
}

std::string ConvProblem::str() const {
    auto pair = [](int64_t a, int64_t b) { return std::to_string(a) + "," + std::to_string(b); };
    std::string out = "N=" + std::to_string(N) + " C=" + std::to_string(C) + " H=" + std::to_string(H) +
                      " W=" + std::to_string(W) + " K=" + std::to_string(K) + " R=" + std::to_string(R) +
                      " S=" + std::to_string(S) + " pad=" +
                      (symmetric_padding() ? pair(pad_h, pad_w)
                                           : pair(pad_top(), pad_bottom()) + "," + pair(pad_left(), pad_right())) +
                      " stride=" + pair(stride_h, stride_w) +
                      " dilation=" + pair(dilation_h, dilation_w) + " groups=" + std::to_string(groups) + " " +
                      to_string(layout);
    if (has_bias) out += " bias";
    if (data_type == DataType::F32) return out;
    return out + " " + to_string(data_type) + (fp32_weight_gradients ? " dw-f32" : "");
}

}  // namespace vkconv
