// Other devices' limits imposed on this one (ContextOptions::device_limits): every shipped profile, the
// Vulkan 1.1 minimum and a profile with buffers of a few MiB. Each run is checked against the CPU reference
// and, independently of the planner that made it, against the imposed limits: an auditor sees every
// dispatch the command stream records (workgroup grid, invocations, push constants, descriptors, binding
// ranges and offsets), and the pool reports the largest buffer and memory it created.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "context/context_impl.hpp"
#include "context/tensor_storage.hpp"
#include "gemm/gemm_config.hpp"
#include "memory/paging.hpp"
#include "vkconv/reference.hpp"
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
    uint64_t dispatches_with_shared_memory() const { return with_shared_memory_; }
    uint64_t texel_bindings() const { return texel_bindings_; }
    // Whether a shader whose name starts with `prefix` was dispatched.
    bool ran(const std::string& prefix) const {
        return std::any_of(shaders_.begin(), shaders_.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
    }
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
        shaders_.insert(audit.shader);
        const VkPhysicalDeviceLimits& limits = impl_.device->limits();
        for (int i = 0; i < 3; ++i)
            if (audit.groups[i] > limits.maxComputeWorkGroupCount[i] || audit.groups[i] == 0)
                breach(audit.shader, "workgroups " + std::to_string(audit.groups[i]) + " in dimension " + std::to_string(i));
        if (audit.invocations > limits.maxComputeWorkGroupInvocations)
            breach(audit.shader, std::to_string(audit.invocations) + " invocations per workgroup");
        if (audit.shared_memory_bytes > limits.maxComputeSharedMemorySize)
            breach(audit.shader, std::to_string(audit.shared_memory_bytes) + " bytes of shared memory");
        if (audit.shared_memory_bytes) ++with_shared_memory_;
        if (audit.push_constant_bytes > limits.maxPushConstantsSize)
            breach(audit.shader, std::to_string(audit.push_constant_bytes) + " bytes of push constants");
        uint32_t storage_buffers = 0;
        for (const auto& b : audit.bindings) {
            const bool texel = b.type == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER ||
                               b.type == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
            if (texel) {
                ++texel_bindings_;
                const uint64_t element = b.texel_format == VK_FORMAT_R32G32B32A32_SFLOAT ||
                                                 b.texel_format == VK_FORMAT_R32G32B32A32_UINT
                                             ? 16
                                         : b.texel_format == VK_FORMAT_R16G16B16A16_UINT ? 8
                                         : b.texel_format == VK_FORMAT_R16_UINT          ? 2
                                                                                         : 4;
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
    uint64_t dispatches_ = 0, with_shared_memory_ = 0, texel_bindings_ = 0;
    std::set<std::string> shaders_;
    std::vector<std::string> breaches_;
};

std::unique_ptr<vkconv::Context> context_with_limits(const std::string& profile) {
    vkconv::ContextOptions options = vkt::test_options();
    options.device_limits = profile;
    return vkt::fresh_context(options);
}

using vkt::small_buffer_profile;

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
                vkt::check_forward(*context, problem, algorithm, seed += 3);
                vkt::check_backward(*context, problem, algorithm, seed += 3);
            }
        }
    }
    auditor.check_pool();
    CHECK(auditor.dispatches() > 0);
    CHECK(auditor.dispatches_with_shared_memory() > 0);  // the SPIR-V reader saw the kernels' shared memory
    // Where the device allows 4 storage buffers per stage, the direct forward and implicit-GEMM kernels ran
    // as their 4-binding variants (the table reaches both on every profile when every combination runs).
    if (every_combination && vkconv::detail::impl_of(*context).device->limits().maxPerStageDescriptorStorageBuffers < 5) {
        CHECK(auditor.ran("conv2d_direct_4"));
        CHECK(auditor.ran("implicit_gemm_4_t"));
    }
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

