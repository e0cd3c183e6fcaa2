// Context creation, device selection, error mapping and the validation message path (device loss:
// test_device_loss.cpp).
#include <cstdlib>

#include <vkconv/testing.hpp>
#include "context/context_impl.hpp"
#include "gpu.hpp"
#include "test_util.hpp"
#include "vulkan/instance.hpp"
#include "vulkan/vk_check.hpp"

using vkconv::DeviceInfo;
using vkconv::ErrorCategory;

namespace {

std::vector<DeviceInfo> fake_devices() {
    std::vector<DeviceInfo> devices(3);
    devices[0].index = 0, devices[0].name = "llvmpipe (LLVM 15.0.6, 256 bits)", devices[0].type = "CPU";
    devices[1].index = 1, devices[1].name = "Intel(R) UHD Graphics 620", devices[1].type = "integrated GPU";
    devices[2].index = 2, devices[2].name = "NVIDIA H100 80GB HBM3", devices[2].type = "discrete GPU";
    return devices;
}

}  // namespace

TEST_CASE("device selection: default ranking, index and name substring", "[context]") {
    using vkconv::detail::select_device;
    const auto devices = fake_devices();
    CHECK(select_device(devices, "") == 2);  // discrete beats integrated beats CPU
    CHECK(select_device({devices[0], devices[1]}, "") == 1);
    CHECK(select_device(devices, "0") == 0);
    CHECK(select_device(devices, "1") == 1);
    CHECK(select_device(devices, "LLVMpipe") == 0);
    CHECK(select_device(devices, "h100") == 2);
    const auto out_of_range = vkt::thrown_error([&] { select_device(devices, "7"); });
    CHECK(out_of_range.category() == ErrorCategory::InvalidArgument);
    CHECK_THAT(out_of_range.what(), Catch::Contains("7") && Catch::Contains("NVIDIA H100"));
    const auto no_match = vkt::thrown_error([&] { select_device(devices, "radeon"); });
    CHECK(no_match.category() == ErrorCategory::InvalidArgument);
    CHECK_THAT(no_match.what(), Catch::Contains("radeon") && Catch::Contains("llvmpipe"));
    CHECK(vkt::thrown_error([&] { select_device({}, ""); }).category() == ErrorCategory::Unsupported);
}

TEST_CASE("Vulkan failures carry the call, the result, file and line, and the right category", "[context]") {
    std::atomic<bool> lost{false};
    const auto e = vkt::thrown_error([&] { VKC_CHECK(&lost, VK_ERROR_INITIALIZATION_FAILED); });
    CHECK(e.category() == ErrorCategory::VulkanFailure);
    CHECK(e.vk_result() == VK_ERROR_INITIALIZATION_FAILED);
    CHECK_THAT(e.what(), Catch::Contains("VK_ERROR_INITIALIZATION_FAILED") && Catch::Contains("test_context.cpp:") &&
                             Catch::Contains("failed with"));
    CHECK(vkt::thrown_error([&] { VKC_CHECK(&lost, VK_ERROR_OUT_OF_DEVICE_MEMORY); }).category() ==
          ErrorCategory::OutOfDeviceMemory);
    CHECK_FALSE(lost.load());
    CHECK(vkt::thrown_error([&] { VKC_CHECK(&lost, VK_ERROR_DEVICE_LOST); }).category() == ErrorCategory::DeviceLost);
    CHECK(lost.load());
    CHECK_NOTHROW(VKC_CHECK(&lost, VK_SUCCESS));
    CHECK_NOTHROW(VKC_CHECK(&lost, VK_INCOMPLETE));
}

TEST_CASE("the device summary names the device and its limits", "[context][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const auto& info = context->device();
    CHECK_FALSE(info.name.empty());
    CHECK(info.subgroup_size > 0);
    CHECK(info.max_storage_buffer_range > 0);
    CHECK(info.max_workgroup_invocations >= 128);
    CHECK(info.max_push_constants_bytes >= 128);
    const auto line = info.summary();
    CHECK_THAT(line, Catch::Contains(info.name) && Catch::Contains("subgroup") &&
                         Catch::Contains("maxStorageBufferRange") && Catch::Contains("fp16"));
    const auto all = vkconv::list_devices();
    REQUIRE(info.index < all.size());
    CHECK(all[info.index].name == info.name);
}

TEST_CASE("device selection through options and VKCONV_DEVICE", "[context][gpu]") {
    VKT_REQUIRE_CONTEXT(shared);
    const std::string name = shared->device().name;
    auto options = vkt::test_options();
    options.device = std::to_string(shared->device().index);
    auto by_index = vkt::fresh_context(options);
    REQUIRE(by_index);
    CHECK(by_index->device().name == name);

    options.device = "no such device at all";
    const auto e = vkt::thrown_error([&] { vkconv::Context c(options); });
    CHECK(e.category() == ErrorCategory::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("no such device at all"));

    // The environment variable is read when the option is empty; the option wins over it.
    ::setenv("VKCONV_DEVICE", "no such device either", 1);
    options.device = "";
    CHECK(vkt::thrown_error([&] { vkconv::Context c(options); }).category() == ErrorCategory::InvalidArgument);
    options.device = std::to_string(shared->device().index);
    CHECK_NOTHROW(vkconv::Context(options));
    ::unsetenv("VKCONV_DEVICE");
}

TEST_CASE("validation messages reach the user callback", "[context][gpu]") {
    int errors = 0;
    auto options = vkt::test_options();
    options.on_message = [&](vkconv::MessageSeverity severity, std::string_view) {
        if (severity == vkconv::MessageSeverity::Error) ++errors;
    };
    std::unique_ptr<vkconv::Context> context;
    try {
        context = std::make_unique<vkconv::Context>(options);
    } catch (const vkconv::Error& e) {
        if (e.category() != ErrorCategory::Unsupported) throw;
        vkt::mark_skipped(e.what());
        return;
    }
    vkt::require_validation(*context);
    if (!context->validation_enabled())  // opted out of validation: this case cannot run, and says so
        return vkt::skip_case("VK_LAYER_KHRONOS_validation is not installed: the message path cannot be exercised");
    // A deliberate misuse: a buffer of size 0 violates VUID-VkBufferCreateInfo-size-00912.
    auto& device = *vkconv::detail::impl_of(*context).device;
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = 0;
    info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    VkBuffer buffer = VK_NULL_HANDLE;
    if (device.vk().vkCreateBuffer(device.handle(), &info, nullptr, &buffer) == VK_SUCCESS && buffer)
        device.vk().vkDestroyBuffer(device.handle(), buffer, nullptr);
    CHECK(errors >= 1);
}

TEST_CASE("a context's tensors cannot be used with another context", "[context][gpu]") {
    VKT_REQUIRE_CONTEXT(shared);
    auto other = vkt::fresh_context();
    REQUIRE(other);
    vkconv::ConvProblem p;
    p.C = 2, p.H = 4, p.W = 4, p.K = 2, p.R = 3, p.S = 3;
    vkconv::Tensor x(*other, p.input_shape());
    vkconv::Tensor w(*shared, p.filter_shape()), y(*shared, p.output_shape());
    const auto e = vkt::thrown_error([&] { vkconv::forward(*shared, p, x, w, nullptr, y); });
    CHECK(e.category() == ErrorCategory::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("another context"));
}
