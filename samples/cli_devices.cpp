// vkconv devices: one line per Vulkan device; '*' marks the one a plain Context would pick. With --json,
// one JSON array of the same facts field by field, for scripts (the GPU report reads it).
#include <cstdio>
#include <cstdlib>

#include "cli_common.hpp"
#include "commands.hpp"

namespace vkconv_cli {
namespace {

std::string device_json(const vkconv::DeviceInfo& d, bool chosen) {
    const std::string counts = "[" + std::to_string(d.max_workgroup_count[0]) + "," +
                               std::to_string(d.max_workgroup_count[1]) + "," +
                               std::to_string(d.max_workgroup_count[2]) + "]";
    JsonObject o;
    o.add("index", static_cast<uint64_t>(d.index)).add("default", chosen).add("name", d.name).add("type", d.type);
    o.add("driver", d.driver).add("api_version", d.api_version);
    o.add("subgroup_size", static_cast<uint64_t>(d.subgroup_size));
    o.add("compute_units", static_cast<uint64_t>(d.compute_units)).add("compute_units_source", d.compute_units_source);
    o.add("shared_memory_bytes", static_cast<uint64_t>(d.shared_memory_bytes));
    o.add("max_storage_buffer_range", d.max_storage_buffer_range).add("max_buffer_bytes", d.max_buffer_bytes);
    o.add("max_workgroup_invocations", static_cast<uint64_t>(d.max_workgroup_invocations));
    o.add_raw("max_workgroup_count", counts);
    o.add("max_push_constants_bytes", static_cast<uint64_t>(d.max_push_constants_bytes));
    o.add("max_texel_buffer_elements", d.max_texel_buffer_elements);
    o.add("fp16", d.fp16).add("storage_16bit", d.storage_16bit).add("timestamps", d.timestamps);
    o.add("summary", d.summary());
    return o.str();
}

}  // namespace

Action add_devices_command(CLI::App& root) {
    auto* command = root.add_subcommand("devices", "list the Vulkan devices with their limits");
    auto json = std::make_shared<bool>(false);
    command->add_flag("--json", *json, "print one JSON array, a field per limit, instead of the lines");
    return [json] {
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
        if (*json) {
            std::string list;
            for (const auto& d : devices) list += (list.empty() ? "[\n  " : ",\n  ") + device_json(d, d.index == chosen);
            std::printf("%s\n]\n", list.c_str());
            return kSuccess;
        }
        for (const auto& d : devices) std::printf("%s %s\n", d.index == chosen ? "*" : " ", d.summary().c_str());
        return kSuccess;
    };
}

}  // namespace vkconv_cli
