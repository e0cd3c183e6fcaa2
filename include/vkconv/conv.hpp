// Convolution passes on the GPU.
//
// Each pass takes the problem, its device tensors (shapes checked against the problem) and an algorithm.
// Algorithm::Auto picks one by measuring (find.hpp) or by the heuristic documented in docs/algorithms.md. The returned RunStats
// say what ran, how long the GPU took and what memory it needed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "vkconv/algorithm_list.hpp"
#include "vkconv/context.hpp"
#include "vkconv/error.hpp"
#include "vkconv/export.hpp"
#include "vkconv/problem.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv {
VKCONV_API_BEGIN

class Recording;  // recording.hpp: passes recorded now, run later

// The passes of a convolution. Backward-bias has one algorithm (the bias-gradient kernel): find_algorithms
// (find.hpp) has nothing to choose among there and refuses it.
enum class Pass { Forward, BackwardData, BackwardFilter, BackwardBias };
const char* to_string(Pass pass) noexcept;  // "forward", "backward-data", "backward-filter", "backward-bias"
Pass parse_pass(std::string_view text);     // those names, case-insensitive; throws InvalidArgument

// Auto, then one enumerator per row of the algorithm table (algorithm_list.hpp).
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
// Whether `algorithm` runs `pass` of problems shaped like `problem` at all (depthwise: one input channel per
// group). A pass it applies to may still be refused by the device's limits or a workspace limit; Auto
// applies to every pass.
bool algorithm_applies(Algorithm algorithm, const ConvProblem& problem, Pass pass) noexcept;

// MEC's two schedules (the paper's Solutions A and B). Auto follows the paper's rule: A when Q <= 100 and
// the output is no larger than the lowered matrix, else B.
enum class MecSchedule { Auto, A, B };
const char* to_string(MecSchedule schedule) noexcept;

// How a pass's algorithm was chosen (RunStats::chosen_by): named by the caller, Auto's heuristic, Auto's
// stored measurement, or measured by this call.
enum class ChoiceSource { Named, Heuristic, Stored, Measured };
const char* to_string(ChoiceSource source) noexcept;  // "named", "heuristic", "stored", "measured"

// The options every pass takes: forward, the backward passes, the layer step, their workspace queries
// and find_algorithms.
struct PassOptions {
    MecSchedule mec_schedule = MecSchedule::Auto;
    // Largest binding (and so lowered chunk) in bytes; 0 = the device's maxStorageBufferRange. Lower it to
    // run im2col and MEC in smaller chunks of images or bands of output rows.
    uint64_t max_binding_bytes = 0;
    // Largest workspace a pass may allocate, in bytes; 0 = no limit. im2col and MEC then run in chunks
    // whose workspace fits, split reductions use fewer pieces; an algorithm whose smallest chunk does not
    // fit gets Error(Unsupported), and Auto skips it (Error(InvalidArgument) naming the smallest workspace
    // any algorithm needs when none fits).
    uint64_t workspace_limit = 0;
    // Unset: the context's (ContextOptions::auto_choice).
    std::optional<AutoChoice> auto_choice;
    // Timed runs find makes of each algorithm after its warm-up run (at least 1).
    uint32_t find_repeats = 2;
    // The caller's memory for the pass's workspace (any tensor of the context: a pool tensor, or an
    // application's buffer through wrap_buffer in interop.hpp); null: the pass allocates its workspace from
    // the pool. The pass then plans within the bytes it offers from its first byte on the pool alignment
    // (PoolStats::alignment), as if that were workspace_limit (the lower of the two counts), and allocates
    // nothing: a workspace of the size a workspace query reports, starting on the alignment, is enough.
    // Algorithm::Auto still measures (with pool memory) a problem it has not seen under AutoChoice::Measure.
    // The pass overwrites it; it must not be one of the pass's tensors.
    const Tensor* workspace = nullptr;
};

