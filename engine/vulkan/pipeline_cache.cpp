#include "vulkan/pipeline_cache.hpp"

#include "vulkan/spirv_reflect.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <set>
#include <string>
#include <thread>

#include "vulkan/pipeline_cache_file.hpp"
#include "vulkan/shader_registry.hpp"
#include "vulkan/vk_check.hpp"

namespace vkconv::detail {

PipelineCache::PipelineCache(Device& device, std::string file, Report report)
    : device_(device), file_(std::move(file)), report_(std::move(report)) {
    if (device_.modelled()) return;  // plans only: nothing is built
    std::vector<uint8_t> initial;
    if (!file_.empty()) {
        std::string why;
        initial = read_pipeline_cache_file(file_, device_.properties(), why);
        if (!why.empty() && report_)
            report_(MessageSeverity::Warning, "pipeline cache '" + file_ + "' ignored: " + why);
    }
    VkPipelineCacheCreateInfo info{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    info.initialDataSize = initial.size();
    info.pInitialData = initial.empty() ? nullptr : initial.data();
    VKC_CHECK(device_.lost_flag(), device_.vk().vkCreatePipelineCache(device_.handle(), &info, nullptr, &cache_));
    device_.note_created();
    loaded_bytes_ = initial.size();
}

void PipelineCache::save() {
    if (file_.empty() || !unsaved_ || device_.modelled()) return;
    const auto& vk = device_.vk();
    size_t bytes = 0;
    VKC_CHECK(device_.lost_flag(), vk.vkGetPipelineCacheData(device_.handle(), cache_, &bytes, nullptr));
    std::vector<uint8_t> data(bytes);
    VKC_CHECK(device_.lost_flag(), vk.vkGetPipelineCacheData(device_.handle(), cache_, &bytes, data.data()));
    data.resize(bytes);
    write_pipeline_cache_file(file_, device_.properties(), data);
    unsaved_ = false;
}

PipelineCache::~PipelineCache() {
    try {
        if (!device_.lost()) save();
    } catch (const std::exception& e) {
        if (report_) report_(MessageSeverity::Warning, e.what());
    }
    if (device_.modelled()) return;
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    for (auto& [desc, p] : pipelines_) {
        vk.vkDestroyPipeline(dev, p->pipeline, nullptr);
        vk.vkDestroyPipelineLayout(dev, p->layout, nullptr);
        vk.vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
    }
    device_.note_destroyed(3 * pipelines_.size());
    for (auto& [name, m] : modules_) vk.vkDestroyShaderModule(dev, m, nullptr);
    device_.note_destroyed(modules_.size());
    if (cache_) vk.vkDestroyPipelineCache(dev, cache_, nullptr), device_.note_destroyed();
}

VkShaderModule PipelineCache::module(const std::string& shader) {
    if (auto it = modules_.find(shader); it != modules_.end()) return it->second;
    const auto user = user_spirv_.find(shader);
    const auto code = user != user_spirv_.end() ? std::span<const uint32_t>(user->second) : find_spirv(shader);
    if (code.empty()) throw Error(ErrorCategory::Unsupported, "no embedded shader named '" + shader + "'");
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = code.size_bytes();
    info.pCode = code.data();
    VkShaderModule m = VK_NULL_HANDLE;
    VKC_CHECK(device_.lost_flag(), device_.vk().vkCreateShaderModule(device_.handle(), &info, nullptr, &m));
    device_.note_created();
    modules_.emplace(shader, m);
    return m;
}

void PipelineCache::add_spirv(const std::string& key, std::vector<uint32_t> words) {
    user_spirv_.emplace(key, std::move(words));
}

uint32_t workgroup_invocations(const PipelineDesc& desc) {
    uint32_t invocations = 1;
    for (uint32_t id : workgroup_size_ids(desc.shader))
        if (id != kNoSizeId && id < desc.specialization.size()) invocations *= desc.specialization[id];
    return invocations;
}

uint64_t PipelineCache::check_limits(const PipelineDesc& desc) {
    // What no device may be asked for, checked on every pipeline whatever planned it: the storage-buffer
    // descriptors, push constants and shared memory (as the SPIR-V itself declares it) it needs against
    // this device's limits (imposed ones included).
    const VkPhysicalDeviceLimits& limits = device_.limits();
    const auto storage_buffers = static_cast<uint32_t>(
        std::count(desc.bindings.begin(), desc.bindings.end(), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER));
    if (const std::string shortfall = storage_buffer_shortfall(device_, "shader '" + desc.shader + "'", storage_buffers);
        !shortfall.empty())
        throw Error(ErrorCategory::Unsupported, shortfall);
    const uint32_t push_limit = std::min<uint32_t>(128, limits.maxPushConstantsSize);
    if (desc.push_constant_bytes > push_limit)
        throw Error(ErrorCategory::Unsupported, "shader '" + desc.shader + "' needs " +
                                                    std::to_string(desc.push_constant_bytes) +
                                                    " bytes of push constants; the limit is " +
                                                    std::to_string(push_limit) + " (maxPushConstantsSize, portable 128)");
    const auto user = user_spirv_.find(desc.shader);
    const auto code = user != user_spirv_.end() ? std::span<const uint32_t>(user->second) : find_spirv(desc.shader);
    const uint64_t shared = workgroup_memory_bytes(code, desc.specialization).value_or(0);
    if (shared > limits.maxComputeSharedMemorySize)
        throw Error(ErrorCategory::Unsupported, "shader '" + desc.shader + "' declares " + std::to_string(shared) +
                                                    " bytes of shared memory; this device allows " +
                                                    std::to_string(limits.maxComputeSharedMemorySize) +
                                                    " (maxComputeSharedMemorySize)");
    return shared;
}

std::unique_ptr<Pipeline> PipelineCache::described(const PipelineDesc& desc, uint64_t shared_bytes) {
    auto p = std::make_unique<Pipeline>();
    p->desc = desc;
    p->invocations = workgroup_invocations(desc);
    p->shared_bytes = shared_bytes;
    return p;
}

const Pipeline& PipelineCache::get(const PipelineDesc& desc) {
    if (auto it = pipelines_.find(desc); it != pipelines_.end()) return *it->second;
    device_.throw_if_lost();
    const uint64_t shared = check_limits(desc);
    if (device_.modelled())  // a plan's dispatches need the description, never the pipeline
        return *pipelines_.emplace(desc, described(desc, shared)).first->second;
    if (collecting_) {
        auto [it, added] = stand_ins_.try_emplace(desc);
        if (added) it->second = described(desc, shared), collected_.push_back(desc);
        return *it->second;
    }
    return keep(desc, create(desc, module(desc.shader), shared));
}

const Pipeline& PipelineCache::keep(const PipelineDesc& desc, std::unique_ptr<Pipeline> built) {
    unsaved_ = true;
    device_.note_created(3);  // its set layout, pipeline layout and pipeline
    return *pipelines_.emplace(desc, std::move(built)).first->second;
}

void PipelineCache::begin_collecting() {
    collecting_ = true;
    collected_.clear();
}

std::vector<PipelineDesc> PipelineCache::end_collecting() noexcept {
    collecting_ = false;
    stand_ins_.clear();
    return std::move(collected_);
}

void PipelineCache::build(const std::vector<PipelineDesc>& descs) {
    if (device_.modelled()) return;
    std::vector<const PipelineDesc*> missing;
    std::vector<uint64_t> shared;
    std::vector<VkShaderModule> modules;
    std::set<PipelineDesc> seen;
    for (const PipelineDesc& desc : descs) {
        if (pipelines_.count(desc) || !seen.insert(desc).second) continue;
        missing.push_back(&desc);
        shared.push_back(check_limits(desc));
        modules.push_back(module(desc.shader));  // modules_ is not shared between threads
    }
    std::vector<std::unique_ptr<Pipeline>> built(missing.size());
    std::vector<std::exception_ptr> failed(missing.size());
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i; (i = next++) < missing.size();) try {
                built[i] = create(*missing[i], modules[i], shared[i]);
            } catch (...) {
                failed[i] = std::current_exception();
            }
    };
    const size_t threads = std::min<size_t>({missing.size(), std::max(1u, std::thread::hardware_concurrency()), 8});
    std::vector<std::thread> helpers;
    for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
    work();
    for (std::thread& helper : helpers) helper.join();
    for (size_t i = 0; i < missing.size(); ++i)
        if (built[i]) keep(*missing[i], std::move(built[i]));
    for (const std::exception_ptr& failure : failed)
        if (failure) std::rethrow_exception(failure);
}

