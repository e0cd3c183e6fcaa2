// What vkconv knows of a Vulkan device (DeviceInfo, list_devices), the messages it passes on from it, and
// the work it gives it as a plan describes it (PlannedDispatch, GemmShape: plan.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "vkconv/export.hpp"

namespace vkconv {
VKCONV_API_BEGIN

struct DeviceInfo {
    uint32_t index = 0;  // position in the loader's enumeration, as VKCONV_DEVICE=INDEX counts
    std::string name;
    std::string type;         // "discrete GPU", "integrated GPU", "virtual GPU", "CPU", "other"
    std::string driver;       // driver name and info where the device reports them
    std::string api_version;  // "1.3.230"
    uint32_t subgroup_size = 0;
    // Compute units (NVIDIA SMs, AMD CUs, Arm shader cores, CPU threads), which the planner sizes its
    // splits by, and where the number comes from: the vendor extension that reports it, or "fallback"
    // (a documented guess by device type, docs/device_model.md).
    uint32_t compute_units = 0;
    std::string compute_units_source;
    uint32_t shared_memory_bytes = 0;  // maxComputeSharedMemorySize
    uint64_t max_storage_buffer_range = 0;
    // The largest single buffer: the smaller of maxBufferSize and maxMemoryAllocationSize (2^30, the
    // specification's minimum, where the device reports neither).
    uint64_t max_buffer_bytes = 0;
    uint32_t max_workgroup_invocations = 0;
    std::array<uint32_t, 3> max_workgroup_count{};
    uint32_t max_push_constants_bytes = 0;
    uint64_t max_texel_buffer_elements = 0;
    bool fp16 = false;        // shaderFloat16
    // storageBuffer16BitAccess, which vkconv enables on a device of its own, for shaders that read and write
    // 16-bit tensors directly. False for an application's device (vkconv does not know what it enabled),
    // where imposed limits (ContextOptions::device_limits) lack it, and for a profile that does not list it.
    bool storage_16bit = false;
    bool timestamps = false;  // the compute queue can write timestamps
    // The device profile whose limits were imposed on this device (ContextOptions::device_limits), or "".
    std::string imposed_limits;

    std::string summary() const;  // one line with everything above
};

enum class MessageSeverity { Verbose, Info, Warning, Error };
using MessageCallback = std::function<void(MessageSeverity, std::string_view)>;

// Every physical device the loader reports, in enumeration order. Throws Error(Unsupported) without a loader.
std::vector<DeviceInfo> list_devices();

struct PlannedDispatch {
    std::string name;  // the shader
    uint64_t workgroups = 0;
    uint32_t invocations_per_workgroup = 0;
    uint64_t serial_macs_per_invocation = 0;
    uint64_t flops = 0;
};

// One GEMM product a plan runs: C[M x N] over a reduction of K, for `batches` batch entries (what
// `vkconv tune` times the GEMM's configurations on, plan.hpp).
struct GemmShape {
    uint32_t M = 0, N = 0, K = 0, batches = 1;
    bool operator<(const GemmShape& o) const {
        return M != o.M ? M < o.M : N != o.N ? N < o.N : K != o.K ? K < o.K : batches < o.batches;
    }
    bool operator==(const GemmShape&) const = default;
};

VKCONV_API_END
}  // namespace vkconv