TEST_CASE("a tensor above the largest buffer is stored in pages, and one whose row is above it is refused before any allocation",
          "[limits][gpu]") {
    vkt::TempDir dir("vkconv-limits");
    auto context = context_with_limits(small_buffer_profile(dir));
    if (!context) return;
    auto& pool = *vkconv::detail::impl_of(*context).pool;
    CHECK(context->device().max_buffer_bytes == 4u << 20);
    vkconv::Tensor fits(*context, {1 << 20});  // exactly 4 MiB: one buffer
    CHECK(vkconv::detail::storage_of(fits)->pages.size() == 1);
    const auto before = context->pool_stats();
    {
        // 4 MiB + 4 bytes: a full page and one of 16 bytes (the pool's alignment), nothing more.
        vkconv::Tensor paged(*context, {(1 << 20) + 1});
        CHECK(vkconv::detail::storage_of(paged)->pages.size() == 2);
        CHECK(context->pool_stats().in_use == before.in_use + (4u << 20) + pool.round(4));
    }
    try {
        vkconv::Tensor row_too_large(*context, {2, (1 << 20) + 1});
        FAIL("a tensor whose rows are above the largest buffer was allocated");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == vkconv::ErrorCategory::Unsupported);
        const std::string message = e.what();
        CHECK(message.find("one row") != std::string::npos);
        CHECK(message.find("4194308 bytes") != std::string::npos);
        CHECK(message.find("4194304 bytes") != std::string::npos);
    }
    const auto after = context->pool_stats();
    CHECK(after.in_use == before.in_use);
    // A workspace buffer is one allocation: above the largest it is refused by the pool, naming both limits.
    try {
        pool.allocate((4u << 20) + 1);
        FAIL("an allocation above the largest buffer was made");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == vkconv::ErrorCategory::Unsupported);
        CHECK(std::string(e.what()).find("maxBufferSize 4194304") != std::string::npos);
        CHECK(std::string(e.what()).find("maxMemoryAllocationSize 4194304") != std::string::npos);
    }
    CHECK(context->pool_stats().driver_allocations == after.driver_allocations);
    // The pool's blocks (64 MiB by default) shrink to the limit.
    vkconv::Tensor small(*context, {16});
    CHECK(pool.largest_buffer_created() <= (4u << 20));
}

namespace {

// Profiles whose two buffer limits differ, each way round, or where only one is reported: the largest buffer
// is always `kSmallerBuffer` bytes, never the larger figure.
constexpr uint64_t kSmallerBuffer = 64u << 10, kLargerBuffer = 1u << 20;
struct BufferLimitCase {
    const char* name;
    vkt::ProfileLimits limits;
};
const std::vector<BufferLimitCase>& buffer_limit_cases() {
    static const std::vector<BufferLimitCase> cases = {
        {"maxBufferSize below maxMemoryAllocationSize",
         {.max_buffer_size = kSmallerBuffer, .max_memory_allocation_size = kLargerBuffer}},
        {"maxMemoryAllocationSize below maxBufferSize",
         {.max_buffer_size = kLargerBuffer, .max_memory_allocation_size = kSmallerBuffer}},
        {"maxBufferSize alone", {.max_buffer_size = kSmallerBuffer, .max_memory_allocation_size = 0}},
        {"maxMemoryAllocationSize alone", {.max_buffer_size = 0, .max_memory_allocation_size = kSmallerBuffer}},
    };
    return cases;
}

}  // namespace

TEST_CASE("the largest buffer is the smaller of maxBufferSize and maxMemoryAllocationSize, either way round, "
          "and no binding is larger",
          "[limits]") {
    // The profiles as read for planning, with no device: the binding limits (the specification's minimum range
    // of 2^27 bytes and 65,536 texel elements, as these profiles leave them out) follow the smaller buffer too.
    vkt::TempDir dir("vkconv-buffer-limits");
    for (const auto& [name, limits] : buffer_limit_cases()) {
        INFO(name);
        const std::string path = vkt::profile_with_limits(dir, limits);
        const vkconv::DeviceInfo info = vkconv::DeviceProfile::load(path).info();
        CHECK(info.max_buffer_bytes == kSmallerBuffer);
        CHECK(info.max_storage_buffer_range == kSmallerBuffer);
        CHECK(info.max_texel_buffer_elements == kSmallerBuffer / 4);
        // Imposed on a device whose own buffers are larger (a modelled H100).
        vkconv::detail::Device device(vkconv::detail::load_device_model("nvidia-h100"));
        device.impose_limits(vkconv::detail::load_device_model(path));
        CHECK(device.model().max_single_buffer_bytes() == kSmallerBuffer);
        CHECK(device.limits().maxStorageBufferRange == kSmallerBuffer);
        CHECK(device.limits().maxTexelBufferElements == kSmallerBuffer / 4);
    }
}

