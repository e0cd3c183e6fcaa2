// `vkconv plan`: an H100's plan (or a profile file's) printed as text and JSON without a device, and bad
// input refused with exit 2.
#include <cstdlib>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_support.hpp"

using namespace vkt::cli;

TEST_CASE("cli: plan prints an H100's plan without a device, as text and JSON", "[cli]") {
    TempDir dir;
    // A described device needs no Vulkan: the tool must not even look for one.
    ::setenv("VK_DRIVER_FILES", "/nonexistent/icd.json", 1);
    auto r = run_cli(dir, {"plan", "--layer", "separable_dw_256", "--batch", "32", "--pass", "backward-filter",
                           "--layout", "nhwc", "--device-profile", "nvidia-h100", "--json"});
    ::unsetenv("VK_DRIVER_FILES");
    INFO(r.describe());
    REQUIRE(r.code == 0);
    for (const char* field : {"\"device\": \"NVIDIA H100 80GB HBM3\"", "\"compute_units\": 132", "\"algorithm\": \"depthwise\"",
                              "\"workspace_bytes\": ", "\"dispatches\": [", "\"workgroups\": ",
                              "\"invocations_per_workgroup\": ", "\"serial_macs_per_invocation\": ", "\"flops\": "})
        CHECK_THAT(r.out, Catch::Contains(field));
    r = run_cli(dir, {"plan", "--gemm", "49,512,4608", "--device-profile", "nvidia-h100"});
    INFO(r.describe());
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("splitk_reduce"));  // 32 tiles cannot fill 132 SMs: split along K
    // A problem by shape, as forward takes it, for a profile file of one's own.
    const std::string profile = dir.file("my device.json");
    std::ofstream(profile) << R"({"capabilities": {"device": {"properties": {"VkPhysicalDeviceProperties":
        {"deviceName": "My GPU", "deviceType": "VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU",
         "limits": {"maxPerStageDescriptorStorageBuffers": 16}}}}},
        "vkconv": {"compute_units": 40, "compute_units_source": "data sheet"}})";
    r = run_cli(dir, {"plan", "--input-shape", "8,16,20,20", "--filter-shape", "32,16,3,3", "--padding", "1",
                      "--pass", "forward", "--algo", "implicit-gemm", "--device-profile", profile});
    INFO(r.describe());
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("My GPU, 40 compute units (profile: data sheet)"));
    CHECK_THAT(r.out, Catch::Contains("implicit_gemm"));
    // Without the descriptor count, the profile's device has the specification's 4 storage buffers per
    // stage: implicit GEMM plans its 4-binding kernel.
    std::ofstream(profile) << R"({"capabilities": {"device": {"properties": {"VkPhysicalDeviceProperties":
        {"deviceName": "My GPU", "deviceType": "VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU"}}}}})";
    r = run_cli(dir, {"plan", "--input-shape", "8,16,20,20", "--filter-shape", "32,16,3,3", "--padding", "1",
                      "--pass", "forward", "--algo", "implicit-gemm", "--device-profile", profile});
    INFO(r.describe());
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("implicit_gemm_4_t"));
    // --dtype plans the problem in that type: an f16 forward over 18,432 taps adds its pieces in an fp32 copy,
    // rounded into y by a copy; in f32 the pieces add into y itself.
    const Args deep = {"plan", "--input-shape", "2,2048,8,8", "--filter-shape", "8,2048,3,3", "--padding", "1",
                       "--algo", "implicit-gemm", "--device-profile", "nvidia-h100", "--dtype"};
    for (const char* type : {"f16", "f32"}) {
        Args args = deep;
        args.push_back(type);
        r = run_cli(dir, args);
        INFO(r.describe());
        REQUIRE(r.code == 0);
        CHECK((r.out.find("copy_box") != std::string::npos) == (std::string(type) == "f16"));
        CHECK((r.out.find("workspace 0 bytes") != std::string::npos) == (std::string(type) == "f32"));
    }
}

TEST_CASE("cli: plan refuses bad input with exit 2", "[cli]") {
    TempDir dir;
    const std::vector<std::pair<Args, std::string>> cases = {
        {{"plan", "--device-profile", "nvidia-h100"}, "exactly one of"},
        {{"plan", "--layer", "cv1", "--gemm", "1,2,3", "--device-profile", "nvidia-h100"}, "exactly one of"},
        {{"plan", "--layer", "no_such_layer", "--device-profile", "nvidia-h100"}, "no_such_layer"},
        {{"plan", "--layer", "cv1", "--device-profile", "no-such-gpu"}, "no-such-gpu"},
        {{"plan", "--gemm", "1,2", "--device-profile", "nvidia-h100"}, "--gemm"},
        {{"plan", "--gemm", "1,x,3", "--device-profile", "nvidia-h100"}, "--gemm"},
        {{"plan", "--input-shape", "1,3,8,8", "--device-profile", "nvidia-h100"}, "--filter-shape"},
        {{"plan", "--input-shape", "1,3,8,8", "--filter-shape", "4,2,3,3", "--device-profile", "nvidia-h100"}, "filter"},
        {{"plan", "--layer", "cv1", "--pass", "sideways"}, "--pass"},
        {{"plan", "--layer", "cv1", "--dtype", "f64", "--device-profile", "nvidia-h100"}, "f64"},
        {{"plan", "--layer", "cv1", "--workspace-limit", "auto", "--device-profile", "nvidia-h100"},
         "--workspace-limit auto"},
    };
    for (const auto& [args, mention] : cases) {
        const auto r = run_cli(dir, args);
        INFO(r.describe());
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains(mention));
    }
    // An algorithm named that cannot run the problem: the pass's own refusal, as bad input naming the option.
    const auto r = run_cli(dir, {"plan", "--layer", "cv1", "--algo", "depthwise", "--device-profile", "nvidia-h100"});
    INFO(r.describe());
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("--algo depthwise cannot run this problem"));
    CHECK_THAT(r.err, Catch::Contains("one input channel per group"));
}
