// What the CLI test files (test_cli_<command>.cpp) share: the vkconv tool run as a child process
// (posix_spawn, no shell) with validation on, a temporary directory whose name holds a space, the checks of a
// successful run, and small text and .npy helpers. Every child runs with VKCONV_VALIDATION=1, and a successful
// run must not print a validation error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "conv_cases.hpp"
#include "gpu.hpp"
#include "test_util.hpp"

namespace vkt::cli {

// The tool under test: the one built beside this binary, or $VKCONV_CLI (for a copied build run elsewhere).
std::string cli_path();

namespace fs = std::filesystem;
using Args = std::vector<std::string>;

// A fresh directory (its name holds a space, so the CLI must cope with one) removed at scope exit.
struct TempDir : vkt::TempDir {
    TempDir() : vkt::TempDir("vkconv cli test") {}
};

struct Result {
    int code = -1;
    std::string out, err, command;
    std::string describe() const {
        return "command: " + command + "\nexit code: " + std::to_string(code) + "\n--- stdout ---\n" + out +
               "--- stderr ---\n" + err;
    }
};

// Runs the CLI with `args`; stdout and stderr go to files under dir/capture and are read back.
Result run_cli(const TempDir& dir, const Args& args);

// Checks a run's exit code 0, no validation error, and (unless opted out) that validation was on.
void check_success(const Result& r);

std::vector<std::string> lines_of(const std::string& text);

// A version 1.0 .npy file around the header dict `dict` and `data_bytes` zero bytes, padded like numpy.
std::string npy_bytes(const std::string& dict, size_t data_bytes);

// The unsigned integer after "key": in a flat JSON text.
std::optional<uint64_t> json_uint(const std::string& json, const std::string& key);

// `args` followed by `more`.
Args with(Args args, const Args& more);

// A shape as the tool's --input-shape and --weight-shape take it: "1,3,5,5".
std::string shape_arg(const vkconv::Shape& shape);

}  // namespace vkt::cli
