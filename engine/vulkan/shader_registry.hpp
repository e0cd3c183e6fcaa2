// The SPIR-V of every shader in shaders/, compiled at build time and embedded (see shaders/CMakeLists.txt).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace vkconv::detail {

// Empty span when no shader has that name.
std::span<const uint32_t> find_spirv(std::string_view name);

}  // namespace vkconv::detail
