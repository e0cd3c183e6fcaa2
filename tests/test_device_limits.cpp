// Other devices' limits imposed on this one (ContextOptions::device_limits): every shipped profile, the
// Vulkan 1.1 minimum and a profile with buffers of a few MiB. Each run is checked against the CPU reference
// and, independently of the planner that made it, against the imposed limits: an auditor sees every
// dispatch the command stream records (workgroup grid, invocations, push constants, descriptors, binding
// ranges and offsets), and the pool reports the largest buffer and memory it created.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "context/context_impl.hpp"
#include "conv_cases.hpp"
#include "gpu.hpp"
#include "test_util.hpp"

namespace {

using vkconv::Algorithm;
using vkconv::Layout;
using vkconv::detail::DispatchAudit;

// Every limit a dispatch can break, checked as the command stream records it; the first few breaches are
// kept with the shader that made them.
class LimitAuditor {
public:
    explicit LimitAuditor(vkconv::Context& context) : impl_(vkconv::detail::impl_of(context)) {
        impl_.device->dispatch_auditor = [this](const DispatchAudit& audit) { check(audit); };
    }
    ~LimitAuditor() { impl_.device->dispatch_auditor = nullptr; }
    LimitAuditor(const LimitAuditor&) = delete;
    LimitAuditor& operator=(const LimitAuditor&) = delete;

    uint64_t dispatches() const { return dispatches_; }
    const std::vector<std::string>& breaches() const { return breaches_; }
    // The pool never made a buffer or memory above the device's limits.
    void check_pool() {
        const auto& model = impl_.device->model();
        if (impl_.pool->largest_buffer_created() > model.max_single_buffer_bytes())
            breach("pool", "a buffer of " + std::to_string(impl_.pool->largest_buffer_created()) + " bytes");
        if (impl_.pool->largest_memory_created() > model.max_memory_allocation_size)
            breach("pool", "an allocation of " + std::to_string(impl_.pool->largest_memory_created()) + " bytes");
    }

private:
    void breach(const std::string& shader, const std::string& what) {
        if (breaches_.size() < 8) breaches_.push_back(shader + ": " + what);
    }
    void check(const DispatchAudit& audit) {
        ++dispatches_;
        const VkPhysicalDeviceLimits& limits = impl_.device->limits();
        for (int i = 0; i < 3; ++i)
            if (audit.groups[i] > limits.maxComputeWorkGroupCount[i] || audit.groups[i] == 0)
                breach(audit.shader, "workgroups " + std::to_string(audit.groups[i]) + " in dimension " + std::to_string(i));
        if (audit.invocations > limits.maxComputeWorkGroupInvocations)
            breach(audit.shader, std::to_string(audit.invocations) + " invocations per workgroup");
        if (audit.push_constant_bytes > limits.maxPushConstantsSize)
            breach(audit.shader, std::to_string(audit.push_constant_bytes) + " bytes of push constants");
        uint32_t storage_buffers = 0;
        for (const auto& b : audit.bindings) {
            const bool texel = b.type == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER ||
                               b.type == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
            if (texel) {
                const uint64_t element = b.texel_format == VK_FORMAT_R32G32B32A32_SFLOAT ? 16 : 4;
                if (b.size / element > limits.maxTexelBufferElements)
                    breach(audit.shader, "a texel binding of " + std::to_string(b.size / element) + " elements");
                if (b.offset % limits.minTexelBufferOffsetAlignment)
                    breach(audit.shader, "a texel binding at offset " + std::to_string(b.offset));
            } else {
                ++storage_buffers;
                if (b.size > limits.maxStorageBufferRange)
                    breach(audit.shader, "a binding of " + std::to_string(b.size) + " bytes");
                if (b.offset % limits.minStorageBufferOffsetAlignment)
                    breach(audit.shader, "a binding at offset " + std::to_string(b.offset));
            }
        }
        if (storage_buffers > limits.maxPerStageDescriptorStorageBuffers)
            breach(audit.shader, std::to_string(storage_buffers) + " storage-buffer descriptors");
    }

