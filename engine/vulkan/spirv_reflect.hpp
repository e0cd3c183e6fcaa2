// What a compute shader's SPIR-V says about the resources it takes, read from the module itself so that
// checks against the device's limits do not rely on what the host code believes the shader declares.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace vkconv::detail {

// Bytes of the shader's Workgroup-storage (shared) variables with `specialization` applied (constant_id i
// = specialization[i], the module's default for ids beyond it): each variable's scalars packed without
// padding, the least any driver can reserve. Nothing when an array length is an expression this reader
// does not evaluate, or the module is malformed.
std::optional<uint64_t> workgroup_memory_bytes(std::span<const uint32_t> spirv,
                                               std::span<const uint32_t> specialization);

}  // namespace vkconv::detail
