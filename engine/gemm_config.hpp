// GEMM tile configurations: data, chosen per device and per problem shape.
//
// Each configuration names a kernel (registers: no shared memory, vec4 register blocks, for CPU
// implementations where loads are what costs; shared: shared-memory tiles, for GPUs), an operand access
// path (storage buffers, storage texel buffers, uniform texel buffers) and its tile geometry. At context
// start-up every candidate is checked against the device (workgroup size and invocation limits, shared
// memory, the texel formats' buffer features); what fails is dropped, and a small storage-buffer
// register kernel that fits the spec minimums is always there as the fallback.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device.hpp"

namespace vkconv::detail {

enum class GemmKernel { Registers, Shared };
enum class GemmAccess { StorageBuffer, StorageTexel, UniformTexel };

struct GemmConfig {
    std::string name;  // e.g. "registers-texel-8x8x8x8"
    GemmKernel kernel = GemmKernel::Registers;
    GemmAccess access = GemmAccess::StorageBuffer;
    uint32_t wg_m = 8, wg_n = 8;  // invocations
    uint32_t tm = 4, tn = 4;      // values per invocation
    uint32_t bk = 16;             // K step through shared memory (shared kernel only)

    uint32_t tile_m() const { return wg_m * tm; }
    uint32_t tile_n() const { return wg_n * tn; }
    uint32_t shared_bytes() const;
    const char* shader() const;
};

struct GemmConfigTable {
    std::vector<GemmConfig> all;  // every configuration valid on this device, preferred first per size
    // Preferred configurations by problem size (indices into `all`).
    size_t large = 0, medium = 0, small = 0;
};

// The configurations valid on `device`, with the preferred ones per size class for its type.
GemmConfigTable make_gemm_configs(const Device& device);

// Why `config` cannot run on `device`, or an empty string when it can.
std::string gemm_config_problem(const Device& device, const GemmConfig& config);

}  // namespace vkconv::detail