    vkconv::detail::ContextImpl& impl_;
    uint64_t dispatches_ = 0;
    std::vector<std::string> breaches_;
};

std::unique_ptr<vkconv::Context> context_with_limits(const std::string& profile) {
    vkconv::ContextOptions options = vkt::test_options();
    options.device_limits = profile;
    return vkt::fresh_context(options);
}

// A profile whose buffers and allocations hold 4 MiB (so no binding can be larger either), the rest at the
// device's own or the specification's minimum.
std::string small_buffer_profile(const vkt::TempDir& dir) {
    const std::string path = dir.file("small-buffers.json");
    std::ofstream(path) << R"({"capabilities": {"device": {"properties": {
        "VkPhysicalDeviceProperties": {"deviceName": "small buffers", "limits": {
            "maxComputeSharedMemorySize": 65536, "maxComputeWorkGroupInvocations": 1024,
            "maxComputeWorkGroupSize": [1024, 1024, 64], "maxPushConstantsSize": 256,
            "maxPerStageDescriptorStorageBuffers": 64, "maxDescriptorSetStorageBuffers": 64,
            "maxBoundDescriptorSets": 8,
            "minStorageBufferOffsetAlignment": 16, "minTexelBufferOffsetAlignment": 16}},
        "VkPhysicalDeviceMaintenance3Properties": {"maxMemoryAllocationSize": 4194304},
        "VkPhysicalDeviceMaintenance4Properties": {"maxBufferSize": 4194304}}}}})";
    return path;
}

// On a device that allows fewer storage buffers per shader than a kernel binds, its plans are refused: the
// direct forward kernel binds 5 (x, w, bias, y, residual), implicit GEMM 6 or 7 in every pass.
bool refused_here(vkconv::Context& context, Algorithm algorithm, vkconv::Pass pass) {
    const uint32_t allowed = vkconv::detail::impl_of(context).device->limits().maxPerStageDescriptorStorageBuffers;
    if (algorithm == Algorithm::ImplicitGemm) return allowed < 7;
    return algorithm == Algorithm::Direct && pass == vkconv::Pass::Forward && allowed < 5;
}

template <class Run>
void expect_descriptor_refusal(Run run) {
    try {
        run();
        FAIL_CHECK("a kernel that binds more storage buffers than the device allows was run");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == vkconv::ErrorCategory::Unsupported);
        CHECK(std::string(e.what()).find("maxPerStageDescriptorStorageBuffers") != std::string::npos);
    }
}

// The odd-shape table through every pass under `profile`: each case with one algorithm and one layout in
// turn (every algorithm and layout is reached across the table), or with every combination. `share` and
// `shares` run every shares-th case from the share-th on (profiles that split the table between them).
void run_odd_table(const std::string& profile, uint32_t seed, bool every_combination = false, size_t share = 0,
                   size_t shares = 1) {
    auto context = context_with_limits(profile);
    if (!context) return;
    INFO("limits of " << profile << ": " << context->device().summary());
    LimitAuditor auditor(*context);
    size_t case_index = 0;
    for (const auto& named : vkt::odd_problems()) {
        const auto algorithms = vkt::algorithms_for(named.problem);
        const size_t index = case_index++;
        if (index % shares != share) continue;
        const size_t chosen = index / shares % (algorithms.size() * 2);  // this case's (algorithm, layout)
        size_t combination = 0;
        for (Algorithm algorithm : algorithms) {
            for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
                if (!every_combination && combination++ != chosen) continue;
                auto problem = named.problem;
                problem.layout = layout;
                problem.has_bias = (seed & 1) != 0;
                INFO("case '" << named.name << "' " << vkconv::to_string(algorithm) << " " << vkconv::to_string(layout));
                if (refused_here(*context, algorithm, vkconv::Pass::Forward))
                    expect_descriptor_refusal([&] { vkt::check_forward(*context, problem, algorithm, seed += 3); });
                else
                    vkt::check_forward(*context, problem, algorithm, seed += 3);
                if (refused_here(*context, algorithm, vkconv::Pass::BackwardData)) {
                    vkt::BackwardCheck check(*context, problem, seed += 3);
                    expect_descriptor_refusal([&] { check.data(algorithm); });
                    expect_descriptor_refusal([&] { check.filter(algorithm); });
                    check.bias();
                } else {
                    vkt::check_backward(*context, problem, algorithm, seed += 3);
                }
            }
        }
    }
    auditor.check_pool();
    CHECK(auditor.dispatches() > 0);
    for (const auto& breach : auditor.breaches()) FAIL_CHECK("a limit of " << profile << " was broken: " << breach);
}

}  // namespace

