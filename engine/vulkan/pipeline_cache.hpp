// Compute pipelines, created lazily from the embedded SPIR-V and cached.
//
// On a modelled device (a description to plan for, vulkan/device_model.hpp) nothing is built: get()
// returns the description alone, which is all a plan's dispatch list needs.
//
// A pipeline is keyed by its shader, its binding types, its push-constant size and its specialization
// constants (ids 0..n-1, each 32 bits; id 0 is always the workgroup size via local_size_x_id), so every
// tile shape or fixed conv geometry gets its own specialised pipeline, built once per context.
#pragma once

#include "vulkan/vk_api.hpp"

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "contract/shader_contracts.hpp"
#include "vkconv/error.hpp"
#include "vulkan/device.hpp"

namespace vkconv::detail {

struct PipelineDesc {
    std::string shader;  // name in the shader registry (file name without .comp), or a user key

    std::vector<VkDescriptorType> bindings;  // binding i has type bindings[i]
    uint32_t push_constant_bytes = 0;        // at most 128, the portable minimum
    std::vector<uint32_t> specialization;    // constant_id i = specialization[i]

    auto tie() const { return std::tie(shader, bindings, push_constant_bytes, specialization); }
    bool operator<(const PipelineDesc& other) const { return tie() < other.tie(); }
};

// A shader's specialization constants, set by the names its GLSL gives them: `Shader` is the shader's
// contract (contract::<shader>, generated from its GLSL at build time), so an id comes from the shader
// itself, never from a position the host keeps by hand. values() refuses a constant left unset.
template <typename Shader>
class Specialization {
public:
    Specialization() : values_(Shader::spec::constants), set_(Shader::spec::constants, false) {}

    Specialization& set(uint32_t id, uint32_t value) {
        values_.at(id) = value;
        set_.at(id) = true;
        return *this;
    }
    Specialization& set(uint32_t id, int64_t value) { return set(id, static_cast<uint32_t>(value)); }
    Specialization& set(uint32_t id, bool value) { return set(id, value ? 1u : 0u); }

    std::vector<uint32_t> values() const {
        for (size_t id = 0; id < set_.size(); ++id)
            if (!set_[id])
                throw Error(ErrorCategory::VulkanFailure, std::string("internal: specialization constant ") +
                                                              std::to_string(id) + " of shader " + Shader::name +
                                                              " was not set");
        return values_;
    }

private:
    std::vector<uint32_t> values_;
    std::vector<bool> set_;
};

// Checks at compile time that the host's push-constant struct `Push` matches the shader's push_constant
// block member by member (same names, same offsets) and in size.
#define VKCONV_PUSH_MEMBER(Push, Shader, member)                                              \
    static_assert(offsetof(Push, member) == ::vkconv::detail::contract::Shader::push::member, \
                  #Push "::" #member " is not where " #Shader "'s push constants have it");
#define VKCONV_PUSH_SIZE(Push, Shader)                                             \
    static_assert(sizeof(Push) == ::vkconv::detail::contract::Shader::push::bytes, \
                  #Push " is not the size of " #Shader "'s push constants");

struct Pipeline {
    VkPipeline pipeline = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    PipelineDesc desc;
    uint32_t invocations = 1;  // per workgroup, from the specialization constants that size it
    // Shared memory its SPIR-V declares with its specialization (spirv_reflect.hpp); 0 where unknown.
    uint64_t shared_bytes = 0;
};

// Invocations per workgroup of the pipeline `desc` describes (an embedded shader's; 1 for an unknown one).
uint32_t workgroup_invocations(const PipelineDesc& desc);

class PipelineCache {
public:
    using Report = std::function<void(MessageSeverity, std::string_view)>;
    // `file`: where the driver's cache is kept across processes (empty: nowhere). A file that cannot be
    // trusted (pipeline_cache_file.hpp) is ignored, with a warning through `report`.
    explicit PipelineCache(Device& device, std::string file = {}, Report report = {});
    ~PipelineCache();
    PipelineCache(const PipelineCache&) = delete;
    PipelineCache& operator=(const PipelineCache&) = delete;

    const Pipeline& get(const PipelineDesc& desc);
    size_t size() const { return pipelines_.size(); }

    // Between these two calls get() answers a pipeline not built yet with a stand-in (its description, no
    // Vulkan object) and notes the description; a planning stream records with those (the pass's dry run).
    void begin_collecting();
    std::vector<PipelineDesc> end_collecting() noexcept;
    // Builds the pipelines of `descs` not built yet on several threads at once (drivers compile them on
    // the calling thread), so a pass's first run waits for about its slowest pipeline, not their sum.
    // Throws the first failure, after keeping every pipeline that was built.
    void build(const std::vector<PipelineDesc>& descs);
    // Bytes of driver cache data the file gave at start-up (0: none, or not trusted).
    uint64_t loaded_bytes() const { return loaded_bytes_; }
    // Writes the driver's cache to the file if pipelines were built since it was read or last written.
    // Throws Error(InvalidArgument) naming the file when it cannot be written. The destructor saves too,
    // reporting instead of throwing.
    void save();

    // User SPIR-V (vkconv::Kernel) under `key`, which the caller makes unique per content: get() then
    // finds it like an embedded shader. Registering a key again keeps the first words.
    void add_spirv(const std::string& key, std::vector<uint32_t> words);

private:
    VkShaderModule module(const std::string& shader);
    // The device's limits against what `desc` asks (Error(Unsupported) naming the shortfall); its shared
    // memory in bytes.
    uint64_t check_limits(const PipelineDesc& desc);
    static std::unique_ptr<Pipeline> described(const PipelineDesc& desc, uint64_t shared_bytes);
    // Takes a built pipeline into the cache (counted, and marked for the cache file).
    const Pipeline& keep(const PipelineDesc& desc, std::unique_ptr<Pipeline> built);
    // The Vulkan objects of one pipeline; touches no member but the device, so threads may call it at once.
    std::unique_ptr<Pipeline> create(const PipelineDesc& desc, VkShaderModule shader_module, uint64_t shared_bytes);

    Device& device_;
    std::string file_;
    Report report_;
    uint64_t loaded_bytes_ = 0;
    bool unsaved_ = false;  // pipelines built since the file was read or written
    VkPipelineCache cache_ = VK_NULL_HANDLE;
    std::map<std::string, VkShaderModule> modules_;
    std::map<std::string, std::vector<uint32_t>> user_spirv_;
    std::map<PipelineDesc, std::unique_ptr<Pipeline>> pipelines_;
    bool collecting_ = false;
    std::map<PipelineDesc, std::unique_ptr<Pipeline>> stand_ins_;
    std::vector<PipelineDesc> collected_;
};

}  // namespace vkconv::detail
