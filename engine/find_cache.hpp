// Algorithm::Auto's measured choices: one entry per (device, pass, options, problem), in memory and, when
// ContextOptions::find_cache_path names a file, on disk.
//
// The file is text, one entry a line after a version header, tab-separated:
//   device  pass  options  problem  algorithm  mec_schedule  ms
// `device` names the device, its PCI ids, driver version and pipeline-cache UUID, so a driver update
// measures again. Lines of other devices are kept as they were when the file is rewritten.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vkconv/find.hpp"

namespace vkconv::detail {

class Device;

struct CachedChoice {
    Algorithm algorithm = Algorithm::Auto;
    MecSchedule mec_schedule = MecSchedule::Auto;
    double ms = 0;
};

class FindCache {
public:
    // Reads `path` when it is non-empty and exists; Error(InvalidArgument) naming the file and line when it
    // cannot be parsed, Error(InvalidArgument) when it exists but cannot be read.
    FindCache(const Device& device, std::string path);

    std::optional<CachedChoice> lookup(Pass pass, const ConvProblem& problem, const ForwardOptions& options) const;
    // Stores the choice, and rewrites the file (if any) whole: written to a temporary beside it, then
    // renamed over it, so a crash never leaves half a file. Error(InvalidArgument) naming the file on failure.
    void store(Pass pass, const ConvProblem& problem, const ForwardOptions& options, const CachedChoice& choice);

    size_t size() const { return entries_.size(); }

private:
    std::string key(Pass pass, const ConvProblem& problem, const ForwardOptions& options) const;
    void save() const;

    std::string device_key_;
    std::string path_;
    std::map<std::string, CachedChoice> entries_;  // this device's, keyed by pass, options and problem
    std::vector<std::string> other_devices_;       // file lines of other devices, written back unchanged
};

}  // namespace vkconv::detail
