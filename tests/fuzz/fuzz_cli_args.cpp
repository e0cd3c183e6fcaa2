// Fuzz target: the vkconv tool's command-line parsing (samples/cli_app.hpp) on arbitrary arguments. The
// input is split into arguments at every newline or NUL byte and parsed by a fresh CliApp, as the tool
// parses argv. The chosen action is never run: actions open devices and files. Every input must end in an
// action with nothing on stderr, help (exit 0) on stdout, or bad usage (exit 2) with a message on stderr;
// an exception escaping the parse, a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "cli_app.hpp"
#include "cli_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<std::string> args{"vkconv"};
    std::string current;
    for (size_t i = 0; i < size; ++i) {
        const char c = static_cast<char>(data[i]);
        if (c == '\n' || c == '\0') {
            args.push_back(current);
            current.clear();
        } else {
            current += c;
        }
    }
    if (size > 0 && data[size - 1] != '\n' && data[size - 1] != '\0') args.push_back(current);
    std::vector<const char*> argv;
    for (const auto& arg : args) argv.push_back(arg.c_str());

    std::ostringstream out, err;
    vkconv_cli::CliApp app;
    const auto chosen = app.parse(static_cast<int>(argv.size()), argv.data(), out, err);
    if (const int* code = std::get_if<int>(&chosen)) {
        if (*code == 0 && out.str().empty()) std::abort();
        if (*code == vkconv_cli::kBadInput && err.str().empty()) std::abort();
        if (*code != 0 && *code != vkconv_cli::kBadInput) std::abort();
    } else if (!err.str().empty() || !std::get<vkconv_cli::Action>(chosen)) {
        std::abort();
    }
    return 0;
}
