// Small helpers shared by the test files: catching the vkconv::Error a call throws, a temporary directory
// that cleans up after itself, and whole-file byte I/O. Header-only; everything is in namespace vkt.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <cstdlib>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "vkconv/error.hpp"

namespace vkt {

// Returns the vkconv::Error that `f` throws; FAILs the test case when it throws none.
template <class F>
vkconv::Error thrown_error(F&& f) {
    try {
        std::forward<F>(f)();
    } catch (const vkconv::Error& e) {
        return e;
    }
    FAIL("no vkconv::Error was thrown");
    return vkconv::Error(vkconv::ErrorCategory::VulkanFailure, "unreachable");
}

// Returns the message of the vkconv::Error that `f` throws, after checking it is an InvalidArgument.
template <class F>
std::string invalid_argument_message(F&& f) {
    const vkconv::Error e = thrown_error(std::forward<F>(f));
    CHECK(e.category() == vkconv::ErrorCategory::InvalidArgument);
    return e.what();
}

// A fresh, empty directory under the system temp directory, removed with its contents at scope exit.
// Its name always holds a space, so every test that uses one also exercises paths with spaces.
// An environment variable set for a scope, its earlier value (or absence) restored after.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old;
        ::setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
        else ::unsetenv(name_.c_str());
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    std::string name_;
    std::optional<std::string> old_;
};

struct TempDir {
    std::filesystem::path path;

    explicit TempDir(const std::string& prefix) {
        static std::atomic<unsigned> counter{0};
        std::random_device rd;
        const auto base = std::filesystem::temp_directory_path();
        do {  // create_directory is false when the name is taken: try another
            path = base / (prefix + " " + std::to_string(rd()) + "-" + std::to_string(counter++));
        } while (!std::filesystem::create_directory(path));
    }
    ~TempDir() {
        try {
            std::error_code ignored;
            std::filesystem::remove_all(path, ignored);
        } catch (...) {
        }
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    std::string file(const std::string& name) const { return (path / name).string(); }

    // The names of the directory's entries (files and folders), sorted.
    std::vector<std::string> entries() const {
        std::vector<std::string> names;
        for (const auto& e : std::filesystem::directory_iterator(path)) names.push_back(e.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    }
};

inline std::string read_bytes(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

// |v| of every value: the reference run on these gives the magnitudes check_close bounds errors by.
inline std::vector<float> absolute(std::span<const float> values) {
    std::vector<float> out(values.size());
    std::transform(values.begin(), values.end(), out.begin(), [](float v) { return std::fabs(v); });
    return out;
}

// NaN-filled contents for an output tensor, so a value the pass fails to write shows up.
inline std::vector<float> poison(int64_t count) {
    return std::vector<float>(size_t(count), std::numeric_limits<float>::quiet_NaN());
}

// True when no value is NaN: every value of an output poisoned with poison() was written. (A rerun compared
// bit for bit with a first run that left NaN behind would fail anyway, since NaN != NaN; this names why.)
inline bool all_written(const std::vector<float>& values) {
    return std::none_of(values.begin(), values.end(), [](float v) { return std::isnan(v); });
}

// The limits of a device profile a test writes (profile_with_limits): the ones a test varies; every other limit
// at the device's own or the specification's minimum. A size of 0 leaves that field out of the profile (a device
// that does not report it: both left out, the specification's minimum of 1 GiB).
struct ProfileLimits {
    uint64_t max_buffer_size = 0;             // VkPhysicalDeviceMaintenance4Properties::maxBufferSize
    uint64_t max_memory_allocation_size = 0;  // VkPhysicalDeviceMaintenance3Properties
    uint32_t storage_buffers = 64;                   // maxPerStageDescriptorStorageBuffers
    uint64_t max_storage_buffer_range = 0;           // 0: the specification's minimum, 2^27
    uint32_t storage_alignment = 16;                 // minStorageBufferOffsetAlignment
    uint32_t texel_alignment = 16;                   // minTexelBufferOffsetAlignment
};

// A device profile (a file in `dir`) with `limits`. Imposed with ContextOptions::device_limits or
// VKCONV_DEVICE_LIMITS, tensors above the smaller buffer limit are stored in pages.
inline std::string profile_with_limits(const TempDir& dir, const ProfileLimits& limits) {
    const std::string path = dir.file("limits-" + std::to_string(limits.max_buffer_size) + "-" +
                                      std::to_string(limits.max_memory_allocation_size) + "-" +
                                      std::to_string(limits.storage_buffers) + "-" +
                                      std::to_string(limits.max_storage_buffer_range) + "-" +
                                      std::to_string(limits.storage_alignment) + "-" +
                                      std::to_string(limits.texel_alignment) + ".json");
    const std::string buffers = std::to_string(limits.storage_buffers);
    std::string structures;
    if (limits.max_memory_allocation_size)
        structures += R"(, "VkPhysicalDeviceMaintenance3Properties": {"maxMemoryAllocationSize": )" +
                      std::to_string(limits.max_memory_allocation_size) + "}";
    if (limits.max_buffer_size)
        structures += R"(, "VkPhysicalDeviceMaintenance4Properties": {"maxBufferSize": )" +
                      std::to_string(limits.max_buffer_size) + "}";
    const std::string range = limits.max_storage_buffer_range
                                  ? R"("maxStorageBufferRange": )" + std::to_string(limits.max_storage_buffer_range) + ", "
                                  : "";
    std::ofstream(path) << R"({"capabilities": {"device": {"properties": {
        "VkPhysicalDeviceProperties": {"deviceName": "test limits", "limits": {
            "maxComputeSharedMemorySize": 65536, "maxComputeWorkGroupInvocations": 1024,
            "maxComputeWorkGroupSize": [1024, 1024, 64], "maxPushConstantsSize": 256, )" +
                                range + R"("maxPerStageDescriptorStorageBuffers": )" + buffers +
                                R"(, "maxDescriptorSetStorageBuffers": 64,
            "maxBoundDescriptorSets": 8,
            "minStorageBufferOffsetAlignment": )" +
                                std::to_string(limits.storage_alignment) + R"(, "minTexelBufferOffsetAlignment": )" +
                                std::to_string(limits.texel_alignment) + R"(}})" +
                                structures + "}}}}";
    return path;
}

// A device profile (a file in `dir`) whose buffers and allocations hold `bytes`, so no binding can be larger
// either; its other limits at the device's own or the specification's minimum.
inline std::string small_buffer_profile(const TempDir& dir, uint64_t bytes = 4u << 20) {
    return profile_with_limits(dir, {.max_buffer_size = bytes, .max_memory_allocation_size = bytes});
}

}  // namespace vkt
