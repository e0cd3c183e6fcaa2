// The channel-wise separable layer of a video model, on vkconv.
//
// Frames (NCHW, F = frames) are regrouped as F/3 clips of three time steps f1, f2, f3. Per clip:
//   z = dw(f2 - f1, k_minus) + b1 + f2 + dw(f2 - f3, k_plus) + b2
// with two 3x3 depthwise convolutions (padding 1, one filter per channel). The backward pass takes the
// upstream gradient g (one frame per clip) and returns df (every frame), dk_minus, dk_plus, db1, db2.
//
// Memory: the clips run in chunks whose workspace (two frame-sized buffers per clip: a difference and a
// convolution result) fits a byte budget, so the layer's peak is its operands plus at most that budget.
// The differences are made again in the backward pass instead of being kept.
//
// Element type: every tensor of the layer (operands, buffers, partial gradients) is of one type, f32, f16 or
// bf16. In f32 the elementwise steps are the sample's own shaders (vkconv::Kernel, which takes f32 tensors);
// in a 16-bit type they are vkconv passes instead: a 1x1 convolution by ones with the forward epilogue,
// y = alpha * x + beta * z, each value computed in fp32 and rounded once to the type. The convolutions are
// depthwise where it runs the type, else direct.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include <vkconv/vkconv.hpp>

namespace separable {

struct Shape {
    int64_t frames = 30, channels = 64, height = 256, width = 256;
    int64_t clips() const { return frames / 3; }
    int64_t frame_elements() const { return channels * height * width; }
    // Error(InvalidArgument) naming the field: positive sizes, frames a multiple of 3.
    void validate() const;
};

// Bytes the pool holds for `tensors` (each rounded to its alignment): a pass's operands as PassReport counts them.
uint64_t pool_bytes(vkconv::Context& context, std::initializer_list<const vkconv::Tensor*> tensors);

// What one pass did, summed over its submissions.
struct PassReport {
    double gpu_ms = 0, wall_ms = 0;
    uint64_t peak_bytes = 0, peak_reserved_bytes = 0;  // pool, during the pass (every live tensor)
    uint64_t baseline_bytes = 0;                       // pool in use when the pass began
    uint64_t operand_bytes = 0;                        // the pass's own tensors
    uint32_t submissions = 0, chunks = 0;
};

class Layer {
public:
    // `workspace_budget`: bytes the layer may allocate beyond its operands. Chunks shrink to fit it, down to
    // one clip; a budget even that exceeds is exceeded by as little as one clip needs.
    // Error(Unsupported) naming why where no chunk, even of one clip, runs in `type` on this device.
    Layer(vkconv::Context& context, const Shape& shape, uint64_t workspace_budget,
          vkconv::DataType type = vkconv::DataType::F32);

    int64_t chunk_clips() const { return chunk_clips_; }
    vkconv::DataType type() const { return type_; }
    vkconv::Algorithm algorithm() const { return algorithm_; }  // the convolutions'
    // How the elementwise steps run: "kernels" (the sample's shaders, f32) or "passes" (16-bit).
    const char* elementwise() const { return sixteen_bit() ? "passes" : "kernels"; }
    uint64_t workspace_bytes() const;  // what a pass allocates at most, as the pool counts it

    PassReport forward(const vkconv::Tensor& frames, const vkconv::Tensor& k_minus, const vkconv::Tensor& b1,
                       const vkconv::Tensor& k_plus, const vkconv::Tensor& b2, vkconv::Tensor& z);
    PassReport backward(const vkconv::Tensor& frames, const vkconv::Tensor& k_minus, const vkconv::Tensor& k_plus,
                        const vkconv::Tensor& g, vkconv::Tensor& df, vkconv::Tensor& dk_minus, vkconv::Tensor& dk_plus,
                        vkconv::Tensor& db1, vkconv::Tensor& db2);

    // The depthwise convolution over `clips` frames, with the biases, in the layer's type.
    vkconv::ConvProblem problem(int64_t clips) const;

private:
    bool sixteen_bit() const { return type_ != vkconv::DataType::F32; }
    vkconv::PassOptions conv_options() const;
    uint64_t buffer_bytes(int64_t clips) const;  // a chunk's buffers and partial gradients, as the pool counts them
    // The 16-bit layer's chunk of `clips`: the algorithm that runs all its convolutions (depthwise, else
    // direct) and the most workspace one needs; nothing where none runs them (`why` says why).
    std::optional<std::pair<vkconv::Algorithm, uint64_t>> plan_16bit(int64_t clips, std::string& why) const;
    void size_chunks_16bit();

    PassReport forward_kernels(const vkconv::Tensor& frames, const vkconv::Tensor& k_minus, const vkconv::Tensor& b1,
                               const vkconv::Tensor& k_plus, const vkconv::Tensor& b2, vkconv::Tensor& z);
    PassReport forward_passes(const vkconv::Tensor& frames, const vkconv::Tensor& k_minus, const vkconv::Tensor& b1,
                              const vkconv::Tensor& k_plus, const vkconv::Tensor& b2, vkconv::Tensor& z);
    PassReport backward_kernels(const vkconv::Tensor& frames, const vkconv::Tensor& k_minus,
                                const vkconv::Tensor& k_plus, const vkconv::Tensor& g, vkconv::Tensor& df,
                                vkconv::Tensor& dk_minus, vkconv::Tensor& dk_plus, vkconv::Tensor& db1,
                                vkconv::Tensor& db2);
    PassReport backward_passes(const vkconv::Tensor& frames, const vkconv::Tensor& k_minus,
                               const vkconv::Tensor& k_plus, const vkconv::Tensor& g, vkconv::Tensor& df,
                               vkconv::Tensor& dk_minus, vkconv::Tensor& dk_plus, vkconv::Tensor& db1,
                               vkconv::Tensor& db2);
    // 16-bit elementwise steps, as passes: y = alpha * x + beta * z (z null: y = alpha * x) over one frame
    // (`filter_sized`: over a kernel-shaped tensor), rounded once to the type. z may be y itself.
    vkconv::RunStats combine(const vkconv::Tensor& x, float alpha, const vkconv::Tensor* z, float beta,
                             vkconv::Tensor& y, bool filter_sized = false);

    vkconv::Context& context_;
    Shape shape_;
    uint64_t budget_;
    vkconv::DataType type_;
    vkconv::Algorithm algorithm_ = vkconv::Algorithm::Depthwise;
    int64_t chunk_clips_ = 1;
    uint64_t bias_limit_ = 0;  // 16-bit: backward_bias's workspace limit (size_chunks_16bit)
    vkconv::Kernel difference_, residual_, grad_minus_, grad_plus_, accumulate_;
    // 16-bit: the ones the elementwise passes convolve with, per channel of a frame and for a kernel-shaped tensor.
    vkconv::Tensor frame_ones_, filter_ones_;
};

}  // namespace separable
