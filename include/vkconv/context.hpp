// vkconv::Context — one Vulkan device, its compute queue, buffer pool and pipeline cache.
//
// Creating a Context is the first moment vkconv touches Vulkan: the loader is opened at run time into
// vkconv's own function tables (the library defines no vk* symbol, so it links beside an application's
// own loader), and a program linked with vkconv starts on a machine without Vulkan and gets
// Error(Unsupported) only here.
// Threads: a Context may be used from several threads at once. It runs one call at a time (each public
// call holds the context's lock from start to finish, its GPU work included), so concurrent calls are
// serialised and every result is what one thread would get, bit for bit. For work that should overlap,
// give each thread a Context of its own: contexts share nothing. Tensors keep their context alive and may
// be destroyed on any thread.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vkconv/algorithm.hpp"
#include "vkconv/device.hpp"
#include "vkconv/export.hpp"
#include "vkconv/pool.hpp"

namespace vkconv {

namespace detail {
struct ContextImpl;
struct Access;  // the engine's way in to what the API hides
}  // namespace detail

VKCONV_API_BEGIN

struct ExternalDevice;  // interop.hpp

// How Algorithm::Auto chooses an algorithm:
//  - Stored (the default): a measurement the context holds for this problem, pass and options (made by an
//    earlier Measure call or find_algorithms, or read from its find cache file), else the heuristic. It
//    never measures: a first call costs its pass and the first build of the pass's pipelines.
//  - Measure: a stored measurement, else measure now (find_algorithms in find.hpp: every candidate timed
//    once, the fastest verified one stored and run), as cudnn.benchmark = True does for PyTorch. Inside a
//    recording, where vkconv submits nothing of its own, Measure acts as Stored.
//  - Heuristic: the heuristic alone, even where a measurement is stored.
enum class AutoChoice { Measure, Heuristic, Stored };
const char* to_string(AutoChoice choice) noexcept;  // "measure", "heuristic", "stored"
AutoChoice parse_auto_choice(std::string_view name);  // the names above; Error(InvalidArgument) otherwise

// How a pass's algorithm was chosen (RunStats::chosen_by): named by the caller, Auto's heuristic, Auto's
// stored measurement, or measured by this call.
enum class ChoiceSource { Named, Heuristic, Stored, Measured };
const char* to_string(ChoiceSource source) noexcept;  // "named", "heuristic", "stored", "measured"

// What a call ran and what it cost: every pass, the layer step (its `step`), gemm and Kernel::run return one.
struct RunStats {
    Algorithm algorithm = Algorithm::Auto;         // the algorithm that ran (a pass: never Auto; gemm: Auto)
    ChoiceSource chosen_by = ChoiceSource::Named;  // how it was chosen (Auto: heuristic, stored or measured)
    // The form of the algorithm that ran, where it has more than one: MEC's schedule ("A" or "B", as
    // PassOptions::variant names them), Winograd's tile ("F(4x4,3x3)" or "F(2x2,3x3)"), gemm's tile
    // configuration (one of gemm_configurations); "" otherwise.
    // A pass run in tiles or slices reports its first piece's (Winograd's pieces may pick other tiles).
    std::string variant;
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
    // the products add straight into dw. gemm: the pieces of K a product too small to fill the device runs
    // in, each a whole C of partial products; 0 = run whole. 0 for the other passes.
    uint32_t partial_products = 0;
    // The bias gradient (backward_bias; backward-filter and a layer step of a problem with a bias, whose
    // workspace holds its partial sums even without a grad_bias tensor): pieces of positions its per-channel
    // sum is cut into; more than 1 means pieces * K floats of partial sums in the workspace, 1 sums straight
    // into db (where a workspace limit leaves no room for partial sums, in pieces added one after another, as
    // many as one shader invocation's loop allows). 0 for the other passes and problems without a bias.
    uint32_t bias_pieces = 0;
};

struct ContextOptions {
    // Device selector: an index or a case-insensitive substring of the device name. Empty: the
    // VKCONV_DEVICE environment variable, else the best device (discrete > integrated > virtual > CPU).
    std::string device;
    // Enable VK_LAYER_KHRONOS_validation. Unset: VKCONV_VALIDATION=1 in the environment turns it on.
    // If the layer is not installed a warning goes to the message callback and the context runs without.
    std::optional<bool> validation;
    // Receives validation-layer messages (warnings and errors). Unset: they are printed on stderr.
    MessageCallback on_message;
    // Cap on the bytes the pool may reserve from the driver (0 = no cap beyond the driver's own).
    // An allocation past it throws Error(OutOfDeviceMemory), as a real out-of-memory would.
    uint64_t device_memory_limit = 0;
    // The largest block the pool sizes for itself; larger requests get a block of their own. Blocks grow
    // to it: a new block holds at least what is asked (rounded to the pool alignment) and is as large as
    // all the pool holds already, up to pool_block_bytes, so a context that only ever runs a small layer
    // (inside an application, say) reserves what it uses plus alignment, and a busy one few, large blocks.
    uint64_t pool_block_bytes = 64ull << 20;
    // The smallest block the pool makes (0: what is asked). pool_block_bytes here gives blocks of
    // pool_block_bytes from the first one on.
    uint64_t pool_min_block_bytes = 0;
    // Lower the largest buffer and memory allocation the pool makes (the device's maxBufferSize and
    // maxMemoryAllocationSize as vkconv reads them) to this many bytes, at least 4096 (0 = as reported; no
    // binding is then larger either). Tensors above it are stored in pages (several buffers), as on a
    // device whose limit it is: for drivers whose allocation limit is lower in practice than reported, and
    // to measure what paging costs.
    uint64_t max_buffer_bytes = 0;
    // Another device's limits imposed on this one: a shipped device profile's name ("vulkan-minimum",
    // "nvidia-h100", ...; docs/device_model.md) or a Vulkan Profiles JSON file. Each limit vkconv plans by
    // (buffer and allocation size, binding range, texel elements, shared memory, workgroup size, count and
    // invocations, push constants, storage-buffer descriptors) becomes the smaller of the two devices', each
    // offset alignment the larger, so this device runs what would run on both. Empty: the
    // VKCONV_DEVICE_LIMITS environment variable, else the device's own limits.
    std::string device_limits;
    // A file that keeps Algorithm::Auto's measured choices (find.hpp) across processes. Read when the
    // context is created (a missing file is fine; a malformed one is Error(InvalidArgument) naming its
    // line), rewritten whole (through a temporary file and a rename) after every new measurement. Entries
    // are keyed by device, driver and problem, so one file serves several devices.
    std::string find_cache_path;
    // A file that keeps the driver's compiled pipelines (VkPipelineCache) across processes, so the first
    // passes of the next process do not compile them again. Read when the context is created; a file
    // written for another device, driver version or pipelineCacheUUID, or a truncated or corrupt one, is
    // ignored with a warning through on_message (never trusted). Written (through a temporary file and a
    // rename) when the context is destroyed and by save_pipeline_cache(), if pipelines were built since.
    // Empty: the VKCONV_PIPELINE_CACHE environment variable, else no file.
    std::string pipeline_cache_path;
    // A file of the winners `vkconv tune` measured on this device (plan.hpp): the GEMM's tile configuration
    // per product shape and implicit GEMM's per pass, which the passes, Auto and find then use. Read when
    // the context is created; a file written for another device or driver, or a corrupt one, is ignored
    // with a warning through on_message. Empty: the VKCONV_TUNING environment variable, else the pipeline
    // cache file's path with ".tuning" appended where there is one, else no file.
    std::string tuning_path;
    // How Algorithm::Auto chooses where a pass's options leave it unset (PassOptions::auto_choice). Unset:
    // the VKCONV_AUTO_CHOICE environment variable ("stored", "measure" or "heuristic"), else Stored.
    std::optional<AutoChoice> auto_choice;
};

class Context {
public:
    // A device of vkconv's own, chosen by options.device.
    explicit Context(const ContextOptions& options = {});
    // The application's instance, device and queue (interop.hpp), which vkconv uses but never destroys.
    // options.device and options.validation do not apply (the application's instance has the layers it
    // enabled); the other options do.
    explicit Context(const ExternalDevice& device, const ContextOptions& options = {});
    ~Context();
    Context(Context&&) noexcept;
    Context& operator=(Context&&) noexcept;

    const DeviceInfo& device() const;
    bool validation_enabled() const;

    // Pool counters (see pool.hpp) and control.
    PoolStats pool_stats() const;
    void reset_peak();
    void trim();  // give every empty pool block back to the driver
    // A workspace limit for PassOptions::workspace_limit from the device-local heap: half of what
    // VK_EXT_memory_budget says is still available (budget minus usage), or, without that extension or
    // with a budget of 0 or above the heap's size (some drivers report such), a quarter of the heap.
    uint64_t auto_workspace_limit() const;
    // Writes ContextOptions::pipeline_cache_path now (nothing to do without one, or with nothing new).
    // Error(InvalidArgument) naming the file when it cannot be written.
    void save_pipeline_cache();
    // True for a context made from the application's device (ExternalDevice).
    bool external_device() const;

private:
    friend struct detail::Access;
    explicit Context(std::shared_ptr<detail::ContextImpl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<detail::ContextImpl> impl_;
};

VKCONV_API_END
}  // namespace vkconv
