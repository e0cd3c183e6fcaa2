#include "vulkan/pipeline_cache_file.hpp"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "vkconv/error.hpp"

namespace vkconv::detail {
namespace {

constexpr char kMagic[8] = {'V', 'K', 'C', 'O', 'N', 'V', 'P', 'C'};
constexpr uint32_t kFormat = 1;

// vkconv's header before the driver's bytes.
struct FileHeader {
    char magic[8];
    uint32_t format;
    uint32_t vendor_id, device_id, driver_version;
    uint8_t cache_uuid[VK_UUID_SIZE];
    uint64_t data_bytes;
    uint64_t checksum;  // FNV-1a over the data
};
static_assert(sizeof(FileHeader) == 56);

uint64_t fnv1a(std::span<const uint8_t> bytes) {
    uint64_t h = 1469598103934665603ull;
    for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
    return h;
}

FileHeader header_for(const VkPhysicalDeviceProperties& device, std::span<const uint8_t> data) {
    FileHeader h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.format = kFormat;
    h.vendor_id = device.vendorID, h.device_id = device.deviceID, h.driver_version = device.driverVersion;
    std::memcpy(h.cache_uuid, device.pipelineCacheUUID, VK_UUID_SIZE);
    h.data_bytes = data.size();
    h.checksum = fnv1a(data);
    return h;
}

// Why the driver's own header (VkPipelineCacheHeaderVersionOne) does not belong to `device`, or "".
std::string driver_header_problem(std::span<const uint8_t> data, const VkPhysicalDeviceProperties& device) {
    VkPipelineCacheHeaderVersionOne h{};
    if (data.size() < sizeof h) return "the driver's cache data is shorter than its header";
    std::memcpy(&h, data.data(), sizeof h);
    if (h.headerSize < sizeof h || h.headerSize > data.size()) return "the driver's header size is wrong";
    if (h.headerVersion != VK_PIPELINE_CACHE_HEADER_VERSION_ONE) return "the driver's header version is unknown";
    if (h.vendorID != device.vendorID || h.deviceID != device.deviceID ||
        std::memcmp(h.pipelineCacheUUID, device.pipelineCacheUUID, VK_UUID_SIZE) != 0)
        return "the driver's header names another device or driver";
    return "";
}

}  // namespace

std::vector<uint8_t> read_pipeline_cache_file(const std::string& path, const VkPhysicalDeviceProperties& device,
                                              std::string& why) {
    why.clear();
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};  // no file yet: nothing to say
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    FileHeader h{};
    if (bytes.size() < sizeof h || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
        why = "it is not a vkconv pipeline-cache file";
        return {};
    }
    std::memcpy(&h, bytes.data(), sizeof h);
    const std::span<const uint8_t> data(bytes.data() + sizeof h, bytes.size() - sizeof h);
    if (h.format != kFormat) {
        why = "its format version " + std::to_string(h.format) + " is not " + std::to_string(kFormat);
    } else if (h.vendor_id != device.vendorID || h.device_id != device.deviceID ||
               h.driver_version != device.driverVersion ||
               std::memcmp(h.cache_uuid, device.pipelineCacheUUID, VK_UUID_SIZE) != 0) {
        why = "it was written for another device, driver version or pipelineCacheUUID";
    } else if (h.data_bytes != data.size() || h.checksum != fnv1a(data)) {
        why = "it is truncated or corrupt (its size or checksum does not match)";
    } else {
        why = driver_header_problem(data, device);
    }
    if (!why.empty()) return {};
    return {data.begin(), data.end()};
}

void write_pipeline_cache_file(const std::string& path, const VkPhysicalDeviceProperties& device,
                               std::span<const uint8_t> data) {
    const FileHeader h = header_for(device, data);
    const std::string temporary = path + ".tmp";
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(&h), sizeof h);
        out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
        out.close();
        if (!out) {
            std::remove(temporary.c_str());
            throw Error(ErrorCategory::InvalidArgument, "cannot write the pipeline-cache file '" + temporary + "'");
        }
    }
    std::error_code error;
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::remove(temporary.c_str());
        throw Error(ErrorCategory::InvalidArgument,
                    "cannot replace the pipeline-cache file '" + path + "': " + error.message());
    }
}

}  // namespace vkconv::detail
