// The vkconv tool's command line as a unit of its own: the CLI11 app with every subcommand, and the parse
// that picks the action to run. main.cpp parses argv with it and runs the action; the fuzz target
// tests/fuzz/fuzz_cli_args.cpp parses arbitrary arguments with it and never runs one (actions open devices
// and files).
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <ostream>
#include <variant>

#include "commands.hpp"

namespace vkconv_cli {

class CliApp {
public:
    CliApp();
    CliApp(const CliApp&) = delete;
    CliApp& operator=(const CliApp&) = delete;

    // The chosen subcommand's action, or the exit code when there is nothing to run: 0 after printing help
    // on `out`, kBadInput (2) after a message on `err` for bad usage (unknown options, values a check
    // refuses, a missing subcommand). Parse a fresh CliApp each time: CLI11 keeps the parsed values.
    std::variant<Action, int> parse(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

private:
    CLI::App app_;
    std::map<const CLI::App*, Action> actions_;
};

}  // namespace vkconv_cli
