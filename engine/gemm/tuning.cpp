#include "gemm/tuning.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "vkconv/error.hpp"

namespace vkconv::detail {
namespace {

constexpr const char* kHeader = "vkconv-tuning 1";

std::string gemm_key(uint64_t M, uint64_t N, uint64_t K, uint64_t batches) {
    return "gemm " + std::to_string(M) + " " + std::to_string(N) + " " + std::to_string(K) + " " +
           std::to_string(batches);
}

std::string implicit_key(Pass pass, const ConvProblem& problem) {
    return std::string("implicit ") + to_string(pass) + " " + problem.str();
}

}  // namespace

std::string format_tuning(const std::string& device_key, const std::map<std::string, std::string>& entries) {
    std::string text = std::string(kHeader) + "\ndevice\t" + device_key + "\n";
    for (const auto& [key, configuration] : entries) text += key + "\t" + configuration + "\n";
    return text;
}

std::optional<std::map<std::string, std::string>> parse_tuning(std::string_view text, const std::string& device_key,
                                                               std::string& why) {
    std::map<std::string, std::string> entries;
    std::istringstream in{std::string(text)};
    std::string line;
    if (!std::getline(in, line) || line != kHeader) {
        why = "it does not start with \"" + std::string(kHeader) + "\"";
        return std::nullopt;
    }
    if (!std::getline(in, line) || line.rfind("device\t", 0) != 0) {
        why = "its second line names no device";
        return std::nullopt;
    }
    if (line.substr(7) != device_key) {
        why = "it was written for another device or driver (" + line.substr(7) + ")";
        return std::nullopt;
    }
    for (int number = 3; std::getline(in, line); ++number) {
        const size_t tab = line.find('\t');
        const bool known = line.rfind("gemm ", 0) == 0 || line.rfind("implicit ", 0) == 0;
        if (tab == std::string::npos || tab + 1 >= line.size() || !known ||
            line.find('\t', tab + 1) != std::string::npos) {
            why = "line " + std::to_string(number) + " is not \"<kind> <shape>\\t<configuration>\"";
            return std::nullopt;
        }
        entries[line.substr(0, tab)] = line.substr(tab + 1);
    }
    return entries;
}

Tuning::Tuning(std::string device_key, std::string path, std::string& warning)
    : device_key_(std::move(device_key)), path_(std::move(path)) {
    warning.clear();
    if (path_.empty()) return;
    std::ifstream file(path_, std::ios::binary);
    if (!file) return;  // nothing tuned yet
    std::stringstream text;
    text << file.rdbuf();
    std::string why;
    if (auto entries = parse_tuning(text.str(), device_key_, why))
        entries_ = std::move(*entries);
    else
        warning = "tuning file " + path_ + " ignored: " + why;
}

std::optional<std::string> Tuning::gemm(uint64_t M, uint64_t N, uint64_t K, uint64_t batches) const {
    const auto it = entries_.find(gemm_key(M, N, K, batches));
    return it == entries_.end() ? std::nullopt : std::optional<std::string>(it->second);
}

std::optional<std::string> Tuning::implicit(Pass pass, const ConvProblem& problem) const {
    const auto it = entries_.find(implicit_key(pass, problem));
    return it == entries_.end() ? std::nullopt : std::optional<std::string>(it->second);
}

void Tuning::set_gemm(uint64_t M, uint64_t N, uint64_t K, uint64_t batches, const std::string& configuration) {
    entries_[gemm_key(M, N, K, batches)] = configuration;
}

void Tuning::set_implicit(Pass pass, const ConvProblem& problem, const std::string& configuration) {
    entries_[implicit_key(pass, problem)] = configuration;
}

void Tuning::forget_implicit(Pass pass, const ConvProblem& problem) {
    entries_.erase(implicit_key(pass, problem));
}

void Tuning::save() const {
    if (path_.empty())
        throw Error(ErrorCategory::InvalidArgument,
                    "no tuning file: set ContextOptions::tuning_path, VKCONV_TUNING or a pipeline cache file");
    static std::atomic<unsigned> counter{0};
    const std::string temporary =
        path_ + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
    {
        std::ofstream file(temporary, std::ios::trunc);
        file << format_tuning(device_key_, entries_);
        file.flush();
        if (!file) {
            std::remove(temporary.c_str());
            throw Error(ErrorCategory::InvalidArgument, "cannot write the tuning file " + temporary);
        }
    }
    if (std::rename(temporary.c_str(), path_.c_str()) != 0) {
        std::remove(temporary.c_str());
        throw Error(ErrorCategory::InvalidArgument, "cannot replace the tuning file " + path_);
    }
}

}  // namespace vkconv::detail
