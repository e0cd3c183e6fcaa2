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

#include "context/context_impl.hpp"
#include "vulkan/device.hpp"

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
    uint32_t stages = 1;          // shared tiles: 2 double-buffers them (shared kernel only)
    // Shared kernel only: each invocation owns TM consecutive rows and TN consecutive columns and reads the
    // shared tiles as vec4s (gemm_shared.comp's SHARED_VEC4), for the larger register blocks.
    bool vec4_shared = false;

    uint32_t tile_m() const { return wg_m * tm; }
    uint32_t tile_n() const { return wg_n * tn; }
    uint32_t shared_bytes() const;
    std::string shader() const;
};

struct GemmConfigTable {
    std::vector<GemmConfig> all;  // every configuration valid on this device, the preferred family first
    // Configurations the GEMM cannot run here only because its storage-buffer form binds more storage
    // buffers than the device allows (7); kernels that bind fewer (implicit GEMM) use their tile shapes.
    std::vector<GemmConfig> kernels_only;
    // `all`, then `kernels_only`: the index space of kernels that take either.
    size_t any_count() const { return all.size() + kernels_only.size(); }
    const GemmConfig& any(size_t i) const { return i < all.size() ? all[i] : kernels_only.at(i - all.size()); }
    // How many of `all`, from the front, form the preferred family (one kernel and access path in several
    // tile shapes); choose_gemm_config picks among them by problem shape.
    size_t preferred = 0;
    // What keeps the device busy, from its compute units (DeviceInfo::compute_units): workgroups for a
    // compute-bound dispatch (2 per compute unit, so one can start while another finishes; at least 8 on a
    // CPU device), and invocations for a memory-bound one (1,024 per GPU compute unit: 32 subgroups of 32
    // with loads in flight, enough to cover memory latency; on a CPU device 64 per wanted workgroup).
    uint64_t wanted_workgroups = 8;
    uint64_t wanted_invocations = 512;
};

// The configurations valid on `device`, its preferred family first.
GemmConfigTable make_gemm_configs(const Device& device);
// The context's table (made on first use and kept in the context).
const GemmConfigTable& gemm_configs(ContextImpl& context);

// The preferred configuration for an M x N product over `batches` batch entries: the tile shape that wastes
// least of its padded area, with the most register reuse, among those that give the device enough
// workgroups.
const GemmConfig& pick_gemm_config(const GemmConfigTable& table, uint64_t M, uint64_t N, uint64_t batches);

// `config` itself if it reads storage buffers, else the storage-buffer configuration of the same kernel and
// tile shape (the fallback where the device has none): what runs where an operand is too large for a texel
// view (maxTexelBufferElements). Texel buffers are an access path, never a limit on what a GEMM binds.
const GemmConfig& storage_buffer_twin(const GemmConfigTable& table, const GemmConfig& config);

// Why `config` cannot run on `device`, or an empty string when it can.
// `for_gemm`: including the GEMM's own storage-buffer count (false: only what the tile shape needs).
std::string gemm_config_problem(const Device& device, const GemmConfig& config, bool for_gemm = true);

}  // namespace vkconv::detail
