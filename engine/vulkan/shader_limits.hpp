// Limits on what one shader invocation may do that no Vulkan query reports.
#pragma once

#include <cstdint>

namespace vkconv::detail {

// lavapipe (llvmpipe's gallivm) ends every loop of a shader invocation once the invocation has made
// 65535 loop iterations in total, all loops counted together, and carries on silently with a partial
// result. Any reduction an invocation runs in a loop is therefore split so that it makes at most this
// many iterations (a quarter of the cap leaves room for the loops around it): direct kernels and the
// GEMM in pieces of their reduction, the bias and depthwise filter gradients in more pieces.
constexpr uint32_t kMaxLoopIterations = 16384;

}  // namespace vkconv::detail
