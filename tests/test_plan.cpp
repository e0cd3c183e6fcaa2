// Plans and device models: the profiles shipped with vkconv and what a profile leaves out; a plan for the
// present device lists exactly what a pass then runs; and the fill targets a plan for an NVIDIA H100 must
// meet on every layer of the benchmark table, checked here on any machine (no GPU needed).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "conv_cases.hpp"
#include "layers.hpp"
#include "test_util.hpp"

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::DeviceProfile;
using vkconv::Layout;
using vkconv::Pass;

namespace {

std::string temp_file(const std::string& name, const std::string& text) {
    const std::string path = "/tmp/vkconv_test_" + std::to_string(::getpid()) + "_" + name;
    std::ofstream(path) << text;
    return path;
}

bool depthwise_layer(const ConvProblem& p) {
    return vkconv::algorithm_applies(Algorithm::Depthwise, p, vkconv::Pass::Forward);
}

}  // namespace

TEST_CASE("shipped device profiles describe their devices", "[plan]") {
    const auto names = vkconv::device_profile_names();
    REQUIRE(names.size() >= 4);
    REQUIRE(std::count(names.begin(), names.end(), "nvidia-h100") == 1);
    const DeviceProfile h100 = DeviceProfile::load("nvidia-h100");
    CHECK(h100.info().compute_units == 132);
    CHECK(h100.info().compute_units_source == "VK_NV_shader_sm_builtins");
    CHECK(h100.info().subgroup_size == 32);
    CHECK(h100.info().shared_memory_bytes == 49152);
    CHECK(h100.info().max_workgroup_invocations == 1024);
    CHECK(h100.info().type == "discrete GPU");
    // vulkan-minimum describes no device: the limits every Vulkan 1.1 device reaches, to impose on one.
    REQUIRE(std::count(names.begin(), names.end(), "vulkan-minimum") == 1);
    const DeviceProfile minimum = DeviceProfile::load("vulkan-minimum");
    CHECK(minimum.info().shared_memory_bytes == 16384);
    CHECK(minimum.info().max_workgroup_invocations == 128);
    CHECK(minimum.info().max_storage_buffer_range == (1u << 27));
    CHECK(minimum.info().max_texel_buffer_elements == 65536);
    CHECK(minimum.info().max_push_constants_bytes == 128);
    CHECK(minimum.info().max_buffer_bytes == (1ull << 30));
    CHECK(h100.info().max_buffer_bytes == 80ull << 30);
    for (const auto& name : names) {
        if (name == "vulkan-minimum") continue;
        INFO(name);
        const DeviceProfile profile = DeviceProfile::load(name);
        CHECK(profile.info().compute_units > 0);
        CHECK(profile.info().compute_units_source.find("fallback") == std::string::npos);
        CHECK(profile.info().subgroup_size >= 4);
        CHECK(profile.info().shared_memory_bytes >= 16384);
    }
}

