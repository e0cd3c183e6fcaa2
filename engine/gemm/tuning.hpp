// The winners `vkconv tune` measured on one device: for a GEMM shape (M, N, K, batch entries) the tile
// configuration that ran it fastest, and for a convolution pass the implicit-GEMM configuration. The GEMM
// and implicit GEMM take a stored winner over their own choice (choose_gemm_config, implicit_pass.cpp).
//
// The file is text: a version header, the device's key (device_key_of: name, PCI ids, driver version,
// limits, pipeline-cache UUID, as the pipeline cache is keyed), then one winner a line, tab-separated:
//   vkconv-tuning 1
//   device  <key>
//   gemm <M> <N> <K> <batches>  <configuration>
//   implicit <pass> <problem>  <configuration>
// A file written for another device, of another version, or that cannot be parsed is ignored as a whole,
// with a warning naming why: tuning is an optimisation, never a reason to fail. save() rewrites it whole
// (a temporary beside it, then a rename).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "vkconv/device.hpp"
#include "vkconv/problem.hpp"

namespace vkconv::detail {

class Tuning {
public:
    Tuning() = default;
    // Reads `path` (empty: no file; a missing file: nothing yet) for the device `device_key`; a file it
    // cannot use is ignored and `warning` says why (empty otherwise).
    Tuning(std::string device_key, std::string path, std::string& warning);

    std::optional<std::string> gemm(uint64_t M, uint64_t N, uint64_t K, uint64_t batches) const;
    std::optional<std::string> implicit(Pass pass, const ConvProblem& problem) const;
    void set_gemm(uint64_t M, uint64_t N, uint64_t K, uint64_t batches, const std::string& configuration);
    void set_implicit(Pass pass, const ConvProblem& problem, const std::string& configuration);
    void forget_implicit(Pass pass, const ConvProblem& problem);

    // Writes the file; Error(InvalidArgument) naming it when there is none or it cannot be written.
    void save() const;
    const std::string& path() const { return path_; }
    size_t size() const { return entries_.size(); }

private:
    std::string device_key_, path_;
    std::map<std::string, std::string> entries_;  // key -> configuration
};

// The tuning text for `device_key` and these winners, and its reader: the winners, or why it cannot be used.
std::string format_tuning(const std::string& device_key, const std::map<std::string, std::string>& entries);
std::optional<std::map<std::string, std::string>> parse_tuning(std::string_view text, const std::string& device_key,
                                                               std::string& why);

}  // namespace vkconv::detail