TEST_CASE("imposed buffer limits, either way round: tensors paged at the smaller, every pass within it",
          "[limits][paging][gpu]") {
    vkt::TempDir dir("vkconv-buffer-limits");
    uint32_t seed = 93000;
    size_t case_index = 0;
    for (const auto& [name, limits] : buffer_limit_cases()) {
        INFO(name);
        auto context = context_with_limits(vkt::profile_with_limits(dir, limits));
        if (!context) return;
        CHECK(context->device().max_buffer_bytes == kSmallerBuffer);
        CHECK(context->device().max_storage_buffer_range <= kSmallerBuffer);
        LimitAuditor auditor(*context);
        // x (120,000 bytes) and y (150,000 bytes) over pages of at most 64 KiB; one algorithm a case, in turn.
        const Layout layout = case_index % 2 ? Layout::NHWC : Layout::NCHW;
        const vkconv::ConvProblem p =
            vkt::problem().batch(3).channels(4).image(50, 50).filters(5).kernel(3, 3).pad(1).layout(layout).bias();
        const auto algorithms = vkt::algorithms_for(p);
        const Algorithm algorithm = algorithms[case_index++ % algorithms.size()];
        INFO(vkconv::to_string(algorithm) << " " << p.str());
        vkconv::Tensor x(*context, p.input_shape()), y(*context, p.output_shape());
        for (const vkconv::Tensor* t : {&x, &y}) {
            CHECK(vkconv::detail::storage_of(*t)->pages.size() == 3);  // an image (40,000 or 50,000 bytes) a page
            for (const auto& page : vkconv::detail::storage_of(*t)->pages) CHECK(page.size <= kSmallerBuffer);
        }
        vkt::check_forward(*context, p, algorithm, seed += 3);
        vkt::BackwardCheck check(*context, p, seed += 3);
        check.data(algorithm);
        check.filter(algorithm);
        // Against the figure itself, not the device model's reading of it (which these cases test).
        const auto& pool = *vkconv::detail::impl_of(*context).pool;
        CHECK(pool.largest_buffer_created() <= kSmallerBuffer);
        CHECK(pool.largest_memory_created() <= kSmallerBuffer);
        auditor.check_pool();
        for (const auto& breach : auditor.breaches()) FAIL_CHECK(name << ": " << breach);
    }
}