TEST_CASE("a profile's missing limits take the specification's minimum, and bad profiles are refused", "[plan]") {
    const std::string minimal = temp_file("minimal.json", R"({"capabilities": {"device": {"properties": {
        "VkPhysicalDeviceProperties": {"deviceName": "Tiny", "deviceType": "VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU",
                                       "limits": {"maxComputeSharedMemorySize": 32768}}}}}})");
    const DeviceProfile tiny = DeviceProfile::load(minimal);
    CHECK(tiny.info().name == "Tiny");
    CHECK(tiny.info().shared_memory_bytes == 32768);
    CHECK(tiny.info().max_workgroup_invocations == 128);
    CHECK(tiny.info().max_storage_buffer_range == (1u << 27));
    CHECK(tiny.info().max_texel_buffer_elements == 65536);
    CHECK(tiny.info().max_workgroup_count == std::array<uint32_t, 3>{65535, 65535, 65535});
    CHECK(tiny.info().subgroup_size == 1);
    CHECK(tiny.info().compute_units == 16);
    CHECK(tiny.info().compute_units_source == "fallback by device type");
    // Even a device at the spec's minimums plans every pass of a real layer.
    const ConvProblem p = vkt::problem().batch(2).channels(8).image(9, 9).filters(16).kernel(3, 3);
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
        const auto plan = vkconv::plan_pass(tiny, p, pass);
        CHECK_FALSE(plan.dispatches.empty());
        for (const auto& d : plan.dispatches) CHECK(d.invocations_per_workgroup <= 128);
    }

    const std::string own = temp_file("own.json", R"({"capabilities": {"device": {"properties": {}}},
        "vkconv": {"compute_units": 24, "compute_units_source": "a data sheet"}})");
    CHECK(DeviceProfile::load(own).info().compute_units == 24);
    CHECK(DeviceProfile::load(own).info().compute_units_source == "profile: a data sheet");

    auto refused = [](const std::string& path, const std::string& words) {
        INFO(path);
        try {
            (void)DeviceProfile::load(path);
            FAIL("loaded");
        } catch (const vkconv::Error& e) {
            CHECK(e.category() == vkconv::ErrorCategory::InvalidArgument);
            CHECK_THAT(e.what(), Catch::Contains(words));
        }
    };
    refused("no-such-profile", "neither a shipped profile");
    refused(temp_file("broken.json", "{\"capabilities\": "), "not valid JSON");
    refused(temp_file("array.json", "[1, 2]"), "not a JSON object");
    refused(temp_file("other.json", "{\"layers\": {}}"), "no \"capabilities\"");
    refused(temp_file("negative.json", R"({"capabilities": {"d": {"properties": {"VkPhysicalDeviceProperties":
        {"limits": {"maxComputeSharedMemorySize": -1}}}}}})"),
            "maxComputeSharedMemorySize is not a non-negative integer");
    refused(temp_file("type.json", R"({"capabilities": {"d": {"properties": {"VkPhysicalDeviceProperties":
        {"deviceType": "VK_PHYSICAL_DEVICE_TYPE_TOASTER"}}}}})"),
            "deviceType");
    refused(temp_file("count.json", R"({"capabilities": {"d": {"properties": {"VkPhysicalDeviceProperties":
        {"limits": {"maxComputeWorkGroupCount": [1, 2]}}}}}})"),
            "maxComputeWorkGroupCount is not an array of 3 numbers");
    // Limits no Vulkan device has: a planner would divide by them or step by them.
    refused(temp_file("zero.json", R"({"capabilities": {"d": {"properties": {"VkPhysicalDeviceProperties":
        {"limits": {"maxComputeWorkGroupCount": [65535, 0, 65535]}}}}}})"),
            "maxComputeWorkGroupCount = 0 is below the Vulkan specification's required minimum of 65535");
    refused(temp_file("align.json", R"({"capabilities": {"d": {"properties": {"VkPhysicalDeviceProperties":
        {"limits": {"minStorageBufferOffsetAlignment": 48}}}}}})"),
            "minStorageBufferOffsetAlignment = 48 is not a power of two");
    refused(temp_file("wrongtype.json", R"({"capabilities": {"d": {"properties": {"VkPhysicalDeviceDriverProperties":
        {"driverName": 7}}}}})"),
            "device profile");
}

TEST_CASE("a plan for the present device lists exactly what the pass runs", "[plan][gpu]") {
    auto* ctx = vkt::shared_context();
    if (!ctx) return;
    const DeviceProfile here = DeviceProfile::of(*ctx);
    CHECK(here.info().name == ctx->device().name);
    CHECK(here.info().compute_units == ctx->device().compute_units);
    CHECK(here.info().compute_units > 0);
    const std::vector<ConvProblem> problems = {
        vkt::problem().batch(3).channels(5).image(11, 13).filters(7).kernel(3, 3).stride(2, 1).pad(0, 1).bias(),
        vkt::problem().batch(3).channels(5).image(11, 13).filters(7).kernel(3, 3).stride(2, 1).pad(0, 1).bias().layout(
            Layout::NHWC),
        vkt::problem().batch(2).channels(8).image(9, 9).depthwise().kernel(3, 3).pad(1).layout(Layout::NHWC),
        vkt::problem().batch(2).channels(6).image(10, 7).filters(4).kernel(2, 3).groups(2).dilation(2, 1)};
    uint32_t seed = 900;
    for (const ConvProblem& p : problems)
        for (Algorithm a : vkt::algorithms_for(p)) {
            vkt::BackwardCheck check(*ctx, p, seed++, {.bias_always = false});
            for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
                INFO(p.str() << " " << vkconv::to_string(pass) << " " << vkconv::to_string(a));
                const auto plan = vkconv::plan_pass(here, p, pass, a);
                CHECK(plan.algorithm == a);
                const vkconv::RunStats run = pass == Pass::Forward       ? vkt::check_forward(*ctx, p, a, seed++)
                                             : pass == Pass::BackwardData ? check.data(a).stats
                                                                          : check.filter(a).stats;
                CHECK(plan.dispatches.size() == run.dispatches);
                CHECK(plan.workspace_bytes == run.workspace_bytes);
                // Every dispatch of a convolution's main kernel computes FLOPs; all of them add up to at
                // least the problem's (lowerings add nothing, split sums add their additions).
                uint64_t flops = 0;
                for (const auto& d : plan.dispatches) flops += d.flops;
                const uint64_t macs = uint64_t(p.N * p.K * p.P() * p.Q() * p.channels_per_group() * p.R * p.S);
                CHECK(flops >= 2 * macs);
            }
        }
}

