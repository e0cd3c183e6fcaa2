#include "separable_layer.hpp"

#include <algorithm>
#include <chrono>
#include <string>

// The SPIR-V of this sample's shaders, compiled at build time (samples/separable_layer/CMakeLists.txt).
#define SEPARABLE_SPIRV(name)           \
    extern const uint32_t name##_spv[]; \
    extern const size_t name##_spv_words;
SEPARABLE_SPIRV(separable_difference)
SEPARABLE_SPIRV(separable_residual)
SEPARABLE_SPIRV(separable_grad_minus)
SEPARABLE_SPIRV(separable_grad_plus)
SEPARABLE_SPIRV(separable_accumulate)

namespace separable {

using vkconv::Algorithm;
using vkconv::BindingAccess;
using vkconv::Error;
using vkconv::ErrorCategory;
using vkconv::Tensor;

void Shape::validate() const {
    auto positive = [](const char* field, int64_t value) {
        if (value <= 0)
            throw Error(ErrorCategory::InvalidArgument,
                        std::string(field) + " must be positive, got " + std::to_string(value));
    };
    positive("frames", frames), positive("channels", channels), positive("height", height), positive("width", width);
    if (frames % 3 != 0)
        throw Error(ErrorCategory::InvalidArgument,
                    "frames must be a multiple of 3 (clips of three time steps), got " + std::to_string(frames));
}

namespace {

// Frames and clips are views at any frame: the kernels index from each binding's element offset.
#define KERNEL(name, ...)                                               \
    vkconv::KernelDesc {                                                \
#name, {name##_spv, name##_spv_words }, {__VA_ARGS__ }, 0, true \
    }
constexpr BindingAccess R = BindingAccess::Read, W = BindingAccess::Write, RW = BindingAccess::ReadWrite;

// One pass's accounting: pool peak from construction, wall time, GPU time and submissions added per call.
class Meter {
public:
    explicit Meter(vkconv::Context& context) : scope_(context), start_(std::chrono::steady_clock::now()) {}
    void add(const vkconv::RunStats& s) { report_.gpu_ms += s.gpu_ms, ++report_.submissions; }
    PassReport finish(uint64_t operand_bytes, uint32_t chunks) {
        report_.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
        report_.peak_bytes = scope_.peak();
        report_.peak_reserved_bytes = scope_.peak_reserved();
        report_.baseline_bytes = scope_.baseline();
        report_.operand_bytes = operand_bytes;
        report_.chunks = chunks;
        return report_;
    }

private:
    vkconv::PeakScope scope_;
    std::chrono::steady_clock::time_point start_;
    PassReport report_;
};

uint64_t pool_bytes(vkconv::Context& context, std::initializer_list<const Tensor*> tensors) {
    const vkconv::PoolStats stats = context.pool_stats();
    uint64_t bytes = 0;
    for (const Tensor* t : tensors) bytes += stats.rounded(t->bytes());
    return bytes;
}

}  // namespace

Layer::Layer(vkconv::Context& context, const Shape& shape, uint64_t workspace_budget)
    : context_(context),
      shape_((shape.validate(), shape)),
      budget_(workspace_budget),
      difference_(context, KERNEL(separable_difference, R, R, W)),
      residual_(context, KERNEL(separable_residual, R, R, RW)),
      grad_minus_(context, KERNEL(separable_grad_minus, R, R, W, W)),
      grad_plus_(context, KERNEL(separable_grad_plus, R, W, RW)),
      accumulate_(context,
                  vkconv::KernelDesc{
                      "separable_accumulate", {separable_accumulate_spv, separable_accumulate_spv_words}, {R, RW}, 4}) {
    // Per chunk of n clips: two frame-sized buffers per clip (difference; convolution output or e), the
    // chunk's partial kernel and bias gradients, and the depthwise backward-filter's partial sums. The
    // largest n whose total fits the budget; the rest of the budget is the passes' workspace limit.
    chunk_clips_ = 1;
    for (int64_t n = shape.clips(); n >= 1; --n) {
        chunk_clips_ = n;
        if (buffer_bytes(n) + vkconv::backward_filter_workspace_bytes(context, problem(n), Algorithm::Depthwise) <=
            budget_)
            break;
    }
}

uint64_t Layer::buffer_bytes(int64_t clips) const {
    const vkconv::PoolStats pool = context_.pool_stats();
    return 2 * pool.rounded(static_cast<uint64_t>(shape_.frame_elements()) * 4 * static_cast<uint64_t>(clips)) +
           pool.rounded(static_cast<uint64_t>(shape_.channels) * 9 * 4) +
           pool.rounded(static_cast<uint64_t>(shape_.channels) * 4);
}

vkconv::ConvProblem Layer::problem(int64_t clips) const {
    vkconv::ConvProblem p;
    p.N = clips, p.C = shape_.channels, p.H = shape_.height, p.W = shape_.width;
    p.K = shape_.channels, p.R = 3, p.S = 3, p.pad_h = 1, p.pad_w = 1;
    p.groups = shape_.channels, p.has_bias = true;
    return p;
}

vkconv::PassOptions Layer::conv_options() const {
    vkconv::PassOptions options;
    const uint64_t buffers = buffer_bytes(chunk_clips_);
    // Where even one clip per chunk exceeds the budget, the passes get no limit of their own (0) rather
    // than one that nothing fits.
    options.workspace_limit = budget_ > buffers ? budget_ - buffers : 0;
    return options;
}

uint64_t Layer::workspace_bytes() const {
    return buffer_bytes(chunk_clips_) + vkconv::backward_filter_workspace_bytes(context_, problem(chunk_clips_),
                                                                                Algorithm::Depthwise, conv_options());
}

PassReport Layer::forward(const Tensor& frames, const Tensor& k_minus, const Tensor& b1, const Tensor& k_plus,
                          const Tensor& b2, Tensor& z) {
    const int64_t clips = shape_.clips(), F = shape_.frame_elements();
    Meter meter(context_);
    Tensor d_all(context_, problem(chunk_clips_).input_shape()), t_all(context_, problem(chunk_clips_).output_shape());
    uint32_t chunks = 0;
    for (int64_t c0 = 0; c0 < clips; c0 += chunk_clips_, ++chunks) {
        const int64_t n = std::min(chunk_clips_, clips - c0);
        const vkconv::ConvProblem p = problem(n);
        Tensor d = d_all.images(0, n), t = t_all.images(0, n), zc = z.images(c0, n);
        auto frame = [&](int64_t clip, int step) { return frames.images(3 * (c0 + clip) + step, 1); };
        for (int64_t i = 0; i < n; ++i) meter.add(difference_.run({frame(i, 1), frame(i, 0), d.images(i, 1)}, F));
        meter.add(vkconv::forward(context_, p, d, k_minus, &b1, zc, Algorithm::Depthwise, conv_options()));
        for (int64_t i = 0; i < n; ++i) meter.add(difference_.run({frame(i, 1), frame(i, 2), d.images(i, 1)}, F));
        meter.add(vkconv::forward(context_, p, d, k_plus, &b2, t, Algorithm::Depthwise, conv_options()));
        for (int64_t i = 0; i < n; ++i) meter.add(residual_.run({t.images(i, 1), frame(i, 1), zc.images(i, 1)}, F));
    }
    d_all = {}, t_all = {};
    return meter.finish(pool_bytes(context_, {&frames, &k_minus, &b1, &k_plus, &b2, &z}), chunks);
}

PassReport Layer::backward(const Tensor& frames, const Tensor& k_minus, const Tensor& k_plus, const Tensor& g,
                           Tensor& df, Tensor& dk_minus, Tensor& dk_plus, Tensor& db1, Tensor& db2) {
    const int64_t clips = shape_.clips(), F = shape_.frame_elements();
    Meter meter(context_);
    Tensor d_all(context_, problem(chunk_clips_).input_shape()), e_all(context_, problem(chunk_clips_).input_shape());
    Tensor dk_part(context_, k_minus.shape()), db_part(context_, db1.shape());
    uint32_t chunks = 0;
    for (int64_t c0 = 0; c0 < clips; c0 += chunk_clips_, ++chunks) {
        const int64_t n = std::min(chunk_clips_, clips - c0);
        const vkconv::ConvProblem p = problem(n);
        const uint32_t first = c0 == 0 ? 1 : 0;
        Tensor d = d_all.images(0, n), e = e_all.images(0, n), gc = g.images(c0, n);
        auto frame = [&](int64_t clip, int step) { return frames.images(3 * (c0 + clip) + step, 1); };
        auto grad = [&](int64_t clip, int step) { return df.images(3 * (c0 + clip) + step, 1); };

        // The f2 - f1 branch: dk_minus and the bias gradient (the same for b1 and b2), then df1 and df2.
        for (int64_t i = 0; i < n; ++i) meter.add(difference_.run({frame(i, 1), frame(i, 0), d.images(i, 1)}, F));
        meter.add(vkconv::backward_filter(context_, p, d, gc, dk_part, &db_part, Algorithm::Depthwise, conv_options()));
        meter.add(accumulate_.run({dk_part, dk_minus}, dk_minus.elements(), first));
        meter.add(accumulate_.run({db_part, db1}, db1.elements(), first));
        meter.add(vkconv::backward_data(context_, p, gc, k_minus, e, Algorithm::Depthwise, conv_options()));
        for (int64_t i = 0; i < n; ++i)
            meter.add(grad_minus_.run({e.images(i, 1), gc.images(i, 1), grad(i, 0), grad(i, 1)}, F));

        // The f2 - f3 branch: dk_plus, then df3, and df2 completed.
        for (int64_t i = 0; i < n; ++i) meter.add(difference_.run({frame(i, 1), frame(i, 2), d.images(i, 1)}, F));
        meter.add(vkconv::backward_filter(context_, p, d, gc, dk_part, nullptr, Algorithm::Depthwise, conv_options()));
        meter.add(accumulate_.run({dk_part, dk_plus}, dk_plus.elements(), first));
        meter.add(vkconv::backward_data(context_, p, gc, k_plus, e, Algorithm::Depthwise, conv_options()));
        for (int64_t i = 0; i < n; ++i) meter.add(grad_plus_.run({e.images(i, 1), grad(i, 2), grad(i, 1)}, F));
    }
    meter.add(accumulate_.run({db1, db2}, db2.elements(), uint32_t{1}));
    d_all = {}, e_all = {}, dk_part = {}, db_part = {};
    return meter.finish(pool_bytes(context_, {&frames, &k_minus, &k_plus, &g, &df, &dk_minus, &dk_plus, &db1, &db2}),
                        chunks);
}

}  // namespace separable
