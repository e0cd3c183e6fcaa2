// vkconv::Kernel — a user's own compute shader, run on vkconv tensors.
//
// For the elementwise steps around convolutions (residual adds, differences, gradient bookkeeping) that
// vkconv has no pass for. The user compiles GLSL to SPIR-V in their own build and hands the words over;
// vkconv builds the pipeline once (cached in the context by the kernel's name and the words' content)
// and runs it over a 1-D range of elements, split into as many dispatches as the device's workgroup-count
// limit needs.
//
// The shader's contract:
//   layout(local_size_x_id = 0) in;                     // vkconv sets the workgroup size (64)
//   layout(set = 0, binding = i) buffer ... { float v[]; };   // one storage buffer per binding, i = 0..n-1
//   layout(push_constant) uniform P { <params_bytes of your own>; uint base; uint count; };
//   element e = base + gl_GlobalInvocationID.x, valid while gl_GlobalInvocationID.x < count.
// With KernelDesc::element_offsets, the block has one uint per binding before {base, count}:
//   layout(push_constant) uniform P { <params>; uint offset[n]; uint base; uint count; };
//   and element i of binding b's tensor is v[offset[b] + i]. A binding is then bound from the storage-buffer
//   offset alignment at or below its tensor's first byte, so views may start at any element (without the
//   flag, a view must start on the alignment).
// Each invocation should write only its own elements: dispatches of one run are not ordered by element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "vkconv/context.hpp"
#include "vkconv/export.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv {
VKCONV_API_BEGIN

enum class BindingAccess { Read, Write, ReadWrite };

struct KernelDesc {
    std::string name;                     // shown in errors; with the words' content it keys the pipeline
    std::span<const uint32_t> spirv;      // SPIR-V words (copied)
    std::vector<BindingAccess> bindings;  // binding i: storage buffer, accessed as bindings[i]
    uint32_t params_bytes = 0;            // the user's push constants before {base, count}: multiple of 4, <= 120
                                          // (less 4 per binding with element_offsets)
    bool element_offsets = false;         // the shader adds offset[b] to binding b's indices (contract above)
};

class Kernel {
public:
    // Validates the description (SPIR-V magic, 1..maxPerStageDescriptorStorageBuffers bindings, params
    // size) and builds the pipeline, so a bad shader fails here (Error(InvalidArgument) or the driver's
    // VulkanFailure), not at the first run.
    Kernel(Context& context, const KernelDesc& desc);

    // One run over elements [0, elements): tensors[i] (views allowed) binds to binding i; `params` are the
    // push constants before {base, count}. Error(InvalidArgument) for a wrong tensor count, an empty
    // tensor or one of another context, params of the wrong size, elements == 0, or a written binding
    // sharing memory with another binding; Error(Unsupported) for a tensor beyond maxStorageBufferRange
    // (bind views of it) or more than 2^32 - 1 elements. Submits, waits, and reports GPU time and the
    // pool's peak (RunStats::algorithm stays Auto; operand_bytes counts the bound tensors).
    RunStats run(const std::vector<Tensor>& tensors, uint64_t elements, std::span<const std::byte> params = {});

    template <typename Params>
    requires std::is_trivially_copyable_v<Params> RunStats run(const std::vector<Tensor>& tensors, uint64_t elements,
                                                               const Params& params) {
        return run(tensors, elements, std::as_bytes(std::span<const Params>(&params, 1)));
    }

    const std::string& name() const;

private:
    struct State;
    std::shared_ptr<State> state_;
};

VKCONV_API_END
}  // namespace vkconv