// The fill targets: planned for an NVIDIA H100 at batch 32, the dispatch that carries most of a pass's FLOPs
// launches at least 2 workgroups per SM, and a memory-bound depthwise pass at least 1,024 invocations per
// SM. Checked for the plan auto makes and for implicit-gemm's. The table printed says where each layer stands.
TEST_CASE("plans for an NVIDIA H100 fill it on every layer of the benchmark table", "[plan]") {
    const DeviceProfile h100 = DeviceProfile::load("nvidia-h100");
    const uint64_t sms = h100.info().compute_units;
    const auto layers = vkconv_cli::parse_layers(vkconv_cli::builtin_layers_csv(), "layers.csv");
    std::printf("%-18s %-6s %-16s %-13s %-20s %10s %8s %12s %10s\n", "layer", "layout", "pass", "algorithm",
                "main dispatch", "workgroups", "wg/SM", "inv/SM", "serial");
    for (const auto& layer : layers)
        for (Layout layout : {Layout::NCHW, Layout::NHWC})
            for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter})
                for (Algorithm algorithm : {Algorithm::Auto, Algorithm::ImplicitGemm}) {
                ConvProblem p = layer.problem;
                p.N = 32;
                p.layout = layout;
                // The plan auto would run, and implicit-gemm's (the GEMM that stores no lowered matrix).
                if (algorithm == Algorithm::ImplicitGemm && depthwise_layer(p)) continue;
                const auto plan = vkconv::plan_pass(h100, p, pass, algorithm);
                const auto* main = plan.main_dispatch();
                REQUIRE(main);
                const double per_sm = double(main->workgroups) / double(sms);
                const double invocations = double(main->workgroups) * main->invocations_per_workgroup / double(sms);
                std::printf("%-18s %-6s %-16s %-13s %-20s %10llu %8.1f %12.0f %10llu\n", layer.name.c_str(),
                            layout == Layout::NCHW ? "nchw" : "nhwc", vkconv::to_string(pass),
                            vkconv::to_string(plan.algorithm), main->name.substr(0, 20).c_str(),
                            static_cast<unsigned long long>(main->workgroups), per_sm, invocations,
                            static_cast<unsigned long long>(main->serial_macs_per_invocation));
                INFO(layer.name << " " << (layout == Layout::NCHW ? "nchw" : "nhwc") << " " << vkconv::to_string(pass)
                                << " " << vkconv::to_string(plan.algorithm) << " " << main->name);
                CHECK(per_sm >= 2.0);
                if (depthwise_layer(p)) CHECK(invocations >= 1024.0);
            }
    const auto gemm = vkconv::plan_gemm(h100, 49, 512, 4608);
    const auto* main = gemm.main_dispatch();
    REQUIRE(main);
    std::printf("gemm 49x512x4608: %s, %llu workgroups (%.1f per SM), %llu serial MACs\n", main->name.c_str(),
                static_cast<unsigned long long>(main->workgroups), double(main->workgroups) / double(sms),
                static_cast<unsigned long long>(main->serial_macs_per_invocation));
    CHECK(double(main->workgroups) / double(sms) >= 2.0);
}
