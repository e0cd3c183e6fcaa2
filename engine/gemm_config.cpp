#include "gemm_config.hpp"

#include <algorithm>

namespace vkconv::detail {
namespace {

const char* access_name(GemmAccess access) {
    switch (access) {
        case GemmAccess::StorageBuffer: return "ssbo";
        case GemmAccess::StorageTexel: return "texel";
        case GemmAccess::UniformTexel: return "utexel";
    }
    return "?";
}

GemmConfig make(GemmKernel kernel, GemmAccess access, uint32_t wg_m, uint32_t wg_n, uint32_t tm, uint32_t tn,
                uint32_t bk = 16) {
    GemmConfig c;
    c.kernel = kernel, c.access = access, c.wg_m = wg_m, c.wg_n = wg_n, c.tm = tm, c.tn = tn, c.bk = bk;
    c.name = std::string(kernel == GemmKernel::Registers ? "registers-" : "shared-") + access_name(access) + "-" +
             std::to_string(c.tile_m()) + "x" + std::to_string(c.tile_n()) + "-t" + std::to_string(tm) + "x" +
             std::to_string(tn);
    if (kernel == GemmKernel::Shared) c.name += "-k" + std::to_string(bk);
    return c;
}

bool buffer_feature(const Device& device, VkFormat format, VkFormatFeatureFlags feature) {
    VkFormatProperties props{};
    vkGetPhysicalDeviceFormatProperties(device.physical(), format, &props);
    return (props.bufferFeatures & feature) == feature;
}

}  // namespace

uint32_t GemmConfig::shared_bytes() const {
    return kernel == GemmKernel::Shared ? (tile_m() + 1 + tile_n() + 1) * bk * 4 : 0;
}

const char* GemmConfig::shader() const {
    if (kernel == GemmKernel::Shared) return access == GemmAccess::StorageBuffer ? "gemm_shared_ssbo" : "gemm_shared_texel";
    switch (access) {
        case GemmAccess::StorageBuffer: return "gemm_registers_ssbo";
        case GemmAccess::StorageTexel: return "gemm_registers_texel";
        case GemmAccess::UniformTexel: return "gemm_registers_utexel";
    }
    return "";
}

std::string gemm_config_problem(const Device& device, const GemmConfig& config) {
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
    const VkFormatFeatureFlags feature = config.access == GemmAccess::StorageTexel ? VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT
                                         : config.access == GemmAccess::UniformTexel ? VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT
                                                                                     : 0;
    if (feature && !(buffer_feature(device, VK_FORMAT_R32_SFLOAT, feature) &&
                     buffer_feature(device, VK_FORMAT_R32G32B32A32_SFLOAT, feature)))
        return "the device cannot use R32/R32G32B32A32_SFLOAT texel buffers this way";
    return "";
}

GemmConfigTable make_gemm_configs(const Device& device) {
    using K = GemmKernel;
    using A = GemmAccess;
    // Candidates in order of preference for each size class. CPU implementations prefer the register
    // kernel reading texel buffers (lavapipe's cheap load path), GPUs the shared-memory kernel.
    const bool cpu = device.info().type == "CPU";
    std::vector<std::pair<GemmConfig, int>> candidates;  // config, size class (0 large, 1 medium, 2 small)
    auto add = [&](GemmConfig c, int size_class) { candidates.push_back({std::move(c), size_class}); };
    if (cpu) {
        for (A access : {A::StorageTexel, A::UniformTexel, A::StorageBuffer}) {
            add(make(K::Registers, access, 8, 8, 8, 8), 0);
            add(make(K::Registers, access, 8, 8, 4, 4), 1);
            add(make(K::Registers, access, 4, 4, 4, 4), 2);
        }
        add(make(K::Shared, A::StorageBuffer, 8, 16, 8, 4), 0);
    } else {
        for (A access : {A::StorageBuffer, A::StorageTexel}) {
            add(make(K::Shared, access, 8, 16, 8, 4, 16), 0);
            add(make(K::Shared, access, 8, 8, 4, 4, 16), 1);
            add(make(K::Shared, access, 8, 8, 2, 2, 16), 2);
        }
        add(make(K::Registers, A::StorageTexel, 8, 8, 8, 8), 0);
        add(make(K::Registers, A::StorageBuffer, 8, 8, 4, 4), 1);
    }
    GemmConfig fallback = make(K::Registers, A::StorageBuffer, 8, 8, 4, 4);

    GemmConfigTable table;
    bool found[3] = {false, false, false};
    size_t chosen[3] = {0, 0, 0};
    for (auto& [config, size_class] : candidates) {
        if (!gemm_config_problem(device, config).empty()) continue;
        if (std::none_of(table.all.begin(), table.all.end(), [&](const GemmConfig& c) { return c.name == config.name; }))
            table.all.push_back(config);
        if (!found[size_class]) {
            found[size_class] = true;
            for (size_t i = 0; i < table.all.size(); ++i)
                if (table.all[i].name == config.name) chosen[size_class] = i;
        }
    }
    if (std::none_of(table.all.begin(), table.all.end(), [&](const GemmConfig& c) { return c.name == fallback.name; }))
        table.all.push_back(fallback);
    for (int s = 0; s < 3; ++s)
        if (!found[s])
            for (size_t i = 0; i < table.all.size(); ++i)
                if (table.all[i].name == fallback.name) chosen[s] = i;
    table.large = chosen[0], table.medium = chosen[1], table.small = chosen[2];
    return table;
}

}  // namespace vkconv::detail
