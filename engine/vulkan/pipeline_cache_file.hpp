// The pipeline cache on disk: the driver's VkPipelineCache bytes, kept across processes so a process's
// first passes do not compile every pipeline again. A file is trusted only when it is whole (its size
// and checksum match) and was written for this very device and driver (vendor, device, driver version,
// pipelineCacheUUID, in vkconv's header and in the driver's own); anything else is ignored with the reason.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vulkan/vk_api.hpp"

namespace vkconv::detail {

// The driver's cache bytes stored at `path`, or nothing with `why` set: no file (why empty), or a file that
// is not to be trusted (why says what is wrong with it).
std::vector<uint8_t> read_pipeline_cache_file(const std::string& path, const VkPhysicalDeviceProperties& device,
                                              std::string& why);

// Writes `data` for `device` to `path` through a temporary file beside it and a rename, so a reader sees
// the old file or the new one, never half of one. Throws Error(InvalidArgument) naming the path when it
// cannot be written.
void write_pipeline_cache_file(const std::string& path, const VkPhysicalDeviceProperties& device,
                               std::span<const uint8_t> data);

}  // namespace vkconv::detail
