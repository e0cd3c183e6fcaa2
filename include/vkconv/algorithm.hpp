// vkconv::Algorithm. Every convolution algorithm vkconv has, one row each: the one list that the enum, the names the
// CLI, Python, JSON files and the docs use, find_algorithms' and Auto's candidates, the tool's columns and
// the tests' tables all derive from. A row is
//     X(Enumerator, "name", engine_entry, "what it does, in one line")
// where engine_entry names the engine's table entry of the algorithm's folder (engine/conv/<folder>/,
// defining detail::<engine_entry>_algorithm). Algorithm::Auto is not a row: it chooses among them.
#pragma once

#include <span>
#include <string_view>

#include "vkconv/export.hpp"

#define VKCONV_ALGORITHMS(X)                                                                                      \
    X(Direct, "direct", direct,                                                                                   \
      "one invocation per output value; the baseline every other algorithm is checked against")                 \
    X(Im2col, "im2col", im2col, "im2col lowering (N*P*Q x R*S*C/G per group) + tiled GEMM")                       \
    X(Mec, "mec", mec, "MEC lowering (N*Q x H*S*C, Cho & Brand 2017) + overlapping-window GEMMs")                 \
    X(Depthwise, "depthwise", depthwise,                                                                          \
      "one input channel per group (groups == C, K = m*C): register-window kernels, no GEMM")                     \
    X(ImplicitGemm, "implicit-gemm", implicit_gemm,                                                               \
      "the tiled GEMM with im2col's addresses computed as operands load, no lowered matrix")                     \
    X(Winograd, "winograd", winograd,                                                                             \
      "Winograd F(4x4, 3x3) or F(2x2, 3x3) around a batched GEMM: 3x3 stride-1 layers, forward and backward-data")

namespace vkconv {
VKCONV_API_BEGIN

// Auto, then one enumerator per row of the table above.
enum class Algorithm {
    Auto,
#define VKCONV_ALGORITHM_ENUMERATOR(enumerator, name, entry, summary) enumerator,
    VKCONV_ALGORITHMS(VKCONV_ALGORITHM_ENUMERATOR)
#undef VKCONV_ALGORITHM_ENUMERATOR
};

const char* to_string(Algorithm algorithm) noexcept;  // the row's name ("auto" for Auto)
Algorithm parse_algorithm(std::string_view text);     // case-insensitive name; throws InvalidArgument
// Every algorithm (Auto excluded), in the table's order.
std::span<const Algorithm> all_algorithms() noexcept;
// The row's one-line description ("chooses one of the others" for Auto).
const char* algorithm_summary(Algorithm algorithm) noexcept;

VKCONV_API_END
}  // namespace vkconv
