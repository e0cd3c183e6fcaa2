#include "separable_layer.hpp"

#include <algorithm>
#include <chrono>
#include <span>
#include <string>
#include <vector>

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

uint64_t pool_bytes(vkconv::Context& context, std::initializer_list<const Tensor*> tensors) {
    const vkconv::PoolStats stats = context.pool_stats();
    uint64_t bytes = 0;
    for (const Tensor* t : tensors) bytes += stats.rounded(t->bytes());
    return bytes;
}

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

// The problems of the 16-bit elementwise passes: a 1x1 convolution by ones, one channel a group, over one frame
// (C channels of H x W) or over a kernel-shaped tensor (C x 1 x 3 x 3, seen as C images of 1 x 3 x 3).
vkconv::ConvProblem ones_problem(const Shape& shape, vkconv::DataType type, bool filter_sized) {
    vkconv::ConvProblem p;
    if (filter_sized)
        p.N = shape.channels, p.C = 1, p.H = 3, p.W = 3, p.K = 1;
    else
        p.N = 1, p.C = shape.channels, p.H = shape.height, p.W = shape.width, p.K = shape.channels;
    p.groups = p.C, p.data_type = type;
    return p;
}

}  // namespace

Layer::Layer(vkconv::Context& context, const Shape& shape, uint64_t workspace_budget, vkconv::DataType type)
    : context_(context),
      shape_((shape.validate(), shape)),
      budget_(workspace_budget),
      type_(type),
      difference_(context, KERNEL(separable_difference, R, R, W)),
      residual_(context, KERNEL(separable_residual, R, R, RW)),
      grad_minus_(context, KERNEL(separable_grad_minus, R, R, W, W)),
      grad_plus_(context, KERNEL(separable_grad_plus, R, W, RW)),
      accumulate_(context,
                  vkconv::KernelDesc{
                      "separable_accumulate", {separable_accumulate_spv, separable_accumulate_spv_words}, {R, RW}, 4}) {
    if (sixteen_bit()) {
        size_chunks_16bit();
        const std::vector<float> ones(static_cast<size_t>(shape.channels), 1.0f);
        frame_ones_ = Tensor::from_host(context, ones_problem(shape, type, false).filter_shape(), ones, type);
        filter_ones_ = Tensor::from_host(context, ones_problem(shape, type, true).filter_shape(),
                                         std::span<const float>(ones.data(), 1), type);
        return;
    }
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
    const uint64_t bytes = vkconv::element_bytes(type_);
    // 16-bit: no partial bias gradient (db is one backward_bias over all of g, after the chunks).
    return 2 * pool.rounded(static_cast<uint64_t>(shape_.frame_elements()) * bytes * static_cast<uint64_t>(clips)) +
           pool.rounded(static_cast<uint64_t>(shape_.channels) * 9 * bytes) +
           (sixteen_bit() ? 0 : pool.rounded(static_cast<uint64_t>(shape_.channels) * bytes));
}

std::optional<std::pair<Algorithm, uint64_t>> Layer::plan_16bit(int64_t clips, std::string& why) const {
    vkconv::ConvProblem p = problem(clips), no_bias = p;
    no_bias.has_bias = false;  // dk alone: db is backward_bias's
    for (Algorithm a : {Algorithm::Depthwise, Algorithm::Direct}) {
        try {
            const uint64_t workspace = std::max({vkconv::forward_workspace_bytes(context_, p, a),
                                                 vkconv::backward_data_workspace_bytes(context_, p, a),
                                                 vkconv::backward_filter_workspace_bytes(context_, no_bias, a)});
            return std::pair{a, workspace};
        } catch (const Error& e) {
            if (e.category() != ErrorCategory::Unsupported) throw;
            why = e.what();
        }
    }
    return std::nullopt;
}

// As the f32 layer sizes its chunks, and only among chunks whose convolutions run in the type (a direct
// backward-filter over more output positions than it reduces in one piece refuses 16-bit problems).
void Layer::size_chunks_16bit() {
    std::string why;
    std::optional<std::pair<Algorithm, uint64_t>> chosen;
    for (int64_t n = shape_.clips(); n >= 1; --n) {
        const auto plan = plan_16bit(n, why);
        if (!plan) continue;
        chunk_clips_ = n, chosen = plan;
        if (buffer_bytes(n) + plan->second <= budget_) break;
    }
    if (!chosen)
        throw Error(ErrorCategory::Unsupported, std::string("the separable layer does not run in ") +
                                                    vkconv::to_string(type_) + " here, even one clip a chunk: " + why);
    algorithm_ = chosen->first;
    // db: one backward_bias over all of g, after the chunks' buffers are gone. Its fp32 partial sums get the
    // budget as their limit where they fit it, else none (a 16-bit db is not summed in pieces, so a limit they
    // exceed would only refuse it). A bias gradient the device cannot run fails here, naming why.
    bias_limit_ = vkconv::backward_bias_workspace_bytes(context_, problem(shape_.clips())) <= budget_ ? budget_ : 0;
}