TEST_CASE("offset alignments, either way round: the pool and every binding on the larger", "[limits][gpu]") {
    vkt::TempDir dir("vkconv-alignments");
    uint32_t seed = 94000;
    for (const auto& [storage, texel] : {std::pair{64u, 256u}, std::pair{256u, 64u}}) {
        INFO("minStorageBufferOffsetAlignment " << storage << ", minTexelBufferOffsetAlignment " << texel);
        auto context = context_with_limits(
            vkt::profile_with_limits(dir, {.storage_alignment = storage, .texel_alignment = texel}));
        if (!context) return;
        CHECK(context->pool_stats().alignment == 256);
        LimitAuditor auditor(*context);
        // Bindings of 8 KiB: chunks of one image and bands of rows, whose windows start inside the tensors and
        // the lowered matrices (texel views for the GEMM and depthwise where they fit, storage buffers else).
        vkconv::PassOptions options;
        options.max_binding_bytes = 8192;
        const auto dense = vkt::problem().batch(3).channels(5).image(14, 11).filters(6).kernel(3, 3).pad(1).bias();
        const auto depthwise = vkt::problem().batch(3).channels(6).depthwise(2).image(14, 11).kernel(3, 3).pad(1).bias();
        for (Algorithm algorithm : {Algorithm::Im2col, Algorithm::Mec, Algorithm::Depthwise}) {
            const vkconv::ConvProblem p = algorithm == Algorithm::Depthwise ? depthwise : dense;
            INFO(vkconv::to_string(algorithm) << " " << p.str());
            CHECK(vkt::check_forward(*context, p, algorithm, seed += 3, options).chunks > 1);
            vkt::BackwardCheck check(*context, p, seed += 3);
            check.data(algorithm, options);
            check.filter(algorithm, options);
        }
        CHECK(auditor.texel_bindings() > 0);  // the texel alignment was put to the test, not only the storage one
        for (const auto& breach : auditor.breaches()) FAIL_CHECK(breach);
    }
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

// ---------------------------------------------------------------------------------------------------------
// Tensors larger than one buffer, stored in pages: every pass and algorithm under buffers of 64 KiB.

namespace {

constexpr uint64_t kPageBytes = 64u << 10;

// A context whose buffers hold 64 KiB (null without a device), with the profile file it was made from.
struct PagedContext {
    vkt::TempDir dir{"vkconv-paged"};
    std::unique_ptr<vkconv::Context> context = context_with_limits(small_buffer_profile(dir, kPageBytes));
};

vkconv::ConvProblem conv_problem(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t pad, int64_t groups = 1) {
    vkconv::ConvProblem p;
    p.N = N, p.C = C, p.H = H, p.W = W, p.K = K, p.R = 3, p.S = 3;
    p.pad_h = p.pad_w = pad;
    p.groups = groups;
    return p;
}

// Problems whose tensors span several 64 KiB buffers, each paged in its own way.
std::vector<vkt::NamedProblem> paged_problems() {
    std::vector<vkt::NamedProblem> cases;
    // x holds 3 whole images a page, y 2: pages end at different images, so slices of 1 and 2 images.
    cases.push_back({"whole images per page", conv_problem(7, 3, 37, 37, 5, 0)});
    // One image of x (78 KB) spans pages of channel planes (NCHW) or of rows (NHWC); y one image a page;
    // stride 2 and an asymmetric pad on top.
    auto split = conv_problem(3, 4, 70, 70, 3, 1);
    split.stride_h = 2;
    split.set_padding(2, 1, 1, 1);
    cases.push_back({"images across pages", split});
    // The filter (48 x 40 x 3 x 3: 69,120 bytes) over two pages.
    cases.push_back({"filter across pages", conv_problem(2, 40, 9, 11, 48, 1)});
    // Depthwise, one image a page, dilated.
    auto depthwise = conv_problem(9, 6, 41, 41, 6, 2, 6);
    depthwise.dilation_h = depthwise.dilation_w = 2;
    cases.push_back({"depthwise, one image a page", depthwise});
    return cases;
}

// Each paged problem through forward, backward-data, backward-filter with db, backward-bias and the layer
// step, with one (algorithm, layout) per case in turn, or every combination; each result checked against
// the reference, each dispatch and the pool against the 64 KiB limit.
void run_paged_table(uint32_t seed, bool every_combination) {
    PagedContext paged;
    auto& context = paged.context;
    if (!context) return;
    LimitAuditor auditor(*context);
    size_t case_index = 0;
    for (const auto& named : paged_problems()) {
        const auto algorithms = vkt::algorithms_for(named.problem);
        const size_t chosen = (case_index++ + seed) % (algorithms.size() * 2);
        size_t combination = 0;
        for (Algorithm algorithm : algorithms)
            for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
                if (!every_combination && combination++ != chosen) continue;
                auto problem = named.problem;
                problem.layout = layout;
                problem.has_bias = true;
                // At least one tensor of the case is larger than a buffer.
                REQUIRE(uint64_t(std::max({problem.input_elements(), problem.output_elements(),
                                           problem.filter_elements()})) * 4 > kPageBytes);
                INFO("case '" << named.name << "' " << vkconv::to_string(algorithm) << " "
                              << vkconv::to_string(layout));
                // The workspace it ran with is the query's, paged or not (the backward checks compare theirs).
                const auto stats = vkt::check_forward(*context, problem, algorithm, seed += 3);
                CHECK(stats.workspace_bytes == vkconv::forward_workspace_bytes(*context, problem, algorithm));
                vkt::BackwardCheck check(*context, problem, seed += 3);
                check.data(algorithm);
                check.filter(algorithm);
                check.bias();
                check.step(algorithm);
            }
    }
    auditor.check_pool();
    CHECK(vkconv::detail::impl_of(*context).pool->largest_buffer_created() <= kPageBytes);
    CHECK(auditor.dispatches() > 0);
    for (const auto& breach : auditor.breaches()) FAIL_CHECK("a limit of 64 KiB buffers was broken: " << breach);
}

}  // namespace

TEST_CASE("every pass runs on tensors spread over buffers of 64 KiB", "[limits][paging][gpu]") {
    run_paged_table(71000, false);
    run_paged_table(72001, false);
}