TEST_CASE("imposed limits lower the device's limits and raise its alignments", "[limits][gpu]") {
    auto own = vkt::fresh_context();
    if (!own) return;
    auto context = context_with_limits("vulkan-minimum");
    REQUIRE(context);
    const vkconv::DeviceInfo& info = context->device();
    CHECK(info.imposed_limits == "Vulkan 1.1 minimum limits");
    CHECK(info.summary().find("limits of Vulkan 1.1 minimum limits imposed") != std::string::npos);
    CHECK(info.shared_memory_bytes == std::min<uint32_t>(16384, own->device().shared_memory_bytes));
    CHECK(info.max_workgroup_invocations == std::min<uint32_t>(128, own->device().max_workgroup_invocations));
    CHECK(info.max_storage_buffer_range == std::min<uint64_t>(1u << 27, own->device().max_storage_buffer_range));
    CHECK(info.max_texel_buffer_elements == std::min<uint64_t>(65536, own->device().max_texel_buffer_elements));
    CHECK(info.max_push_constants_bytes == std::min<uint32_t>(128, own->device().max_push_constants_bytes));
    CHECK(info.max_buffer_bytes == std::min<uint64_t>(1ull << 30, own->device().max_buffer_bytes));
    CHECK(context->pool_stats().alignment >= 256);
    const auto& limits = vkconv::detail::impl_of(*context).device->limits();
    CHECK(limits.maxPerStageDescriptorStorageBuffers == 4);
    CHECK(limits.minStorageBufferOffsetAlignment >= 256);
    CHECK(limits.minTexelBufferOffsetAlignment >= 256);
    CHECK(own->device().imposed_limits.empty());

    // The environment variable imposes them where the options do not.
    ::setenv("VKCONV_DEVICE_LIMITS", "intel-arc-a770", 1);
    auto from_environment = vkt::fresh_context();
    ::unsetenv("VKCONV_DEVICE_LIMITS");
    REQUIRE(from_environment);
    CHECK(from_environment->device().imposed_limits.find("Arc") != std::string::npos);

    vkconv::ContextOptions bad = vkt::test_options();
    bad.device_limits = "no-such-profile";
    try {
        vkconv::Context broken(bad);
        FAIL("a context with an unknown profile was made");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == vkconv::ErrorCategory::InvalidArgument);
        CHECK(std::string(e.what()).find("no-such-profile") != std::string::npos);
    }
}

TEST_CASE("every pass runs within each shipped profile's limits", "[limits][gpu]") {
    // The device profiles share the table: each runs every second case, the two halves alternating.
    uint32_t seed = 31000;
    size_t share = 0;
    for (const auto& name : vkconv::device_profile_names()) {
        if (name == "vulkan-minimum") continue;  // its own case below
        INFO("profile " << name);
        run_odd_table(name, seed += 1000, false, share++ % 2, 2);
    }
}

TEST_CASE("every pass runs within the Vulkan 1.1 minimum limits", "[limits][gpu]") {
    run_odd_table("vulkan-minimum", 41000);
}

TEST_CASE("every pass runs within buffers of 4 MiB", "[limits][gpu]") {
    vkt::TempDir dir("vkconv-limits");
    run_odd_table(small_buffer_profile(dir), 51000);
}

TEST_CASE("every pass and algorithm in both layouts on every odd case within each profile's limits",
          "[limits][gpu][slow]") {
    vkt::TempDir dir("vkconv-limits");
    std::vector<std::string> profiles = vkconv::device_profile_names();
    profiles.push_back(small_buffer_profile(dir));
    uint32_t seed = 61000;
    for (const auto& profile : profiles) run_odd_table(profile, seed += 1000, true);
}

