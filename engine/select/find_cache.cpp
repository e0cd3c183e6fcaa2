// Algorithm::Auto's cache of measured choices, in memory and optionally in a file.
#include "select/find_cache.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "conv/algorithm_plan.hpp"
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

// A form as the file writes it: "auto" where the choice names none.
std::string variant_text(const std::string& variant) {
    return variant.empty() ? "auto" : variant;
}

// The form the file names for `algorithm` (any pass's), "auto" for none.
std::string parse_variant(Algorithm algorithm, const std::string& text) {
    if (text == "auto" || algorithm == Algorithm::Auto) return {};  // Auto: refused by the caller
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter})
        for (const std::string& form : algorithm_variants(algorithm, pass))
            if (form == text) return form;
    throw Error(ErrorCategory::InvalidArgument,
                "'" + text + "' is not a form of " + to_string(algorithm) + " (expected auto or one of its forms)");
}

}  // namespace

FindCacheContents parse_find_cache(std::string_view text, const std::string& device_key, const std::string& path) {
    FindCacheContents contents;
    size_t number = 0;
    auto bad = [&](const std::string& why) {
        return Error(ErrorCategory::InvalidArgument,
                     "find cache " + path + " line " + std::to_string(number) + ": " + why);
    };
    // Lines as std::getline reads them: a last line without its newline still counts.
    for (size_t start = 0; start < text.size();) {
        const size_t newline = std::min(text.find('\n', start), text.size());
        const std::string line(text.substr(start, newline - start));
        start = newline + 1;
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
            choice.variant = parse_variant(choice.algorithm, fields[5]);
            size_t used = 0;
            choice.ms = std::stod(fields[6], &used);
            if (used != fields[6].size() || !(choice.ms >= 0)) throw std::invalid_argument("ms");
        } catch (const Error& e) {
            throw bad(e.what());
        } catch (const std::exception&) {
            throw bad("the time '" + fields[6] + "' is not a non-negative number");
        }
        if (choice.algorithm == Algorithm::Auto) throw bad("a cached algorithm cannot be auto");
        if (fields[0] == device_key)
            contents.entries[fields[1] + '\t' + fields[2] + '\t' + fields[3]] = choice;
        else
            contents.other_devices.push_back(line);
    }
    if (number == 0) throw bad("the file is empty (expected the header '" + std::string(kHeader) + "')");
    return contents;
}

std::string format_find_cache(const std::string& device_key, const FindCacheContents& contents) {
    std::ostringstream file;
    file << kHeader << '\n';
    for (const auto& line : contents.other_devices) file << line << '\n';
    for (const auto& [key, choice] : contents.entries) {
        std::ostringstream ms;
        ms.precision(6);
        ms << choice.ms;
        file << device_key << '\t' << key << '\t' << to_string(choice.algorithm) << '\t'
             << variant_text(choice.variant) << '\t' << ms.str() << '\n';
    }
    return file.str();
}

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
    std::ifstream file(path_, std::ios::binary);
    if (!file) {
        if (std::FILE* probe = std::fopen(path_.c_str(), "r")) {  // exists but unreadable
            std::fclose(probe);
            throw Error(ErrorCategory::InvalidArgument, "cannot read the find cache " + path_);
        }
        return;  // not there yet: the first measurement creates it
    }
    std::ostringstream text;
    text << file.rdbuf();
    if (file.bad()) throw Error(ErrorCategory::InvalidArgument, "cannot read the find cache " + path_);
    file_ = parse_find_cache(text.str(), device_key_, path_);
}

std::string FindCache::key(Pass pass, const ConvProblem& problem, const PassOptions& options) const {
    // Every option that changes which algorithms fit or how they run; auto_choice and find_repeats do not.
    const std::string opts = "limit=" + std::to_string(options.workspace_limit) +
                             " binding=" + std::to_string(options.max_binding_bytes) +
                             " schedule=" + variant_text(options.variant);
    return std::string(to_string(pass)) + '\t' + opts + '\t' + problem.str();
}

std::optional<CachedChoice> FindCache::lookup(Pass pass, const ConvProblem& problem, const PassOptions& options) const {
    const std::string k = key(pass, problem, options);
    if (const auto found = file_.entries.find(k); found != file_.entries.end()) return found->second;
    if (const auto found = unmeasured_.find(k); found != unmeasured_.end()) return found->second;
    return std::nullopt;
}

void FindCache::store(Pass pass, const ConvProblem& problem, const PassOptions& options, const CachedChoice& choice) {
    FindCacheContents contents = file_;
    contents.entries[key(pass, problem, options)] = choice;
    if (!path_.empty()) save(contents);  // throws before anything changes
    file_ = std::move(contents);
}

void FindCache::remember(Pass pass, const ConvProblem& problem, const PassOptions& options,
                         const CachedChoice& choice) {
    unmeasured_[key(pass, problem, options)] = choice;
}

void FindCache::save(const FindCacheContents& contents) const {
    static std::atomic<unsigned> counter{0};
    const std::string temporary =
        path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    {
        std::ofstream file(temporary, std::ios::trunc);
        file << format_find_cache(device_key_, contents);
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
