// Compute pipelines, created lazily from the embedded SPIR-V and cached.
//
// A pipeline is keyed by its shader, its binding types, its push-constant size and its specialization
// constants (ids 0..n-1, each 32 bits; id 0 is always the workgroup size via local_size_x_id), so every
// tile shape or fixed conv geometry gets its own specialised pipeline, built once per context.
#pragma once

#include <volk.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vulkan/device.hpp"

namespace vkconv::detail {

struct PipelineDesc {
    std::string shader;                      // name in the shader registry (file name without .comp), or a user key

    std::vector<VkDescriptorType> bindings;  // binding i has type bindings[i]
    uint32_t push_constant_bytes = 0;        // at most 128, the portable minimum
    std::vector<uint32_t> specialization;    // constant_id i = specialization[i]

    auto tie() const { return std::tie(shader, bindings, push_constant_bytes, specialization); }
    bool operator<(const PipelineDesc& other) const { return tie() < other.tie(); }
};

struct Pipeline {
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    PipelineDesc desc;
};

class PipelineCache {
public:
    explicit PipelineCache(Device& device);
    ~PipelineCache();
    PipelineCache(const PipelineCache&) = delete;
    PipelineCache& operator=(const PipelineCache&) = delete;

    const Pipeline& get(const PipelineDesc& desc);
    size_t size() const { return pipelines_.size(); }

    // User SPIR-V (vkconv::Kernel) under `key`, which the caller makes unique per content: get() then
    // finds it like an embedded shader. Registering a key again keeps the first words.
    void add_spirv(const std::string& key, std::vector<uint32_t> words);

private:
    VkShaderModule module(const std::string& shader);

    Device& device_;
    VkPipelineCache cache_ = VK_NULL_HANDLE;
    std::map<std::string, VkShaderModule> modules_;
    std::map<std::string, std::vector<uint32_t>> user_spirv_;
    std::map<PipelineDesc, std::unique_ptr<Pipeline>> pipelines_;
};

}  // namespace vkconv::detail
