// The subcommands of the vkconv tool. Each registers its options on `root` and returns the action to run
// when it was the chosen subcommand.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace vkconv_cli {

using Action = std::function<int()>;

Action add_devices_command(CLI::App& root);
Action add_forward_command(CLI::App& root);
Action add_demo_command(CLI::App& root);
Action add_bench_command(CLI::App& root);
Action add_memory_command(CLI::App& root);
Action add_find_command(CLI::App& root);
Action add_plan_command(CLI::App& root);
Action add_tune_command(CLI::App& root);
Action add_backward_data_command(CLI::App& root);
Action add_backward_filter_command(CLI::App& root);
Action add_conv_transpose_command(CLI::App& root);

}  // namespace vkconv_cli