TEST_CASE("one allocation above the largest buffer is refused before any allocation, naming sizes and limit",
          "[limits][gpu]") {
    vkt::TempDir dir("vkconv-limits");
    auto context = context_with_limits(small_buffer_profile(dir));
    if (!context) return;
    CHECK(context->device().max_buffer_bytes == 4u << 20);
    vkconv::Tensor fits(*context, {1 << 20});  // exactly 4 MiB
    const auto before = context->pool_stats();
    try {
        vkconv::Tensor too_large(*context, {(1 << 20) + 1});
        FAIL("a tensor above the largest buffer was allocated");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == vkconv::ErrorCategory::Unsupported);
        const std::string message = e.what();
        CHECK(message.find("4194308 bytes") != std::string::npos);
        CHECK(message.find("maxBufferSize 4194304") != std::string::npos);
        CHECK(message.find("maxMemoryAllocationSize 4194304") != std::string::npos);
    }
    const auto after = context->pool_stats();
    CHECK(after.driver_allocations == before.driver_allocations);
    CHECK(after.in_use == before.in_use);
    // The pool's blocks (64 MiB by default) shrink to the limit.
    vkconv::Tensor small(*context, {16});
    CHECK(vkconv::detail::impl_of(*context).pool->largest_buffer_created() <= (4u << 20));
}

TEST_CASE("an imposed profile's device-local heap caps what the pool may hold", "[limits][gpu]") {
    vkt::TempDir dir("vkconv-limits");
    const std::string path = dir.file("small-heap.json");
    std::ofstream(path) << R"({"capabilities": {"device": {"properties": {
        "VkPhysicalDeviceProperties": {"deviceName": "small heap", "limits": {
            "maxPerStageDescriptorStorageBuffers": 16, "maxDescriptorSetStorageBuffers": 16}},
        "VkPhysicalDeviceMemoryProperties": {"memoryHeaps": [
            {"size": 8388608, "flags": ["VK_MEMORY_HEAP_MULTI_INSTANCE_BIT"]},
            {"size": 33554432, "flags": ["VK_MEMORY_HEAP_DEVICE_LOCAL_BIT"]}]}}}}})";
    vkconv::ContextOptions options = vkt::test_options();
    options.device_limits = path;
    options.pool_block_bytes = 4 << 20;
    auto context = vkt::fresh_context(options);
    if (!context) return;
    CHECK(context->auto_workspace_limit() <= (8u << 20));  // a quarter of the 32 MiB heap at most
    std::vector<vkconv::Tensor> held;
    for (int i = 0; i < 8; ++i) held.emplace_back(*context, vkconv::Shape{1 << 20});  // 8 x 4 MiB: the heap
    try {
        vkconv::Tensor past(*context, {1 << 20});
        FAIL("the pool held more than the imposed heap");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == vkconv::ErrorCategory::OutOfDeviceMemory);
        CHECK_THAT(e.what(), Catch::Contains("imposed device heap of 33554432 bytes"));
    }
    CHECK(context->pool_stats().reserved <= (32u << 20));
}

TEST_CASE("imposing limits compares sizes in 64 bits", "[limits]") {
    // A GPU whose buffers reach 80 GiB, given its own limits: 80 GiB lowers nothing, and must not wrap
    // around 32 bits into a binding limit of 0.
    vkconv::detail::Device device(vkconv::detail::load_device_model("nvidia-h100"));
    const uint32_t range = device.limits().maxStorageBufferRange;
    const uint32_t texels = device.limits().maxTexelBufferElements;
    device.impose_limits(vkconv::detail::load_device_model("nvidia-h100"));
    CHECK(device.limits().maxStorageBufferRange == range);
    CHECK(device.limits().maxTexelBufferElements == texels);
    CHECK(device.model().max_single_buffer_bytes() == 80ull << 30);
    // Another 16 GiB GPU's limits: the smaller buffer, the binding limits unchanged below it.
    device.impose_limits(vkconv::detail::load_device_model("intel-arc-a770"));
    CHECK(device.model().max_single_buffer_bytes() == 17079205888ull);
    CHECK(device.limits().maxStorageBufferRange == range);
}
