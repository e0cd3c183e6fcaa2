#include "gemm/gemm_config.hpp"

#include <algorithm>
#include <cmath>

namespace vkconv::detail {
namespace {

const char* access_name(GemmAccess access) {
    switch (access) {
        case GemmAccess::StorageBuffer:
            return "ssbo";
        case GemmAccess::StorageTexel:
            return "texel";
        case GemmAccess::UniformTexel:
            return "utexel";
    }
    return "?";
}

GemmConfig make(GemmKernel kernel, GemmAccess access, uint32_t wg_m, uint32_t wg_n, uint32_t tm, uint32_t tn,
                uint32_t stages = 1, uint32_t bk = 16, bool vec4_shared = false) {
    GemmConfig c;
    c.kernel = kernel, c.access = access, c.wg_m = wg_m, c.wg_n = wg_n, c.tm = tm, c.tn = tn, c.bk = bk;
    c.stages = stages, c.vec4_shared = vec4_shared;
    c.name = std::string(kernel == GemmKernel::Registers ? "registers-" : "shared-") + access_name(access) + "-" +
             std::to_string(c.tile_m()) + "x" + std::to_string(c.tile_n()) + "-t" + std::to_string(tm) + "x" +
             std::to_string(tn);
    if (kernel == GemmKernel::Shared) c.name += "-k" + std::to_string(bk);
    if (stages == 2) c.name += "-db";
    if (vec4_shared) c.name += "-v4";
    return c;
}

}  // namespace

uint32_t GemmConfig::shared_bytes() const {
    if (kernel != GemmKernel::Shared) return 0;
    const uint32_t padding = vec4_shared ? 0 : 1;  // one float a row against bank conflicts, scalar tiles only
    return stages * (tile_m() + padding + tile_n() + padding) * bk * 4;
}

std::string GemmConfig::shader() const {
    if (kernel == GemmKernel::Shared) {
        // Build variants with the register block fixed at compile time (shaders/CMakeLists.txt).
        const std::string base = access == GemmAccess::StorageBuffer ? "gemm_shared_ssbo" : "gemm_shared_texel";
        return base + (vec4_shared ? "_v4" : "") + "_t" + std::to_string(tm) + "x" + std::to_string(tn);
    }
    switch (access) {
        case GemmAccess::StorageBuffer:
            return "gemm_registers_ssbo";
        case GemmAccess::StorageTexel:
            return "gemm_registers_texel";
        case GemmAccess::UniformTexel:
            return "gemm_registers_utexel";
    }
    return "";
}

std::string gemm_config_problem(const Device& device, const GemmConfig& config, bool for_gemm) {
    const auto& limits = device.limits();
    if (config.wg_m * config.wg_n > limits.maxComputeWorkGroupInvocations)
        return "workgroup of " + std::to_string(config.wg_m * config.wg_n) + " invocations exceeds the device limit";
    if (config.wg_n > limits.maxComputeWorkGroupSize[0] || config.wg_m > limits.maxComputeWorkGroupSize[1])
        return "workgroup size exceeds maxComputeWorkGroupSize";
    if (config.shared_bytes() > limits.maxComputeSharedMemorySize)
        return "needs " + std::to_string(config.shared_bytes()) + " bytes of shared memory";
    if (config.kernel == GemmKernel::Registers && (config.tm % 4 || config.tn % 4))
        return "register blocks must be multiples of 4";
    if (config.kernel == GemmKernel::Shared && config.access == GemmAccess::UniformTexel)
        return "no shared-memory kernel reads uniform texel buffers";
    if (config.vec4_shared && (config.kernel != GemmKernel::Shared || config.access != GemmAccess::StorageBuffer ||
                               config.tm % 4 || config.tn % 4))
        return "vec4 shared reads are built for the storage-buffer shared kernel with 4x4, 8x4 and 8x8 blocks";
    const bool texels = config.access == GemmAccess::StorageTexel   ? device.model().storage_texel_buffers
                        : config.access == GemmAccess::UniformTexel ? device.model().uniform_texel_buffers
                                                                    : true;
    if (!texels)
        return "the device cannot use R32/R32G32B32A32_SFLOAT texel buffers this way";
    // Storage-buffer access binds 7 storage buffers (A and B twice, as scalars and vec4, C, the bias and the
    // residual), or 4 in its build for devices that allow fewer (record_gemm).
    if (config.access == GemmAccess::StorageBuffer && for_gemm)
        if (std::string shortfall = storage_buffer_shortfall(device, "the storage-buffer GEMM", 4); !shortfall.empty())
            return shortfall;
    return "";
}

GemmConfigTable make_gemm_configs(const Device& device) {
    using K = GemmKernel;
    using A = GemmAccess;
    // Families in order of preference. lavapipe wants the register kernel reading texel buffers (its cheap
    // load path), GPUs and SwiftShader the shared-memory kernel. Within a family, tile shapes from square
    // to skinny (a skinny tile keeps small-M products, like MEC's Q-row GEMMs of late layers, from padding).
    struct Shape {
        uint32_t wg_m, wg_n, tm, tn;
        uint32_t stages = 1;
        uint32_t bk = 16;
        bool vec4_shared = false;
    };
    const bool cpu = device.info().type == "CPU";
    // lavapipe runs the register kernel reading texel buffers fastest. Not every CPU implementation does:
    // SwiftShader runs the shared-memory kernel 4-5x faster than any register kernel (2.3 against 0.5
    // GFLOP/s at 256^3, docs/benchmarks.md), as GPUs do.
    const bool lavapipe = cpu && device.info().driver.find("llvmpipe") != std::string::npos;
    // Register shapes mostly keep at least 8 lanes along N, so a lavapipe subgroup shares its A rows. The
    // narrow ones (4 and 2 lanes along N) are for products 8 to 32 columns wide, like backward-data of
    // layers with 3 input channels (N = R*S*C = 27 or S*C = 9), where a 64-wide tile is mostly padding;
    // pick_gemm_config offers them only there, discounted for their unshared A rows.
    const std::vector<Shape> register_shapes = {{8, 8, 8, 8}, {2, 32, 8, 8}, {1, 64, 8, 8}, {8, 8, 4, 4},
                                                {4, 4, 4, 4}, {1, 16, 8, 4}, {8, 4, 8, 8},  {16, 2, 8, 8}};
    // 256-invocation shapes run only where maxComputeWorkGroupInvocations allows (checked below).
    // (An 8x8 block per invocation measured 14x slower than 4x4 on an H100: it spills.)
    const std::vector<Shape> shared_shapes = {{16, 16, 4, 4}, {8, 16, 8, 4}, {8, 8, 4, 4}, {8, 8, 2, 2}, {1, 64, 4, 2}};
    // Double-buffered shared tiles (the next K step loads while this one multiplies): candidates `vkconv
    // tune` times; the rule picks among the single-buffered family only.
    const std::vector<Shape> double_buffered = {{16, 16, 4, 4, 2}, {8, 16, 8, 4, 2}};
    // Larger register blocks reading their shared tiles as vec4s (8x8 a invocation: 128x128 and 64x128 tiles
    // in 8 KiB of shared memory a stage at BK = 8), single and double-buffered, and a 4x4 twin: candidates
    // `vkconv tune` times, as the double-buffered ones.
    const std::vector<Shape> vec4_shared = {{16, 16, 8, 8, 1, 8, true}, {16, 16, 8, 8, 2, 8, true},
                                            {8, 16, 8, 8, 1, 8, true},  {16, 16, 4, 4, 1, 16, true},
                                            {8, 16, 8, 4, 2, 16, true}};
    std::vector<std::vector<GemmConfig>> families;
    auto family = [&](K kernel, A access, const std::vector<Shape>& shapes) {
        std::vector<GemmConfig> configs;
        for (const auto& s : shapes)
            configs.push_back(make(kernel, access, s.wg_m, s.wg_n, s.tm, s.tn, s.stages, s.bk, s.vec4_shared));
        families.push_back(std::move(configs));
    };
    if (lavapipe) {
        for (A access : {A::StorageTexel, A::UniformTexel, A::StorageBuffer})
            family(K::Registers, access, register_shapes);
        // The shared kernel serves implicit GEMM's backward-data here: a square tile, its double-buffered
        // twin, and a 4-row tile for products a few rows tall (a 3-channel layer's dx).
        family(K::Shared, A::StorageBuffer, {{8, 16, 8, 4}, {8, 16, 8, 4, 2}, {1, 64, 4, 2}});
        family(K::Shared, A::StorageBuffer, {{8, 16, 8, 4, 1, 16, true}});  // the vec4-read kernel, for tune
    } else {
        for (A access : {A::StorageBuffer, A::StorageTexel}) family(K::Shared, access, shared_shapes);
        family(K::Shared, A::StorageBuffer, double_buffered);
        family(K::Shared, A::StorageBuffer, vec4_shared);
        family(K::Registers, A::StorageTexel, {{8, 8, 8, 8}});
        family(K::Registers, A::StorageBuffer, {{8, 8, 4, 4}});
    }

    GemmConfigTable table;
    const uint64_t units = std::max<uint32_t>(1, device.info().compute_units);
    table.wanted_workgroups = cpu ? std::max<uint64_t>(8, 2 * units) : 2 * units;
    table.wanted_invocations = cpu ? table.wanted_workgroups * 64 : 1024 * units;
    for (const auto& configs : families) {
        size_t valid = 0;
        for (const auto& config : configs)
            if (gemm_config_problem(device, config).empty())
                table.all.push_back(config), ++valid;
            else if (gemm_config_problem(device, config, false).empty())
                table.kernels_only.push_back(config);
        if (table.preferred == 0) table.preferred = valid;
    }
    // The fallback fits every device the spec allows: 64 invocations, no shared memory, storage buffers (4 of
    // them in its build for devices that allow fewer than 7).
    const GemmConfig fallback = make(K::Registers, A::StorageBuffer, 8, 8, 4, 4);
    if (std::none_of(table.all.begin(), table.all.end(), [&](const GemmConfig& c) { return c.name == fallback.name; }))
        table.all.push_back(fallback);
    if (table.preferred == 0) table.preferred = table.all.size();
    return table;
}

const GemmConfigTable& gemm_configs(ContextImpl& context) {
    if (!context.gemm_config_table)
        context.gemm_config_table = std::make_shared<GemmConfigTable>(make_gemm_configs(*context.device));
    return *context.gemm_config_table;
}

const GemmConfig& storage_buffer_twin(const GemmConfigTable& table, const GemmConfig& config) {
    if (config.access == GemmAccess::StorageBuffer) return config;
    const GemmConfig fallback = make(GemmKernel::Registers, GemmAccess::StorageBuffer, 8, 8, 4, 4);
    const GemmConfig* found = nullptr;
    for (const GemmConfig& c : table.all) {
        if (c.access != GemmAccess::StorageBuffer) continue;
        if (c.kernel == config.kernel && c.wg_m == config.wg_m && c.wg_n == config.wg_n && c.tm == config.tm &&
            c.tn == config.tn && c.bk == config.bk && c.stages == config.stages)
            return c;
        if (c.name == fallback.name) found = &c;
    }
    return *found;  // make_gemm_configs always keeps the fallback
}

const GemmConfig& pick_gemm_config(const GemmConfigTable& table, uint64_t M, uint64_t N, uint64_t batches) {
    const GemmConfig* best = &table.all.front();
    double best_score = -1;
    for (size_t i = 0; i < table.preferred; ++i) {
        const GemmConfig& c = table.all[i];
        const uint64_t tiles_m = (M + c.tile_m() - 1) / c.tile_m(), tiles_n = (N + c.tile_n() - 1) / c.tile_n();
        const double used = double(M * N) / double(tiles_m * c.tile_m() * tiles_n * c.tile_n());
        double reuse = double(c.tm * c.tn) / double(c.tm + c.tn);  // FMAs per loaded value
        // Fewer than 8 lanes along N: a CPU subgroup spans several rows and loads their A values apart
        // (measured on lavapipe: about 1.5x slower per FLOP at 4 lanes). Worth it only where a 64-wide
        // tile would be mostly padding, and not for N < 8, where every tile is.
        if (c.kernel == GemmKernel::Registers && c.wg_n < 8) {
            if (N > 32 || N < 8) continue;
            reuse *= std::sqrt(double(c.wg_n) / 8.0);
        }
        const double busy = std::min(1.0, double(tiles_m * tiles_n * batches) / double(table.wanted_workgroups));
        const double score = used * reuse * busy;
        if (score > best_score) best_score = score, best = &c;
    }
    return *best;
}

}  // namespace vkconv::detail