TEST_CASE("every pass and algorithm in both layouts on tensors spread over buffers of 64 KiB",
          "[limits][paging][gpu][slow]") {
    run_paged_table(73000, true);
}

TEST_CASE("views of paged tensors: forward with a residual from one view into another, nothing else written",
          "[limits][paging][gpu]") {
    PagedContext paged;
    auto& context = paged.context;
    if (!context) return;
    LimitAuditor auditor(*context);
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        auto p = conv_problem(7, 3, 37, 37, 5, 0);
        p.layout = layout;
        p.has_bias = true;
        INFO(p.str());
        // x: images [1, 8) of 9; y and the residual z: images [2, 9) of 9 (pages that start elsewhere than
        // the plans for tensors of 7 images assume).
        auto big_x_shape = p.input_shape(), big_y_shape = p.output_shape();
        big_x_shape[0] = big_y_shape[0] = 9;
        const int64_t x_image = p.C * p.H * p.W, y_image = p.K * p.P() * p.Q();
        const auto x_all = vkt::random_values(size_t(9 * x_image), 81000);
        const auto z_all = vkt::random_values(size_t(9 * y_image), 81001);
        const auto w = vkt::random_values(size_t(p.filter_elements()), 81002);
        const auto b = vkt::random_values(size_t(p.K), 81003);
        vkconv::Tensor big_x = vkconv::Tensor::from_host(*context, big_x_shape, x_all);
        vkconv::Tensor big_z = vkconv::Tensor::from_host(*context, big_y_shape, z_all);
        vkconv::Tensor big_y = vkconv::Tensor::from_host(*context, big_y_shape, vkt::poison(9 * y_image));
        REQUIRE(vkconv::detail::storage_of(big_x)->pages.size() > 1);
        REQUIRE(vkconv::detail::storage_of(big_y)->pages.size() > 1);
        vkconv::Tensor tw = vkconv::Tensor::from_host(*context, p.filter_shape(), w);
        vkconv::Tensor tb = vkconv::Tensor::from_host(*context, p.bias_shape(), b);
        const vkconv::Tensor x = big_x.images(1, 7), z = big_z.images(2, 7);
        vkconv::Tensor y = big_y.images(2, 7);
        vkconv::Epilogue epilogue;
        epilogue.alpha = 1.5f, epilogue.beta = 0.5f, epilogue.residual = &z;
        epilogue.activation = vkconv::Activation::LeakyReLU;
        for (Algorithm algorithm : vkt::algorithms_for(p)) {
            INFO(vkconv::to_string(algorithm));
            big_y.upload(vkt::poison(9 * y_image));
            vkconv::forward(*context, p, x, tw, &tb, y, algorithm, {}, epilogue);
            const std::span<const float> xs(x_all.data() + x_image, size_t(7 * x_image));
            // y = LeakyReLU(1.5 * conv(x, w) + b + 0.5 * z)
            auto plain = p;
            plain.has_bias = false;
            const auto conv = vkconv::reference::forward(plain, xs, w);
            const auto magnitude = vkconv::reference::forward(plain, vkt::absolute(xs), vkt::absolute(w));
            std::vector<double> expected(conv.size()), bound(conv.size());
            for (size_t i = 0; i < conv.size(); ++i) {
                const size_t k = layout == Layout::NCHW ? i / size_t(p.P() * p.Q()) % size_t(p.K) : i % size_t(p.K);
                const double zi = z_all[size_t(2 * y_image) + i];
                const double v = 1.5 * conv[i] + b[k] + 0.5 * zi;
                expected[i] = v < 0 ? 0.01 * v : v;
                bound[i] = 1.5 * magnitude[i] + std::fabs(b[k]) + 0.5 * std::fabs(zi);
            }
            const auto all = big_y.download();
            // Images 0 and 1 of big_y are not the output's: still poison.
            CHECK(std::all_of(all.begin(), all.begin() + 2 * y_image, [](float v) { return std::isnan(v); }));
            vkt::check_close(std::span<const float>(all).subspan(size_t(2 * y_image)), expected, bound,
                             p.C * p.R * p.S + 3, "forward with a residual on views of paged tensors");
        }
    }
    auditor.check_pool();
    for (const auto& breach : auditor.breaches()) FAIL_CHECK("a limit of 64 KiB buffers was broken: " << breach);
}

