// User compute kernels: SPIR-V from the user's build, run as 1-D elementwise dispatches on tensors.
#include "vkconv/kernel.hpp"

#include <cstdio>
#include <cstring>
#include <string>

#include "context/pass.hpp"
#include "context/tensor_storage.hpp"
#include "vulkan/dispatch.hpp"

namespace vkconv {

struct Kernel::State {
    Context* context = nullptr;
    std::shared_ptr<detail::ContextImpl> impl;
    KernelDesc desc;  // desc.spirv is left empty: the words live in the pipeline cache
    detail::PipelineDesc pipeline;
};

namespace {

Error bad(const std::string& kernel, const std::string& message) {
    return Error(ErrorCategory::InvalidArgument, "kernel '" + kernel + "': " + message);
}

// FNV-1a over the words: two kernels of one name but different code must not share a pipeline.
uint64_t content_hash(std::span<const uint32_t> words) {
    uint64_t h = 1469598103934665603ull;
    for (uint32_t w : words)
        for (int b = 0; b < 4; ++b) h = (h ^ ((w >> (8 * b)) & 0xffu)) * 1099511628211ull;
    return h;
}

constexpr uint32_t kSpirvMagic = 0x07230203;
constexpr uint32_t kMaxPushBytes = 128;  // the portable minimum of maxPushConstantsSize
constexpr uint32_t kTailBytes = 8;       // {uint base, count}

}  // namespace

Kernel::Kernel(Context& context, const KernelDesc& desc) : state_(std::make_shared<State>()) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    impl.device->throw_if_lost();
    const std::string& name = desc.name.empty() ? std::string("(unnamed)") : desc.name;
    if (desc.spirv.size() < 5 || desc.spirv[0] != kSpirvMagic)
        throw bad(name, "the code is not SPIR-V (" + std::to_string(desc.spirv.size()) +
                            " words; a module starts with the magic number 0x07230203 and a 5-word header)");
    const uint32_t max_bindings = impl.device->limits().maxPerStageDescriptorStorageBuffers;
    if (desc.bindings.empty() || desc.bindings.size() > max_bindings)
        throw bad(name, std::to_string(desc.bindings.size()) + " bindings; the device allows 1 to " +
                            std::to_string(max_bindings) + " storage buffers per shader");
    const uint32_t offsets_bytes = desc.element_offsets ? uint32_t(4 * desc.bindings.size()) : 0;
    if (desc.params_bytes % 4 != 0 || desc.params_bytes + offsets_bytes > kMaxPushBytes - kTailBytes)
        throw bad(name, "params_bytes " + std::to_string(desc.params_bytes) + " must be a multiple of 4 and at most " +
                            std::to_string(kMaxPushBytes - kTailBytes - offsets_bytes) +
                            " (128 bytes of push constants, less " +
                            (offsets_bytes ? "one element offset per binding and " : "") + "{base, count})");
    state_->context = &context;
    state_->impl = detail::Access::impl(context);
    state_->desc = desc;
    state_->desc.name = name;
    state_->desc.spirv = {};
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(content_hash(desc.spirv)));
    state_->pipeline.shader = "user:" + name + ":" + hash;
    state_->pipeline.bindings.assign(desc.bindings.size(), VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    state_->pipeline.push_constant_bytes = desc.params_bytes + offsets_bytes + kTailBytes;
    state_->pipeline.specialization = {detail::kElementwiseWorkgroup};
    impl.pipelines->add_spirv(state_->pipeline.shader, std::vector<uint32_t>(desc.spirv.begin(), desc.spirv.end()));
    impl.pipelines->get(state_->pipeline);
}

const std::string& Kernel::name() const {
    return state_->desc.name;
}

RunStats Kernel::run(const std::vector<Tensor>& tensors, uint64_t elements, std::span<const std::byte> params) {
    State& s = *state_;
    detail::ContextImpl& impl = *s.impl;
    const auto lock = detail::serialise(impl);
    impl.device->throw_if_lost();
    const std::string& name = s.desc.name;
    if (tensors.size() != s.desc.bindings.size())
        throw bad(name, std::to_string(tensors.size()) + " tensors given for " +
                            std::to_string(s.desc.bindings.size()) + " bindings");
    if (params.size() != s.desc.params_bytes)
        throw bad(name, std::to_string(params.size()) + " bytes of params given, the kernel takes " +
                            std::to_string(s.desc.params_bytes));
    if (elements == 0) throw bad(name, "elements must be positive");
    if (elements > UINT32_MAX)
        throw Error(ErrorCategory::Unsupported, "kernel '" + name + "': " + std::to_string(elements) +
                                                    " elements exceed 32-bit element indexing (run it in pieces)");
    const uint64_t max_range = impl.device->limits().maxStorageBufferRange;
    const uint64_t alignment = impl.pool->alignment();
    std::vector<detail::Binding> bindings;
    std::vector<uint32_t> offsets;  // element_offsets: element 0 of each binding, in floats from its start
    std::vector<detail::Operand> operands;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        const std::string which = "binding " + std::to_string(i);
        if (t.empty()) throw bad(name, which + ": the tensor is empty");
        if (detail::storage_of(t)->context.get() != &impl)
            throw bad(name, which + ": the tensor belongs to another context");
        detail::require_f32(t, which, "kernel '" + name + "'");
        if (t.bytes() > max_range)
            throw Error(ErrorCategory::Unsupported,
                        "kernel '" + name + "': " + which + ": a tensor of " + std::to_string(t.bytes()) +
                            " bytes exceeds the device's maxStorageBufferRange of " + std::to_string(max_range) +
                            " bytes (bind views of it, Tensor::images)");
        const bool written = s.desc.bindings[i] != BindingAccess::Read;
        if (written)
            for (size_t j = 0; j < tensors.size(); ++j)
                if (j != i && detail::overlaps(t, tensors[j]))
                    throw bad(name, which + " is written and shares memory with binding " + std::to_string(j));
        operands.push_back(
            detail::operand_of(detail::allocation_of(t, "a kernel"), static_cast<uint64_t>(t.elements()), alignment));
        const detail::Window whole = operands.back().whole();
        if (whole.delta != 0 && !s.desc.element_offsets)
            throw bad(name, which + ": the view starts at byte " + std::to_string(t.byte_offset()) +
                                ", off the device's " + std::to_string(alignment) +
                                "-byte storage-buffer offset alignment; a kernel takes such views with "
                                "KernelDesc::element_offsets, adding offset[i] to binding i's indices");
        bindings.push_back({whole.range, written});
        offsets.push_back(static_cast<uint32_t>(whole.delta));
    }

    RunStats stats;
    const uint64_t total = elements;
    detail::run_pass(impl, stats, {}, {}, [&](detail::CommandStream& stream, std::span<const detail::Operand>) {
        const detail::Pipeline& pipeline = impl.pipelines->get(s.pipeline);
        // The shader's block is params, then (element_offsets) one offset per binding, then {base, count}.
        std::vector<std::byte> push(s.pipeline.push_constant_bytes);
        if (!params.empty()) std::memcpy(push.data(), params.data(), params.size());
        size_t tail = params.size();
        if (s.desc.element_offsets) {
            std::memcpy(push.data() + tail, offsets.data(), offsets.size() * 4);
            tail += offsets.size() * 4;
        }
        detail::dispatch_elements(stream, pipeline, bindings, push, tail, total);
    });
    std::vector<const detail::Operand*> ptrs;
    for (const auto& op : operands) ptrs.push_back(&op);
    stats.operand_bytes = detail::operand_bytes(ptrs);
    return stats;
}

}  // namespace vkconv
