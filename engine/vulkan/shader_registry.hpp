// The SPIR-V of every shader in shaders/, compiled at build time and embedded (see shaders/CMakeLists.txt).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace vkconv::detail {

// Empty span when no shader has that name.
std::span<const uint32_t> find_spirv(std::string_view name);

// The specialization-constant ids of the shader's workgroup size (local_size_x_id, _y_id, _z_id), read from
// its GLSL at build time; kNoSizeId for a dimension of 1 (and for every dimension of an unknown name).
constexpr uint32_t kNoSizeId = 0xFFFFFFFFu;
std::array<uint32_t, 3> workgroup_size_ids(std::string_view name);

}  // namespace vkconv::detail
