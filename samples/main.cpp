// vkconv — command-line front end of the library: list devices, run a convolution on .npy files, demo.
// The command line itself is cli_app.cpp's; this runs what it chose.
#include <iostream>
#include <variant>

#include "cli_app.hpp"
#include "cli_common.hpp"

int main(int argc, char** argv) {
    vkconv_cli::CliApp app;
    const auto chosen = app.parse(argc, argv, std::cout, std::cerr);
    if (const int* exit_code = std::get_if<int>(&chosen)) return *exit_code;
    return vkconv_cli::run_guarded(std::get<vkconv_cli::Action>(chosen));
}
