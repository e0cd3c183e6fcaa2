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
#pragma once

#include <cstdint>
#include <optional>

#include <vkconv/vkconv.hpp>

namespace separable {

struct Shape {
    int64_t frames = 30, channels = 64, height = 256, width = 256;
    int64_t clips() const { return frames / 3; }
    int64_t frame_elements() const { return channels * height * width; }
    // Error(InvalidArgument) naming the field: positive sizes, frames a multiple of 3.
    void validate() const;
};

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
    Layer(vkconv::Context& context, const Shape& shape, uint64_t workspace_budget);

    int64_t chunk_clips() const { return chunk_clips_; }
    uint64_t workspace_bytes() const;  // what a pass allocates at most, as the pool counts it

    PassReport forward(const vkconv::Tensor& frames, const vkconv::Tensor& k_minus, const vkconv::Tensor& b1,
                       const vkconv::Tensor& k_plus, const vkconv::Tensor& b2, vkconv::Tensor& z);
    PassReport backward(const vkconv::Tensor& frames, const vkconv::Tensor& k_minus, const vkconv::Tensor& k_plus,
                        const vkconv::Tensor& g, vkconv::Tensor& df, vkconv::Tensor& dk_minus, vkconv::Tensor& dk_plus,
                        vkconv::Tensor& db1, vkconv::Tensor& db2);

    vkconv::ConvProblem problem(int64_t clips) const;  // the depthwise convolution over `clips` frames

private:
    vkconv::PassOptions conv_options() const;
    uint64_t buffer_bytes(int64_t clips) const;  // a chunk's buffers and partial gradients, as the pool counts them

    vkconv::Context& context_;
    Shape shape_;
    uint64_t budget_;
    int64_t chunk_clips_ = 1;
    vkconv::Kernel difference_, residual_, grad_minus_, grad_plus_, accumulate_;
};

}  // namespace separable