TEST_CASE("a paged tensor's views upload and download exactly their elements", "[limits][paging][gpu]") {
    PagedContext paged;
    auto& context = paged.context;
    if (!context) return;
    const auto& pool = *vkconv::detail::impl_of(*context).pool;
    const uint64_t before = context->pool_stats().in_use;
    // Images of 18,000 floats, above a page of 16,384: pages of 8 channel planes (16,000 floats) that end
    // inside images.
    const vkconv::Shape shape{5, 9, 40, 50};
    const int64_t image = 18000;
    const auto values = vkt::random_values(size_t(5 * image), 82000);
    vkconv::Tensor t = vkconv::Tensor::from_host(*context, shape, values);
    REQUIRE(vkconv::detail::storage_of(t)->pages.size() == 6);
    // The pool holds exactly the pages: five of 16,000 floats and one of the last 10,000.
    CHECK(context->pool_stats().in_use - before == 5 * pool.round(16000 * 4) + pool.round(10000 * 4));
    CHECK(t.download() == values);
    const auto view = t.images(1, 3).download();
    CHECK(std::equal(view.begin(), view.end(), values.begin() + image));
    // Writing a view changes only its images.
    const auto replacement = vkt::random_values(size_t(2 * image), 82001);
    t.images(2, 2).upload(replacement);
    auto expected = values;
    std::copy(replacement.begin(), replacement.end(), expected.begin() + 2 * image);
    CHECK(t.download() == expected);
}

TEST_CASE("the paged tests notice a tensor put in one buffer whatever the limit", "[limits][paging][gpu]") {
    PagedContext paged;
    auto& context = paged.context;
    if (!context) return;
    struct Fault {
        Fault() { vkconv::detail::testing_one_buffer_tensors = true; }
        ~Fault() { vkconv::detail::testing_one_buffer_tensors = false; }
    };
    LimitAuditor auditor(*context);
    {
        Fault fault;
        auto p = conv_problem(7, 3, 37, 37, 5, 0);
        vkt::check_forward(*context, p, Algorithm::Im2col, 83000);  // right answers: only the limit is broken
    }
    auditor.check_pool();
    CHECK_FALSE(auditor.breaches().empty());
}

TEST_CASE("the shared memory read from each GEMM kernel's SPIR-V is what its configuration plans",
          "[limits][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    auto& impl = vkconv::detail::impl_of(*context);
    std::vector<DispatchAudit> audits;
    impl.device->dispatch_auditor = [&](const DispatchAudit& audit) { audits.push_back(audit); };
    struct Restore {
        vkconv::detail::ContextImpl& impl;
        ~Restore() { impl.device->dispatch_auditor = nullptr; }
    } restore{impl};
    const auto a = vkconv::Tensor::from_host(*context, {64, 64}, vkt::random_values(64 * 64, 84000));
    const auto b = vkconv::Tensor::from_host(*context, {64, 64}, vkt::random_values(64 * 64, 84001));
    vkconv::Tensor c(*context, {64, 64});
    size_t shared_kernels = 0;
    for (const auto& config : vkconv::detail::gemm_configs(impl).all) {
        if (!vkconv::detail::gemm_config_problem(*impl.device, config).empty()) continue;
        INFO("configuration " << config.name);
        audits.clear();
        vkconv::GemmOptions options;
        options.configuration = config.name;
        const auto stats = vkconv::gemm(*context, a, b, c, options);
        if (stats.variant != config.name) continue;  // ran as its storage-buffer twin
        REQUIRE(!audits.empty());
        CHECK(audits.back().shared_memory_bytes == config.shared_bytes());
        shared_kernels += config.shared_bytes() > 0;
    }
    CHECK(shared_kernels > 0);
}