struct RunStats {
    Algorithm algorithm = Algorithm::Auto;         // the algorithm that ran (never Auto)
    ChoiceSource chosen_by = ChoiceSource::Named;  // how it was chosen (Auto: heuristic, stored or measured)
    MecSchedule mec_schedule = MecSchedule::Auto;  // for MEC: the schedule that ran (A or B)
    double gpu_ms = 0;                             // GPU timestamps around the pass's dispatches
    bool gpu_timed = false;                        // false: the queue has no timestamps, gpu_ms is wall time
    double wall_ms = 0;                            // host time from record to completion
    // Memory, as the pool measured it during the pass:
    uint64_t operand_bytes = 0;        // the pass's own tensors (inputs and outputs), each as the pool holds it
    uint64_t workspace_bytes = 0;      // pool bytes the pass allocated for itself, as reported up front
    uint64_t peak_bytes = 0;           // pool in-use peak during the pass (every live tensor included)
    uint64_t peak_reserved_bytes = 0;  // device memory the pool held from the driver at its highest
    uint32_t driver_allocations = 0;   // vkAllocateMemory calls the pass caused (0 when the pool had room)
    uint32_t dispatches = 0;
    uint32_t chunks = 1;  // pieces (groups of images or bands of rows) the pass ran in
    // Split reductions, as planned (their workspace is part of workspace_bytes; the counts depend on the
    // device and on PassOptions' limits). Tiled passes report the most any tile uses.
    // Backward-filter: partial-product slots of the dw reduction: im2col's split-K pieces and MEC's (image,
    // row piece) slots, each one group's dw (K/G * R*S*C/G floats); depthwise's pieces, each the whole
    // filter (K*R*S floats; its sums are workspace even as one piece, so it is at least 1 there). 0 = none,
    // the products add straight into dw. 0 for the other passes.
    uint32_t partial_products = 0;
    // The bias gradient (backward_bias; backward-filter and a layer step of a problem with a bias, whose
    // workspace holds its partial sums even without a grad_bias tensor): pieces of positions its per-channel
    // sum is cut into; more than 1 means pieces * K floats of partial sums in the workspace, 1 sums straight
    // into db (where a workspace limit leaves no room for partial sums, in pieces added one after another, as
    // many as one shader invocation's loop allows). 0 for the other passes and problems without a bias.
    uint32_t bias_pieces = 0;
};

// Bytes of temporary device memory `algorithm` needs for this forward problem (0 for direct). Exact: the
// pool's in-use counter grows by exactly this much during the pass (allocation rounding included).
// A workspace query never runs GPU work. With Algorithm::Auto it is exact whenever the choice is known
// without measuring (AutoChoice::Stored or Heuristic, or a measurement the context holds); under
// AutoChoice::Measure before measuring, it is the most any algorithm Auto may choose needs, so the
// measured choice fits in it.
uint64_t forward_workspace_bytes(const Context& context, const ConvProblem& problem, Algorithm algorithm,
                                 const PassOptions& options = {});

// The algorithm the heuristic picks for this problem under `options` (docs/algorithms.md, "How auto chooses"); Auto
// uses it where it has no measurement to go by (AutoChoice), and find_algorithms measures instead.
Algorithm choose_forward_algorithm(const Context& context, const ConvProblem& problem, const PassOptions& options = {});

// The activation a forward pass's epilogue applies (Epilogue below), as ncnn's activation types name them.
enum class Activation {
    None,
    ReLU,       // max(v, 0)
    ReLU6,      // min(max(v, 0), 6)
    LeakyReLU,  // v < 0 ? negative_slope * v : v
};
const char* to_string(Activation activation) noexcept;  // "none", "relu", "relu6", "leaky-relu"
Activation parse_activation(std::string_view text);     // those names, case-insensitive; throws InvalidArgument

// What the forward pass applies as it writes y (cuDNN's convolution-bias-activation):
//     y = activation(alpha * conv(x, w) + bias + beta * residual)
// inside the kernel that writes each value of y, never as a pass of its own over y; it needs no workspace.
// `residual` (z) has the output's shape and belongs to the context; it may be the output tensor itself (an
// in-place residual add: y's previous contents are z), but must not otherwise share memory with the output,
// and never with the input, filter or bias. A residual needs beta != 0, and beta != 0 needs a residual.
// alpha, beta and negative_slope must be finite. The default epilogue gives exactly the plain forward's y.
struct Epilogue {
    float alpha = 1.0f;
    float beta = 0.0f;
    const Tensor* residual = nullptr;
    Activation activation = Activation::None;
    float negative_slope = 0.01f;  // LeakyReLU's slope for v < 0
};

// y = conv(x, w) + bias. `bias` must be non-null exactly when problem.has_bias. `output` must already
// have the problem's output shape; its previous contents are overwritten.
RunStats forward(Context& context, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, Algorithm algorithm = Algorithm::Auto,
                 const PassOptions& options = {});
// The same pass recorded into `recording` (recording.hpp), to run when the recording is submitted. Every
// pass, the layer step and gemm have such an overload.
RunStats forward(Recording& recording, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, Algorithm algorithm = Algorithm::Auto,
                 const PassOptions& options = {});

// y = activation(alpha * conv(x, w) + bias + beta * residual) (Epilogue above), in one pass like the plain
// forward: the same algorithms, plans, workspace (workspace queries do not depend on the epilogue) and
// RunStats (operand_bytes also counts a residual of its own). Error(InvalidArgument) naming the problem for
// an epilogue that breaks Epilogue's rules.
RunStats forward(Context& context, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, const Epilogue& epilogue, Algorithm algorithm = Algorithm::Auto,
                 const PassOptions& options = {});
RunStats forward(Recording& recording, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
                 const Tensor* bias, Tensor& output, const Epilogue& epilogue, Algorithm algorithm = Algorithm::Auto,
                 const PassOptions& options = {});

VKCONV_API_END
}  // namespace vkconv
