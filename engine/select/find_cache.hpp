// Algorithm::Auto's measured choices: one entry per (device, pass, options, problem), in memory and, when
// ContextOptions::find_cache_path names a file, on disk.
//
// The file is text, one entry a line after a version header, tab-separated:
//   device  pass  options  problem  algorithm  variant  ms
// `device` names the device, its PCI ids, driver version, pipeline-cache UUID and binding limits, so a
// driver update (or a context with lowered limits) measures again. Lines of other devices are kept as they were when
// the file is rewritten.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vkconv/find.hpp"

namespace vkconv::detail {

class Device;

struct CachedChoice {
    Algorithm algorithm = Algorithm::Auto;
    std::string variant;  // the algorithm's form ("auto" in the file where empty)
    double ms = 0;
};

// What a cache file holds for one device: its choices, and the lines of every other device.
struct FindCacheContents {
    std::map<std::string, CachedChoice> entries;  // this device's, keyed by pass, options and problem
    std::vector<std::string> other_devices;       // file lines of other devices, written back unchanged
};

// The text of a cache file, as read from `path` (named in messages), for the device whose key is
// `device_key`: Error(InvalidArgument) naming the file and the line when it cannot be parsed.
FindCacheContents parse_find_cache(std::string_view text, const std::string& device_key, const std::string& path);
// The text FindCache writes for these contents; parse_find_cache reads it back to the same choices (times
// to 6 significant digits).
std::string format_find_cache(const std::string& device_key, const FindCacheContents& contents);

class FindCache {
public:
    // Reads `path` when it is non-empty and exists; Error(InvalidArgument) naming the file (and line) when it
    // cannot be parsed or read, or when its folder does not exist or cannot be written.
    FindCache(const Device& device, std::string path);

    std::optional<CachedChoice> lookup(Pass pass, const ConvProblem& problem, const PassOptions& options) const;
    // Stores the choice and rewrites the file (if any) whole: written to a temporary of its own beside it,
    // then renamed over it, so a crash never leaves half a file. On failure, Error(InvalidArgument) naming
    // the file, and the cache is as before. One writer per file at a time: concurrent writers keep the last
    // complete file, not the union.
    void store(Pass pass, const ConvProblem& problem, const PassOptions& options, const CachedChoice& choice);
    // In memory only: a choice that was not measured (nothing verified), so Auto does not measure again.
    void remember(Pass pass, const ConvProblem& problem, const PassOptions& options, const CachedChoice& choice);

    size_t size() const { return file_.entries.size(); }

private:
    std::string key(Pass pass, const ConvProblem& problem, const PassOptions& options) const;
    void save(const FindCacheContents& contents) const;

    std::string device_key_;
    std::string path_;
    FindCacheContents file_;                          // what the file holds (or will, once stored)
    std::map<std::string, CachedChoice> unmeasured_;  // remember(): never written to the file
};

}  // namespace vkconv::detail