namespace {

// Forward with a bias, a residual (separate, then the output's own memory) and an activation, on a context
// with 4 storage buffers per stage (vulkan-minimum), checked against the reference.
void check_residual_forward(vkconv::Context& context, vkconv::ConvProblem p, std::initializer_list<Algorithm> algorithms) {
    p.has_bias = true;
    for (Layout layout : {Layout::NCHW, Layout::NHWC})
        for (Algorithm algorithm : algorithms)
            for (bool in_place : {false, true}) {
                p.layout = layout;
                INFO(p.str() << " " << vkconv::to_string(algorithm) << (in_place ? ", residual in place" : ""));
                const auto xs = vkt::random_values(size_t(p.input_elements()), 85000);
                const auto w = vkt::random_values(size_t(p.filter_elements()), 85001);
                const auto b = vkt::random_values(size_t(p.K), 85002);
                const auto zs = vkt::random_values(size_t(p.output_elements()), 85003);
                const auto x = vkconv::Tensor::from_host(context, p.input_shape(), xs);
                const auto tw = vkconv::Tensor::from_host(context, p.filter_shape(), w);
                const auto tb = vkconv::Tensor::from_host(context, p.bias_shape(), b);
                const auto z = vkconv::Tensor::from_host(context, p.output_shape(), zs);
                vkconv::Tensor y = in_place ? vkconv::Tensor::from_host(context, p.output_shape(), zs)
                                            : vkconv::Tensor::from_host(context, p.output_shape(),
                                                                        vkt::poison(p.output_elements()));
                vkconv::Epilogue epilogue;
                epilogue.alpha = 0.75f, epilogue.beta = -1.25f, epilogue.residual = in_place ? &y : &z;
                epilogue.activation = vkconv::Activation::ReLU6;
                const auto stats = vkconv::forward(context, p, x, tw, &tb, y, algorithm, {}, epilogue);
                CHECK(stats.algorithm == algorithm);
                auto plain = p;
                plain.has_bias = false;
                const auto conv = vkconv::reference::forward(plain, xs, w);
                const auto magnitude = vkconv::reference::forward(plain, vkt::absolute(xs), vkt::absolute(w));
                std::vector<double> expected(conv.size()), bound(conv.size());
                for (size_t i = 0; i < conv.size(); ++i) {
                    const size_t k =
                        layout == Layout::NCHW ? i / size_t(p.P() * p.Q()) % size_t(p.K) : i % size_t(p.K);
                    const double v = 0.75 * conv[i] + b[k] - 1.25 * zs[i];
                    expected[i] = std::min(std::max(v, 0.0), 6.0);
                    bound[i] = 0.75 * magnitude[i] + std::fabs(b[k]) + 1.25 * std::fabs(zs[i]);
                }
                vkt::check_close(y.download(), expected, bound, p.channels_per_group() * p.R * p.S + 3,
                                 "forward with a residual under 4 storage buffers");
            }
}

// check_residual_forward, then backward-data, backward-filter with db and backward-bias, for each algorithm.
void check_every_pass(vkconv::Context& context, const vkconv::ConvProblem& p,
                      std::initializer_list<Algorithm> algorithms, uint32_t seed) {
    check_residual_forward(context, p, algorithms);
    auto with_bias = p;
    with_bias.has_bias = true;
    for (Algorithm algorithm : algorithms) vkt::check_backward(context, with_bias, algorithm, seed += 100);
}

}  // namespace

TEST_CASE("on a device with 4 storage buffers per stage, direct and implicit-gemm run their 4-binding kernels, "
          "the residual read from the output",
          "[limits][gpu]") {
    auto context = context_with_limits("vulkan-minimum");
    if (!context) return;
    REQUIRE(vkconv::detail::impl_of(*context).device->limits().maxPerStageDescriptorStorageBuffers == 4);
    LimitAuditor auditor(*context);
    auto p = conv_problem(2, 6, 11, 13, 8, 1, 2);
    p.stride_w = 2;
    check_residual_forward(*context, p, {Algorithm::Direct, Algorithm::ImplicitGemm});
    CHECK(auditor.ran("conv2d_direct_4"));
    CHECK(auditor.ran("implicit_gemm_4_t"));
    for (const auto& breach : auditor.breaches()) FAIL_CHECK("a limit of vulkan-minimum was broken: " << breach);
}

TEST_CASE("on a device with 4 storage buffers per stage, a GEMM too large for texel views runs its 4-binding "
          "build, with a bias and a residual in two products",
          "[limits][gpu]") {
    auto context = context_with_limits("vulkan-minimum");
    if (!context) return;
    LimitAuditor auditor(*context);
    // im2col's lowered matrix (288 x 800 floats) and MEC's are above vulkan-minimum's 65,536 texel elements.
    const auto p = conv_problem(2, 32, 20, 20, 40, 1);
    REQUIRE(uint64_t(p.C * p.R * p.S) * uint64_t(p.N * p.P() * p.Q()) > 65536);
    check_every_pass(*context, p, {Algorithm::Im2col, Algorithm::Mec}, 87000);
    CHECK((auditor.ran("gemm_registers_ssbo4") || auditor.ran("gemm_shared_ssbo4")));
    for (const auto& breach : auditor.breaches()) FAIL_CHECK("a limit of vulkan-minimum was broken: " << breach);
}

