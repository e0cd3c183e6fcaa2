// Plans without running: what a pass (or a GEMM) would dispatch on a device, the present one or one
// described by a Vulkan Profiles JSON file (the format `vulkaninfo --json` writes). Nothing is allocated
// and no Vulkan call is made for a described device, so a plan for an NVIDIA H100 can be made on a laptop
// with no GPU at all: `vkconv plan` prints these.
//
// Each dispatch tells how it fills the device: its workgroups, the invocations in each, the longest chain
// of multiply-adds one invocation runs (serial_macs_per_invocation: the reduction one thread walks alone,
// which is what a split shortens) and the FLOPs it computes (2 per multiply-add, 1 per addition).
//
// Tuning, at the end: time the candidate tile configurations of the GEMM and of implicit GEMM on the
// present device, and keep the fastest per product shape (GEMM) or per pass and problem (implicit GEMM) in
// the context's tuning file (ContextOptions::tuning_path), where every later GEMM of that shape and every
// implicit-GEMM pass of that problem, Auto and find included, runs the winner. `vkconv tune` does this for
// the layers of a table. Every candidate's result is checked before it is timed (the GEMM against a CPU
// product on sampled entries, a pass against the double-precision reference on sampled outputs); one that
// fails or cannot run is reported and never chosen. Times are the median of `repeats` GPU-timed runs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkconv/context.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/device.hpp"
#include "vkconv/export.hpp"

namespace vkconv {

namespace detail {
struct DeviceModel;
}

VKCONV_API_BEGIN

struct Plan;
class DeviceProfile;
Plan plan_pass(const DeviceProfile& device, const ConvProblem& problem, Pass pass, Algorithm algorithm,
               const PassOptions& options);
Plan plan_gemm(const DeviceProfile& device, uint32_t M, uint32_t N, uint32_t K);

// A device to plan for.
class DeviceProfile {
public:
    // A shipped profile by name (device_profile_names()) or a Vulkan Profiles JSON file by path.
    // Error(InvalidArgument) naming the problem for an unknown name, an unreadable file or a malformed one.
    static DeviceProfile load(const std::string& name_or_path);
    // The present device of `context`, as the context itself plans for it.
    static DeviceProfile of(const Context& context);

    const DeviceInfo& info() const;  // name, type, compute units and their source, limits

private:
    explicit DeviceProfile(std::shared_ptr<const detail::DeviceModel> model) : model_(std::move(model)) {}
    friend Plan plan_pass(const DeviceProfile&, const ConvProblem&, Pass, Algorithm, const PassOptions&);
    friend Plan plan_gemm(const DeviceProfile&, uint32_t, uint32_t, uint32_t);
    std::shared_ptr<const detail::DeviceModel> model_;
};

// The profiles shipped with vkconv ("nvidia-h100", ...).
std::vector<std::string> device_profile_names();

struct Plan {
    std::string device;  // the profile's device name
    uint32_t compute_units = 0;
    Algorithm algorithm = Algorithm::Auto;  // what runs (Auto resolved)
    uint64_t workspace_bytes = 0;           // exactly what the pass would take from the pool
    std::vector<PlannedDispatch> dispatches;
    std::vector<GemmShape> gemms;  // the products its GEMM dispatches run, in order (lowerings, split-K)

    // The dispatch with the most FLOPs (the first of equals); nullptr for a plan without dispatches.
    const PlannedDispatch* main_dispatch() const;
};

// The plan `pass` of `problem` would run with `algorithm` (Auto: the heuristic's choice, as a pass with
// Auto and no find cache makes it) under `options` on `device`. Error(Unsupported / InvalidArgument) where
// the pass would refuse. Backward-bias plans the bias gradient.
Plan plan_pass(const DeviceProfile& device, const ConvProblem& problem, Pass pass,
               Algorithm algorithm = Algorithm::Auto, const PassOptions& options = {});

// The plan of C[M x N] = A[M x K] * B[K x N] (row-major, contiguous), as gemm() would run it.
Plan plan_gemm(const DeviceProfile& device, uint32_t M, uint32_t N, uint32_t K);

// Tuning (above): measured winners for this device.
struct TuneCandidate {
    std::string configuration;
    double gpu_ms = 0;    // median; 0 where it did not run
    bool ok = false;      // ran and its result checked out
    std::string problem;  // why not, where not ok
};

struct TuneResult {
    std::string what;  // "gemm 49x512x4608x1", "implicit-gemm forward <problem>"
    std::string best;  // the winner now stored (empty if no candidate was ok)
    // What ran before: the GEMM's own choice or an earlier winner; for implicit GEMM an earlier winner,
    // empty where its own choice ran.
    std::string before;
    std::vector<TuneCandidate> candidates;
};

// Times every GEMM configuration of the device on C[M x N] = A[M x K] * B[K x N] (batches of it) and
// stores the fastest for that shape.
TuneResult tune_gemm(Context& context, const GemmShape& shape, uint32_t repeats = 5);

// Times implicit GEMM's configurations on `pass` of `problem` and stores the fastest for them.
TuneResult tune_implicit_gemm(Context& context, const ConvProblem& problem, Pass pass, uint32_t repeats = 5);

// Writes the context's tuning file. Error(InvalidArgument) when it has none or naming the file it cannot write.
void save_tuning(Context& context);
// The context's tuning file (empty: none) and how many winners it holds.
std::string tuning_path(const Context& context);
size_t tuned_entries(const Context& context);

VKCONV_API_END
}  // namespace vkconv
