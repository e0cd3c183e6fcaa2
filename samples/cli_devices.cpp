// vkconv devices: one line per Vulkan device; '*' marks the one a plain Context would pick.
#include <cstdio>
#include <cstdlib>

#include "cli_common.hpp"
#include "commands.hpp"

namespace vkconv_cli {

Action add_devices_command(CLI::App& root) {
    auto* command = root.add_subcommand("devices", "list the Vulkan devices with their limits");
    return [command] {
        (void)command;
        const auto devices = vkconv::list_devices();
        if (devices.empty())
            throw vkconv::Error(vkconv::ErrorCategory::Unsupported,
                                "no Vulkan device found (check VK_DRIVER_FILES / VK_ICD_FILENAMES)");
        // The default device is whatever a Context picks: ask one, so the mark cannot disagree with it.
        uint32_t chosen = UINT32_MAX;
        try {
            chosen = vkconv::Context().device().index;
        } catch (const vkconv::Error& e) {
            std::fprintf(stderr, "vkconv: note: cannot open the default device: %s\n", e.what());
        }
        for (const auto& d : devices) std::printf("%s %s\n", d.index == chosen ? "*" : " ", d.summary().c_str());
        return kSuccess;
    };
}

}  // namespace vkconv_cli
