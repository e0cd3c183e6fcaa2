// General matrix multiply on the device: the tiled GEMM every lowering runs through, exposed on its own.
//
// c = alpha * op(a) * op(b) + beta * c, fp32. a is [M, K] ([K, M] with transpose_a), b is [K, N]
// ([N, K] with transpose_b), c is [M, N]; a leading batch dimension on all three ([B, ...]) runs B
// products in one dispatch.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vkconv/context.hpp"
#include "vkconv/export.hpp"
#include "vkconv/recording.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv {
VKCONV_API_BEGIN

// The activation a fused epilogue applies (a forward pass's Epilogue, conv.hpp; vkconv's GEMMs apply it
// inside), as ncnn's activation types name them.
enum class Activation {
    None,
    ReLU,       // max(v, 0)
    ReLU6,      // min(max(v, 0), 6)
    LeakyReLU,  // v < 0 ? negative_slope * v : v
};
const char* to_string(Activation activation) noexcept;  // "none", "relu", "relu6", "leaky-relu"
Activation parse_activation(std::string_view text);     // those names, case-insensitive; throws InvalidArgument

struct GemmOptions {
    bool transpose_a = false;
    bool transpose_b = false;
    float alpha = 1.0f;
    float beta = 0.0f;  // 0: c's previous contents are not read (they may be uninitialised)
    // Empty: chosen for the device and shape. Otherwise one of gemm_configurations(context); one that reads
    // through texel views runs as its storage-buffer twin where a or b is too large for a texel view
    // (maxTexelBufferElements), and the stats' variant says so.
    std::string configuration;
};

// Run now on a context, or recorded into a recording (recording.hpp: gpu_ms is then 0 and gpu_timed false).
// The stats name the tile configuration that ran as `variant` (algorithm stays Auto: a GEMM is none of
// the convolution algorithms). A product whose M x N tiles are too few to fill the device runs in
// `partial_products` pieces of K, added in order (the same bits every run), whose partial products are its
// workspace_bytes, from the pool for the call; 0 when it runs whole. a, b and c may each be fp32, fp16 or
// bf16 (Tensor::data_type): values are widened as read, products and sums are fp32, and each value of a
// 16-bit c is rounded once, to nearest even (a configuration that reads texel views then runs as its
// storage-buffer twin). A 16-bit c over a reduction longer than one dispatch may loop (16,384 steps) that is
// not split along K is refused as Unsupported: its pieces would each round c.
RunStats gemm(Target target, const Tensor& a, const Tensor& b, Tensor& c, const GemmOptions& options = {});

// Names of the GEMM tile configurations valid on the context's device, preferred ones first.
std::vector<std::string> gemm_configurations(const Context& context);

VKCONV_API_END
}  // namespace vkconv