vkconv::ConvProblem Layer::problem(int64_t clips) const {
    vkconv::ConvProblem p;
    p.N = clips, p.C = shape_.channels, p.H = shape_.height, p.W = shape_.width;
    p.K = shape_.channels, p.R = 3, p.S = 3, p.pad_h = 1, p.pad_w = 1;
    p.groups = shape_.channels, p.has_bias = true, p.data_type = type_;
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
    if (sixteen_bit()) {
        std::string why;
        const auto plan = plan_16bit(chunk_clips_, why);
        return buffer_bytes(chunk_clips_) + (plan ? plan->second : 0);
    }
    return buffer_bytes(chunk_clips_) + vkconv::backward_filter_workspace_bytes(context_, problem(chunk_clips_),
                                                                                Algorithm::Depthwise, conv_options());
}

PassReport Layer::forward(const Tensor& frames, const Tensor& k_minus, const Tensor& b1, const Tensor& k_plus,
                          const Tensor& b2, Tensor& z) {
    return sixteen_bit() ? forward_passes(frames, k_minus, b1, k_plus, b2, z)
                         : forward_kernels(frames, k_minus, b1, k_plus, b2, z);
}

PassReport Layer::backward(const Tensor& frames, const Tensor& k_minus, const Tensor& k_plus, const Tensor& g,
                           Tensor& df, Tensor& dk_minus, Tensor& dk_plus, Tensor& db1, Tensor& db2) {
    return sixteen_bit() ? backward_passes(frames, k_minus, k_plus, g, df, dk_minus, dk_plus, db1, db2)
                         : backward_kernels(frames, k_minus, k_plus, g, df, dk_minus, dk_plus, db1, db2);
}

