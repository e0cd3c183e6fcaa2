// vkconv — command-line front end of the library: list devices, run a convolution on .npy files, demo.
#include <cstdio>
#include <map>

#include "cli_common.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
    CLI::App app{"vkconv: 2-D convolution on any Vulkan device (MEC / im2col / direct), memory-aware"};
    // 0..1 rather than exactly 1, so an unknown word is reported as such rather than as a missing subcommand.
    app.require_subcommand(0, 1);
    std::map<const CLI::App*, vkconv_cli::Action> actions;
    auto add = [&](vkconv_cli::Action (*make)(CLI::App&)) {
        const size_t before = app.get_subcommands({}).size();
        auto action = make(app);
        actions.emplace(app.get_subcommands({})[before], std::move(action));
    };
    add(vkconv_cli::add_devices_command);
    add(vkconv_cli::add_forward_command);
    add(vkconv_cli::add_demo_command);
    add(vkconv_cli::add_backward_data_command);
    add(vkconv_cli::add_backward_filter_command);
    add(vkconv_cli::add_bench_command);
    add(vkconv_cli::add_memory_command);
    add(vkconv_cli::add_find_command);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return vkconv_cli::kBadInput;
    }
    for (const auto& [command, action] : actions)
        if (command->parsed()) return vkconv_cli::run_guarded(action);
    std::fprintf(stderr,
                 "vkconv: a subcommand is required (devices, forward, backward-data, backward-filter, demo or bench); "
                 "run with --help for more\n");
    return vkconv_cli::kBadInput;
}