std::unique_ptr<Pipeline> PipelineCache::create(const PipelineDesc& desc, VkShaderModule shader_module,
                                                uint64_t shared_bytes) {
    const auto& vk = device_.vk();
    VkDevice dev = device_.handle();
    auto p = described(desc, shared_bytes);
    std::vector<VkDescriptorSetLayoutBinding> bindings(desc.bindings.size());
    for (uint32_t i = 0; i < bindings.size(); ++i) {
        bindings[i].binding = i;
        bindings[i].descriptorType = desc.bindings[i];
        bindings[i].descriptorCount = 1;
        bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    set_info.bindingCount = static_cast<uint32_t>(bindings.size());
    set_info.pBindings = bindings.data();
    VKC_CHECK(device_.lost_flag(), vk.vkCreateDescriptorSetLayout(dev, &set_info, nullptr, &p->set_layout));

    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, desc.push_constant_bytes};
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &p->set_layout;
    layout_info.pushConstantRangeCount = desc.push_constant_bytes ? 1 : 0;
    layout_info.pPushConstantRanges = &range;
    VkResult result = vk.vkCreatePipelineLayout(dev, &layout_info, nullptr, &p->layout);
    if (result != VK_SUCCESS) {
        vk.vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
        VKC_CHECK(device_.lost_flag(), result);
    }

    std::vector<VkSpecializationMapEntry> entries(desc.specialization.size());
    for (uint32_t i = 0; i < entries.size(); ++i) entries[i] = {i, i * 4u, 4u};
    VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(), desc.specialization.size() * 4,
                              desc.specialization.data()};
    VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    info.stage.module = shader_module;
    info.stage.pName = "main";
    info.stage.pSpecializationInfo = entries.empty() ? nullptr : &spec;
    info.layout = p->layout;
    result = vk.vkCreateComputePipelines(dev, cache_, 1, &info, nullptr, &p->pipeline);
    if (result != VK_SUCCESS) {
        vk.vkDestroyPipelineLayout(dev, p->layout, nullptr);
        vk.vkDestroyDescriptorSetLayout(dev, p->set_layout, nullptr);
        VKC_CHECK(device_.lost_flag(), result);
    }
    return p;
}

}  // namespace vkconv::detail