TEST_CASE("on a device with 4 storage buffers per stage, depthwise runs its 4-binding builds where its chunks "
          "are too large for texel views",
          "[limits][gpu]") {
    auto context = context_with_limits("vulkan-minimum");
    if (!context) return;
    LimitAuditor auditor(*context);
    // One image of x (16 x 70 x 70 floats) is above vulkan-minimum's 65,536 texel elements.
    const auto p = conv_problem(2, 16, 70, 70, 16, 1, 16);
    REQUIRE(p.C * p.H * p.W > 65536);
    check_every_pass(*context, p, {Algorithm::Depthwise}, 88000);
    CHECK((auditor.ran("depthwise_forward_ssbo4") || auditor.ran("depthwise_forward_c4_ssbo4")));
    CHECK((auditor.ran("depthwise_backward_filter_ssbo4") || auditor.ran("depthwise_backward_filter_c4_ssbo4")));
    for (const auto& breach : auditor.breaches()) FAIL_CHECK("a limit of vulkan-minimum was broken: " << breach);
}

TEST_CASE("a transposed convolution with a bias into an output spread over buffers of 64 KiB",
          "[limits][paging][gpu]") {
    PagedContext paged;
    auto& context = paged.context;
    if (!context) return;
    LimitAuditor auditor(*context);
    vkconv::ConvTransposeProblem t;
    t.N = 5, t.C = 4, t.H = 20, t.R = 3, t.S = 3;
    t.stride_h = t.stride_w = 2;
    t.pad_top = t.pad_bottom = t.pad_left = t.pad_right = 1;
    t.output_padding_h = 1;
    t.has_bias = true;
    // Output images of 3 x 40 x 37 floats (3 a page), then of 6 x 40 x 79 (more than a page each: pages of
    // channel planes or rows that end inside images).
    for (const auto& [K, W] : {std::pair<int64_t, int64_t>{3, 19}, {6, 40}})
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            t.K = K, t.W = W;
            t.layout = layout;
            const vkconv::ConvProblem q = t.convolution();  // the convolution whose backward-data it is
            REQUIRE(uint64_t(q.input_elements()) * 4 > kPageBytes);
            const auto in = vkt::random_values(size_t(q.output_elements()), 86000);
            const auto w = vkt::random_values(size_t(q.filter_elements()), 86001);
            const auto b = vkt::random_values(size_t(t.K), 86002);
            const auto tin = vkconv::Tensor::from_host(*context, t.input_shape(), in);
            const auto tw = vkconv::Tensor::from_host(*context, t.filter_shape(), w);
            const auto tb = vkconv::Tensor::from_host(*context, t.bias_shape(), b);
            vkconv::Tensor out(*context, t.output_shape());
            const auto conv = vkconv::reference::backward_data(q, in, w);
            const auto magnitude = vkconv::reference::backward_data(q, vkt::absolute(in), vkt::absolute(w));
            std::vector<double> expected(conv.size()), bound(conv.size());
            for (size_t i = 0; i < conv.size(); ++i) {
                const size_t k = layout == Layout::NCHW ? i / size_t(q.H * q.W) % size_t(q.C) : i % size_t(q.C);
                expected[i] = conv[i] + b[k];
                bound[i] = magnitude[i] + std::fabs(b[k]);
            }
            for (Algorithm algorithm :
                 {Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec, Algorithm::ImplicitGemm}) {
                INFO(q.str() << " " << vkconv::to_string(algorithm));
                out.upload(vkt::poison(q.input_elements()));
                vkconv::conv_transpose(*context, t, tin, tw, &tb, out, algorithm);
                vkt::check_close(out.download(), expected, bound, q.filters_per_group() * q.R * q.S + 1,
                                 "conv_transpose in pages");
            }
        }
    auditor.check_pool();
    for (const auto& breach : auditor.breaches()) FAIL_CHECK("a limit of 64 KiB buffers was broken: " << breach);
}
