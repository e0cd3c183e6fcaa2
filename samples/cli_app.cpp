// The vkconv tool's CLI11 app: every subcommand registered, and the parse that maps help, bad usage and
// the chosen subcommand to an exit code or an action.
#include "cli_app.hpp"

#include "cli_common.hpp"
#include "vkconv/version.hpp"

namespace vkconv_cli {

CliApp::CliApp() : app_("vkconv: 2-D convolution on any Vulkan device (MEC / im2col / direct), memory-aware") {
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
        app_.exit(e, out, err);
        return kBadInput;
    }
    for (const auto& [command, action] : actions_)
        if (command->parsed()) return action;
    err << "vkconv: a subcommand is required (devices, forward, backward-data, backward-filter, demo or bench); "
           "run with --help for more\n";
    return kBadInput;
}

}  // namespace vkconv_cli
