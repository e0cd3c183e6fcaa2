// Which build of a kernel runs a problem's element type (shaders/common/elements.glsl), and the value of the
// kernels' per-binding type constants.
#pragma once

#include <string>

#include "context/context_impl.hpp"
#include "vkconv/problem.hpp"
#include "vulkan/device.hpp"

namespace vkconv::detail {

// The suffix of the kernel's build for `type`: "" for fp32; for 16-bit types "_s16" on a device with
// storageBuffer16BitAccess (16-bit elements read and written directly), else "_p16" (packed in 32-bit words).
inline std::string element_build(const ContextImpl& context, DataType type) {
    if (type == DataType::F32) return "";
    return context.device->info().storage_16bit ? "_s16" : "_p16";
}

// A binding's element-type specialization constant: DataType's order (0 fp32, 1 fp16, 2 bf16).
inline uint32_t element_constant(DataType type) {
    return static_cast<uint32_t>(type);
}

}  // namespace vkconv::detail
