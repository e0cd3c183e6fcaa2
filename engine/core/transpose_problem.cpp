// ConvTransposeProblem: ONNX ConvTranspose's output size and pads, validation, and the convolution whose
// backward-data pass it is.
#include <algorithm>
#include <limits>

#include "vkconv/error.hpp"
#include "vkconv/problem.hpp"

namespace vkconv {
namespace {

[[noreturn]] void invalid(const std::string& message) {
    throw Error(ErrorCategory::InvalidArgument, "ConvTransposeProblem: " + message);
}

std::string named(const char* name, int64_t value) {
    return std::string(name) + " (=" + std::to_string(value) + ")";
}

// Python's floor division, which ONNX's definition of the pads uses (-1 // 2 == -1).
int64_t floor_div(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// One spatial axis of the problem, with its fields' names for the messages.
struct Axis {
    const char* size_name;  // "H"
    const char* taps_name;  // "R"
    const char* begin_name;
    const char* end_name;
    const char* output_padding_name;
    int64_t size, taps, stride, dilation, begin, end, output_padding;
    std::optional<int64_t> output_size;
    std::optional<AutoPad> auto_pad;

    int64_t extent() const { return (taps - 1) * dilation + 1; }
    int64_t full() const { return stride * (size - 1) + output_padding + extent(); }
    // The pads {begin, end} ONNX's attributes give (negative where the output reaches past the full result).
    std::pair<int64_t, int64_t> pads() const {
        if (output_size || (auto_pad && *auto_pad != AutoPad::Valid)) {
            const int64_t out = output_size ? *output_size : size * stride;
            const int64_t total = full() - out;
            const bool upper = auto_pad && *auto_pad == AutoPad::SameUpper;
            const int64_t b = upper ? floor_div(total, 2) : total - floor_div(total, 2);
            return {b, total - b};
        }
        return {begin, end};
    }
    int64_t out() const {
        const auto [b, e] = pads();
        return full() - b - e;
    }
    // The output rows the convolution covers: [before, before + rows), where `before` rows precede the full
    // result (a negative begin pad) and the convolution's windows reach at most stride - 1 rows past its
    // last; the rest, before and after, get the bias alone.
    int64_t before() const { return std::max<int64_t>(0, -pads().first); }
    int64_t rows() const {
        const int64_t top = std::max<int64_t>(0, pads().first);
        return std::min(out() - before(), stride * size - 1 + extent() - top);
    }
};

Axis height(const ConvTransposeProblem& p) {
    return {"H", "R", "pad_top", "pad_bottom", "output_padding_h", p.H, p.R, p.stride_h, p.dilation_h, p.pad_top,
            p.pad_bottom, p.output_padding_h,
            p.output_size ? std::optional<int64_t>((*p.output_size)[0]) : std::nullopt, p.auto_pad};
}

Axis width(const ConvTransposeProblem& p) {
    return {"W", "S", "pad_left", "pad_right", "output_padding_w", p.W, p.S, p.stride_w, p.dilation_w, p.pad_left,
            p.pad_right, p.output_padding_w,
            p.output_size ? std::optional<int64_t>((*p.output_size)[1]) : std::nullopt, p.auto_pad};
}

void require_positive(const char* name, int64_t value) {
    if (value <= 0) invalid(named(name, value) + " must be positive");
}

// What the convolution needs of one axis: an output that starts at the full result's first row and ends
// at most stride - 1 rows past what the convolution's windows map.
void check_axis(const Axis& a, const char* dimension) {
    if (a.output_padding < 0) invalid(named(a.output_padding_name, a.output_padding) + " must be >= 0");
    if (a.output_padding >= a.stride && a.output_padding >= a.dilation)
        invalid(named(a.output_padding_name, a.output_padding) + " must be less than the stride or the dilation");
    const bool derived = a.output_size || (a.auto_pad && *a.auto_pad != AutoPad::Valid);
    if (!derived) {
        if (a.begin < 0) invalid(named(a.begin_name, a.begin) + " must be >= 0");
        if (a.end < 0) invalid(named(a.end_name, a.end) + " must be >= 0");
    }
    // A crop beyond the dilated kernel is allowed, as torch and ONNX allow it: the convolution it is the
    // backward-data pass of then pads beyond its kernel, whose outer rows only feed the rows cropped away.
    if (a.output_size && *a.output_size <= 0)
        invalid(std::string("output ") + dimension + " (=" + std::to_string(*a.output_size) + ") must be positive");
    if (a.out() <= 0)
        invalid(std::string("the output ") + dimension + " " + std::to_string(a.out()) +
                " is empty: the pads crop the whole result (" + std::to_string(a.full()) + ")");
    if (a.rows() <= 0)
        invalid(std::string("the output ") + dimension + " " + std::to_string(a.out()) +
                " reaches no row of the result: it ends before the full result's first");
}

}  // namespace

std::array<int64_t, 4> ConvTransposeProblem::resolved_pads() const {
    const auto [top, bottom] = height(*this).pads();
    const auto [left, right] = width(*this).pads();
    return {top, bottom, left, right};
}

int64_t ConvTransposeProblem::P() const {
    return height(*this).out();
}

int64_t ConvTransposeProblem::Q() const {
    return width(*this).out();
}

void ConvTransposeProblem::validate() const {
    for (const auto& [name, value] : {std::pair{"N", N}, {"C", C}, {"H", H}, {"W", W}, {"K", K}, {"R", R}, {"S", S},
                                      {"stride_h", stride_h}, {"stride_w", stride_w}, {"dilation_h", dilation_h},
                                      {"dilation_w", dilation_w}, {"groups", groups}})
        require_positive(name, value);
    if (C % groups != 0) invalid(named("C", C) + " is not divisible by " + named("groups", groups));
    if (K % groups != 0) invalid(named("K", K) + " is not divisible by " + named("groups", groups));
    if (data_type != DataType::F32 && data_type != DataType::F16 && data_type != DataType::BF16)
        invalid("data_type " + std::to_string(static_cast<int>(data_type)) + " is not F32, F16 or BF16");
    const bool explicit_pads = pad_top || pad_bottom || pad_left || pad_right;
    if (explicit_pads && auto_pad && *auto_pad != AutoPad::Valid)
        invalid(std::string("auto_pad ") + to_string(*auto_pad) + " and explicit pads cannot be combined");
    if (explicit_pads && output_size) invalid("output_size and explicit pads cannot be combined: the pads follow from it");
    // Sizes far past any tensor first: the arithmetic below stays within int64.
    constexpr int64_t kLimit = int64_t{1} << 31;
    for (const auto& [name, value] :
         {std::pair{"H", H}, {"W", W}, {"R", R}, {"S", S}, {"stride_h", stride_h}, {"stride_w", stride_w},
          {"dilation_h", dilation_h}, {"dilation_w", dilation_w}, {"pad_top", pad_top}, {"pad_bottom", pad_bottom},
          {"pad_left", pad_left}, {"pad_right", pad_right}, {"output_padding_h", output_padding_h},
          {"output_padding_w", output_padding_w}})
        if (value >= kLimit) invalid(named(name, value) + " must be less than 2^31");
    if (output_size)
        for (int64_t v : *output_size)
            if (v >= kLimit) invalid("output size " + std::to_string(v) + " must be less than 2^31");
    check_axis(height(*this), "height");
    check_axis(width(*this), "width");
    try {
        convolution().validate();
    } catch (const Error& e) {
        invalid(std::string("its convolution is invalid: ") + e.what());
    }
}

Shape ConvTransposeProblem::input_shape() const {
    return layout == Layout::NCHW ? Shape{N, C, H, W} : Shape{N, H, W, C};
}

Shape ConvTransposeProblem::filter_shape() const {
    return layout == Layout::NCHW ? Shape{C, K / groups, R, S} : Shape{C, R, S, K / groups};
}

Shape ConvTransposeProblem::output_shape() const {
    return layout == Layout::NCHW ? Shape{N, K, P(), Q()} : Shape{N, P(), Q(), K};
}

ConvProblem ConvTransposeProblem::convolution() const {
    const Axis h = height(*this), w = width(*this);
    ConvProblem q;
    q.N = N, q.C = K, q.H = h.rows(), q.W = w.rows(), q.K = C, q.R = R, q.S = S;
    q.stride_h = stride_h, q.stride_w = stride_w, q.dilation_h = dilation_h, q.dilation_w = dilation_w;
    q.groups = groups, q.layout = layout, q.data_type = data_type;
    // Begin pads as given (none where the output starts before the full result); end pads the fewest that
    // make the convolution's output exactly H x W.
    auto pads = [](const Axis& a) {
        const int64_t begin = std::max<int64_t>(0, a.pads().first);
        return std::pair{begin, std::max<int64_t>(0, a.stride * (a.size - 1) + a.extent() - a.rows() - begin)};
    };
    const auto [top, bottom] = pads(h);
    const auto [left, right] = pads(w);
    q.set_padding(top, bottom, left, right);
    return q;
}

std::array<int64_t, 2> ConvTransposeProblem::convolution_origin() const {
    return {height(*this).before(), width(*this).before()};
}

bool ConvTransposeProblem::output_beyond_result() const {
    const ConvProblem q = convolution();
    return q.H != P() || q.W != Q();
}

std::string ConvTransposeProblem::str() const {
    auto pair = [](int64_t a, int64_t b) { return std::to_string(a) + "," + std::to_string(b); };
    const auto pads = resolved_pads();
    std::string out = "N=" + std::to_string(N) + " C=" + std::to_string(C) + " H=" + std::to_string(H) +
                      " W=" + std::to_string(W) + " K=" + std::to_string(K) + " R=" + std::to_string(R) +
                      " S=" + std::to_string(S) + " pad=" + pair(pads[0], pads[1]) + "," + pair(pads[2], pads[3]) +
                      " output_padding=" + pair(output_padding_h, output_padding_w) +
                      " stride=" + pair(stride_h, stride_w) + " dilation=" + pair(dilation_h, dilation_w) +
                      " groups=" + std::to_string(groups) + " " + to_string(layout);
    if (has_bias) out += " bias";
    return data_type == DataType::F32 ? out : out + " " + to_string(data_type);
}

}  // namespace vkconv
