// Algorithm::Auto's cache of measured choices, in memory and optionally in a file.
#include "select/find_cache.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "vulkan/device.hpp"

namespace vkconv::detail {
namespace {

constexpr const char* kHeader = "vkconv-find-cache 1";

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> fields;
    size_t start = 0;
    for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
        fields.push_back(line.substr(start, tab - start));
    fields.push_back(line.substr(start));
    return fields;
}

std::string device_key_of(const Device& device) {
    const VkPhysicalDeviceProperties& props = device.properties();
    char ids[128];
    // The binding limits as this context sees them (ContextOptions can lower them): choices depend on them.
    std::snprintf(ids, sizeof ids, " [%04x:%04x driver %u range %u texels %u] ", props.vendorID, props.deviceID,
                  props.driverVersion, props.limits.maxStorageBufferRange, props.limits.maxTexelBufferElements);
    std::string key = std::string(props.deviceName) + ids;
    for (uint8_t byte : props.pipelineCacheUUID) {
        char hex[3];
        std::snprintf(hex, sizeof hex, "%02x", byte);
        key += hex;
    }
    for (char& c : key)
        if (c == '\t' || c == '\n') c = ' ';
    return key;
}

MecSchedule parse_schedule(const std::string& text) {
    for (MecSchedule s : {MecSchedule::Auto, MecSchedule::A, MecSchedule::B})
        if (text == to_string(s)) return s;
    throw Error(ErrorCategory::InvalidArgument, "unknown MEC schedule '" + text + "'");
}

}  // namespace

FindCache::FindCache(const Device& device, std::string path)
    : device_key_(device_key_of(device)), path_(std::move(path)) {
    if (path_.empty()) return;
    {
        namespace fs = std::filesystem;
        std::error_code ec;
        fs::path folder = fs::path(path_).parent_path();
        if (folder.empty()) folder = ".";
        if (!fs::is_directory(folder, ec) || ::access(folder.c_str(), W_OK) != 0)
            throw Error(ErrorCategory::InvalidArgument,
                        "find cache " + path_ + ": folder '" + folder.string() + "' does not exist or is not writable");
    }
    std::ifstream file(path_);
    if (!file) {
        if (std::FILE* probe = std::fopen(path_.c_str(), "r")) {  // exists but unreadable
            std::fclose(probe);
            throw Error(ErrorCategory::InvalidArgument, "cannot read the find cache " + path_);
        }
        return;  // not there yet: the first measurement creates it
    }
    std::string line;
    size_t number = 0;
    auto bad = [&](const std::string& why) {
        return Error(ErrorCategory::InvalidArgument,
                     "find cache " + path_ + " line " + std::to_string(number) + ": " + why);
    };
    while (std::getline(file, line)) {
        ++number;
        if (number == 1) {
            if (line != kHeader) throw bad("expected the header '" + std::string(kHeader) + "'");
            continue;
        }
        if (line.empty()) continue;
        const auto fields = split_tabs(line);
        if (fields.size() != 7) throw bad("expected 7 tab-separated fields, found " + std::to_string(fields.size()));
        CachedChoice choice;
        try {
            parse_pass(fields[1]);
            choice.algorithm = parse_algorithm(fields[4]);
            choice.mec_schedule = parse_schedule(fields[5]);
            size_t used = 0;
            choice.ms = std::stod(fields[6], &used);
            if (used != fields[6].size() || !(choice.ms >= 0)) throw std::invalid_argument("ms");
        } catch (const Error& e) {
            throw bad(e.what());
        } catch (const std::exception&) {
            throw bad("the time '" + fields[6] + "' is not a non-negative number");
        }
        if (choice.algorithm == Algorithm::Auto) throw bad("a cached algorithm cannot be auto");
        if (fields[0] == device_key_)
            entries_[fields[1] + '\t' + fields[2] + '\t' + fields[3]] = choice;
        else
            other_devices_.push_back(line);
    }
    if (number == 0) throw bad("the file is empty (expected the header '" + std::string(kHeader) + "')");
}

std::string FindCache::key(Pass pass, const ConvProblem& problem, const PassOptions& options) const {
    // Every option that changes which algorithms fit or how they run; auto_choice and find_repeats do not.
    const std::string opts = "limit=" + std::to_string(options.workspace_limit) +
                             " binding=" + std::to_string(options.max_binding_bytes) +
                             " schedule=" + to_string(options.mec_schedule);
    return std::string(to_string(pass)) + '\t' + opts + '\t' + problem.str();
}

std::optional<CachedChoice> FindCache::lookup(Pass pass, const ConvProblem& problem, const PassOptions& options) const {
    const std::string k = key(pass, problem, options);
    if (const auto found = entries_.find(k); found != entries_.end()) return found->second;
    if (const auto found = unmeasured_.find(k); found != unmeasured_.end()) return found->second;
    return std::nullopt;
}

void FindCache::store(Pass pass, const ConvProblem& problem, const PassOptions& options, const CachedChoice& choice) {
    auto entries = entries_;
    entries[key(pass, problem, options)] = choice;
    if (!path_.empty()) save(entries);  // throws before anything changes
    entries_ = std::move(entries);
}

void FindCache::remember(Pass pass, const ConvProblem& problem, const PassOptions& options,
                         const CachedChoice& choice) {
    unmeasured_[key(pass, problem, options)] = choice;
}

void FindCache::save(const std::map<std::string, CachedChoice>& entries) const {
    static std::atomic<unsigned> counter{0};
    const std::string temporary =
        path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    {
        std::ofstream file(temporary, std::ios::trunc);
        file << kHeader << '\n';
        for (const auto& line : other_devices_) file << line << '\n';
        for (const auto& [key, choice] : entries) {
            std::ostringstream ms;
            ms.precision(6);
            ms << choice.ms;
            file << device_key_ << '\t' << key << '\t' << to_string(choice.algorithm) << '\t'
                 << to_string(choice.mec_schedule) << '\t' << ms.str() << '\n';
        }
        file.flush();
        if (!file) {
            std::remove(temporary.c_str());
            throw Error(ErrorCategory::InvalidArgument, "cannot write the find cache " + temporary);
        }
    }
    if (std::rename(temporary.c_str(), path_.c_str()) != 0) {
        std::remove(temporary.c_str());
        throw Error(ErrorCategory::InvalidArgument, "cannot replace the find cache " + path_);
    }
}

}  // namespace vkconv::detail
