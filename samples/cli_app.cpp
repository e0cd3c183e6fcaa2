// The vkconv tool's CLI11 app: every subcommand registered, and the parse that maps help, bad usage and
// the chosen subcommand to an exit code or an action.
#include "cli_app.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "vkconv/version.hpp"

namespace vkconv_cli {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// The first word of argv that looks like an option the chosen subcommand (or the tool) does not have,
// as a message naming it and the nearest option it does have. CLI11 reports a missing required option
// before an unknown one, which hides a typo ("--inptu" gives "--input is required").
std::optional<std::string> unknown_option(const CLI::App& app, int argc, const char* const* argv) {
    const CLI::App* command = nullptr;
    std::vector<std::string> known;
    for (const CLI::Option* option : app.get_options())
        for (const auto& name : option->get_lnames()) known.push_back("--" + name);
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (!command && word.rfind('-', 0) != 0) {
            for (const CLI::App* sub : app.get_subcommands({}))
                if (sub->get_name() == word) command = sub;
            if (command)
                for (const CLI::Option* option : command->get_options())
                    for (const auto& name : option->get_lnames()) known.push_back("--" + name);
            continue;
        }
        if (word.rfind("--", 0) != 0 || word.size() == 2) continue;
        const std::string name = word.substr(0, word.find('='));
        if (std::find(known.begin(), known.end(), name) != known.end()) continue;
        std::string nearest;
        size_t best = name.size() / 2 + 1;
        for (const auto& candidate : known)
            if (const size_t d = edit_distance(name, candidate); d < best) best = d, nearest = candidate;
        return "unknown option " + name + (command ? " for " + command->get_name() : std::string()) +
               (nearest.empty() ? "" : " (did you mean " + nearest + "?)");
    }
    return std::nullopt;
}

}  // namespace

CliApp::CliApp() : app_("vkconv: 2-D convolution on any Vulkan device (" + algorithm_choices(false) + "), memory-aware") {
    // 0..1 rather than exactly 1, so an unknown word is reported as such rather than as a missing subcommand.
    app_.require_subcommand(0, 1);
    app_.set_version_flag("--version", "vkconv " VKCONV_VERSION_STRING);
    auto add = [&](Action (*make)(CLI::App&)) {
        const size_t before = app_.get_subcommands({}).size();
        auto action = make(app_);
        actions_.emplace(app_.get_subcommands({})[before], std::move(action));
    };
    add(add_devices_command);
    add(add_forward_command);
    add(add_demo_command);
    add(add_backward_data_command);
    add(add_backward_filter_command);
    add(add_conv_transpose_command);
    add(add_bench_command);
    add(add_memory_command);
    add(add_find_command);
    add(add_plan_command);
    add(add_tune_command);
}

std::variant<Action, int> CliApp::parse(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
    try {
        app_.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app_.exit(e, out, err);
    } catch (const CLI::CallForAllHelp& e) {
        return app_.exit(e, out, err);
    } catch (const CLI::CallForVersion& e) {
        return app_.exit(e, out, err);
    } catch (const CLI::ParseError& e) {
        if (const auto unknown = unknown_option(app_, argc, argv)) {
            err << "vkconv: " << *unknown << "\nRun with --help for more information.\n";
            return kBadInput;
        }
        app_.exit(e, out, err);
        return kBadInput;
    }
    for (const auto& [command, action] : actions_)
        if (command->parsed()) return action;
    std::string names;
    const auto commands = app_.get_subcommands({});
    for (size_t i = 0; i < commands.size(); ++i)
        names += (i == 0 ? "" : i + 1 == commands.size() ? " or " : ", ") + commands[i]->get_name();
    err << "vkconv: a subcommand is required (" << names << "); run with --help for more\n";
    return kBadInput;
}

}  // namespace vkconv_cli
