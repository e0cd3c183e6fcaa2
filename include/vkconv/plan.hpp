// Plans without running: what a pass (or a GEMM) would dispatch on a device, the present one or one
// described by a Vulkan Profiles JSON file (the format `vulkaninfo --json` writes). Nothing is allocated
// and no Vulkan call is made for a described device, so a plan for an NVIDIA H100 can be made on a laptop
// with no GPU at all: `vkconv plan` prints these.
//
// Each dispatch tells how it fills the device: its workgroups, the invocations in each, the longest chain
// of multiply-adds one invocation runs (serial_macs_per_invocation: the reduction one thread walks alone,
// which is what a split shortens) and the FLOPs it computes (2 per multiply-add, 1 per addition).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vkconv/backward.hpp"
#include "vkconv/context.hpp"
#include "vkconv/conv.hpp"
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

struct PlannedDispatch {
    std::string name;  // the shader
    uint64_t workgroups = 0;
    uint32_t invocations_per_workgroup = 0;
    uint64_t serial_macs_per_invocation = 0;
    uint64_t flops = 0;
};

// One GEMM product a plan runs: C[M x N] over a reduction of K, for `batches` batch entries (what
// `vkconv tune` times the GEMM's configurations on, tune.hpp).
struct GemmShape {
    uint32_t M = 0, N = 0, K = 0, batches = 1;
    bool operator<(const GemmShape& o) const {
        return M != o.M ? M < o.M : N != o.N ? N < o.N : K != o.K ? K < o.K : batches < o.batches;
    }
    bool operator==(const GemmShape&) const = default;
};

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

VKCONV_API_END
}  // namespace vkconv