PassReport Layer::forward_kernels(const Tensor& frames, const Tensor& k_minus, const Tensor& b1, const Tensor& k_plus,
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

PassReport Layer::backward_kernels(const Tensor& frames, const Tensor& k_minus, const Tensor& k_plus, const Tensor& g,
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

vkconv::RunStats Layer::combine(const Tensor& x, float alpha, const Tensor* z, float beta, Tensor& y,
                                bool filter_sized) {
    vkconv::Epilogue epilogue;
    epilogue.alpha = alpha, epilogue.beta = z ? beta : 0.0f, epilogue.residual = z;
    // Auto: whichever algorithm runs a 1x1 convolution with the epilogue in the type (direct today).
    return vkconv::forward(context_, ones_problem(shape_, type_, filter_sized), x,
                           filter_sized ? filter_ones_ : frame_ones_, nullptr, y, Algorithm::Auto, {}, epilogue);
}

// z = dw(f2 - f1, k_minus) + b1 + f2, then z += dw(f2 - f3, k_plus) + b2: two roundings of z, each pass adding
// its terms in fp32 (f2 goes in as the first convolution's residual, from a copy of the chunk's middle frames).
PassReport Layer::forward_passes(const Tensor& frames, const Tensor& k_minus, const Tensor& b1, const Tensor& k_plus,
                                 const Tensor& b2, Tensor& z) {
    const int64_t clips = shape_.clips();
    Meter meter(context_);
    const vkconv::ConvProblem chunk = problem(chunk_clips_);
    Tensor d_all(context_, chunk.input_shape(), type_), f2_all(context_, chunk.output_shape(), type_);
    uint32_t chunks = 0;
    for (int64_t c0 = 0; c0 < clips; c0 += chunk_clips_, ++chunks) {
        const int64_t n = std::min(chunk_clips_, clips - c0);
        const vkconv::ConvProblem p = problem(n);
        Tensor d = d_all.images(0, n), f2 = f2_all.images(0, n), zc = z.images(c0, n);
        auto frame = [&](int64_t clip, int step) { return frames.images(3 * (c0 + clip) + step, 1); };
        for (int64_t i = 0; i < n; ++i) {
            Tensor di = d.images(i, 1), f2i = f2.images(i, 1);
            meter.add(combine(frame(i, 1), 1.0f, nullptr, 0.0f, f2i));  // a copy: f2 is of the type already
            const Tensor f1 = frame(i, 0);
            meter.add(combine(frame(i, 1), 1.0f, &f1, -1.0f, di));
        }
        meter.add(vkconv::forward(context_, p, d, k_minus, &b1, zc, algorithm_, conv_options(), {1.0f, 1.0f, &f2}));
        for (int64_t i = 0; i < n; ++i) {
            Tensor di = d.images(i, 1);
            const Tensor f3 = frame(i, 2);
            meter.add(combine(frame(i, 1), 1.0f, &f3, -1.0f, di));
        }
        meter.add(vkconv::forward(context_, p, d, k_plus, &b2, zc, algorithm_, conv_options(), {1.0f, 1.0f, &zc}));
    }
    d_all = {}, f2_all = {};
    return meter.finish(pool_bytes(context_, {&frames, &k_minus, &b1, &k_plus, &b2, &z}), chunks);
}

// Per chunk and branch: the difference, dk (the first chunk's straight into the result, later ones added to it),
// e = backward_data, and the frame gradients it reaches. db1 = db2 = one backward_bias over all of g.
PassReport Layer::backward_passes(const Tensor& frames, const Tensor& k_minus, const Tensor& k_plus, const Tensor& g,
                                  Tensor& df, Tensor& dk_minus, Tensor& dk_plus, Tensor& db1, Tensor& db2) {
    const int64_t clips = shape_.clips();
    Meter meter(context_);
    Tensor d_all(context_, problem(chunk_clips_).input_shape(), type_);
    Tensor e_all(context_, problem(chunk_clips_).input_shape(), type_), dk_part(context_, k_minus.shape(), type_);
    uint32_t chunks = 0;
    for (int64_t c0 = 0; c0 < clips; c0 += chunk_clips_, ++chunks) {
        const int64_t n = std::min(chunk_clips_, clips - c0);
        vkconv::ConvProblem p = problem(n);
        p.has_bias = false;  // dk alone
        Tensor d = d_all.images(0, n), e = e_all.images(0, n), gc = g.images(c0, n);
        auto frame = [&](int64_t clip, int step) { return frames.images(3 * (c0 + clip) + step, 1); };
        auto grad = [&](int64_t clip, int step) { return df.images(3 * (c0 + clip) + step, 1); };
        // One branch: d = f2 - f_step, dk, e = backward_data(g, k), then its frame gradients.
        auto branch = [&](int step, const Tensor& k, Tensor& dk, auto&& frame_gradients) {
            for (int64_t i = 0; i < n; ++i) {
                Tensor di = d.images(i, 1);
                const Tensor other = frame(i, step);
                meter.add(combine(frame(i, 1), 1.0f, &other, -1.0f, di));
            }
            meter.add(vkconv::backward_filter(context_, p, d, gc, c0 == 0 ? dk : dk_part, nullptr, algorithm_,
                                              conv_options()));
            if (c0 != 0) meter.add(combine(dk_part, 1.0f, &dk, 1.0f, dk, true));
            meter.add(vkconv::backward_data(context_, p, gc, k, e, algorithm_, conv_options()));
            for (int64_t i = 0; i < n; ++i) frame_gradients(i, e.images(i, 1));
        };
        branch(0, k_minus, dk_minus, [&](int64_t i, const Tensor& ei) {
            Tensor df1 = grad(i, 0), df2 = grad(i, 1);
            meter.add(combine(ei, -1.0f, nullptr, 0.0f, df1));          // df1 = -e1
            meter.add(combine(gc.images(i, 1), 1.0f, &ei, 1.0f, df2));  // df2 = g + e1
        });
        branch(2, k_plus, dk_plus, [&](int64_t i, const Tensor& ei) {
            Tensor df3 = grad(i, 2), df2 = grad(i, 1);
            meter.add(combine(ei, -1.0f, nullptr, 0.0f, df3));  // df3 = -e3
            meter.add(combine(ei, 1.0f, &df2, 1.0f, df2));      // df2 += e3
        });
    }
    d_all = {}, e_all = {}, dk_part = {};
    vkconv::PassOptions bias_options;
    bias_options.workspace_limit = bias_limit_;
    for (Tensor* db : {&db1, &db2}) meter.add(vkconv::backward_bias(context_, problem(clips), g, *db, bias_options));
    return meter.finish(pool_bytes(context_, {&frames, &k_minus, &k_plus, &g, &df, &dk_minus, &dk_plus, &db1, &db2}),
                        chunks);
}

}  // namespace separable
