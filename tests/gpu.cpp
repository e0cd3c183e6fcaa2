#include "gpu.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace vkt {
namespace {

int g_validation_errors = 0;
std::string g_skip_reason;
std::unique_ptr<vkconv::Context> g_shared;
bool g_shared_tried = false;

}  // namespace

vkconv::ContextOptions test_options() {
    vkconv::ContextOptions options;
    options.validation = !validation_opted_out();
    options.on_message = [](vkconv::MessageSeverity severity, std::string_view text) {
        if (severity == vkconv::MessageSeverity::Error) {
            ++g_validation_errors;
            std::fprintf(stderr, "VALIDATION ERROR: %.*s\n", static_cast<int>(text.size()), text.data());
        } else {
            std::fprintf(stderr, "validation warning: %.*s\n", static_cast<int>(text.size()), text.data());
        }
    };
    return options;
}

bool validation_opted_out() {
    const char* value = std::getenv("VKCONV_TEST_WITHOUT_VALIDATION");
    return value && std::string(value) == "1";
}

void require_validation(const vkconv::Context& context) {
    if (context.validation_enabled() || validation_opted_out()) return;
    FAIL(
        "VK_LAYER_KHRONOS_validation is not installed, and the suite requires it: install the Debian package "
        "vulkan-validationlayers (or set VKCONV_TEST_WITHOUT_VALIDATION=1 to run the suite without validation)");
}

namespace {

// The context `make` returns (made with `options`); nullptr (skipped) without a device.
template <typename Make>
std::unique_ptr<vkconv::Context> checked_context(const vkconv::ContextOptions& options, Make make) {
    std::unique_ptr<vkconv::Context> context;
    try {
        context = std::make_unique<vkconv::Context>(make());
    } catch (const vkconv::Error& e) {
        if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
        mark_skipped(e.what());
        return nullptr;
    }
    if (options.validation.value_or(false)) require_validation(*context);
    return context;
}

}  // namespace

std::unique_ptr<vkconv::Context> fresh_context(vkconv::ContextOptions options) {
    return checked_context(options, [&] { return vkconv::Context(options); });
}

std::unique_ptr<vkconv::Context> fresh_context(vkconv::ContextOptions options, const LoweredLimits& limits) {
    return checked_context(options, [&] {
        return vkconv::testing::make_context(options, limits.max_workgroups_per_dispatch,
                                             limits.max_storage_buffer_range);
    });
}

vkconv::Context* shared_context() {
    if (!g_shared_tried) {
        g_shared_tried = true;
        g_shared = fresh_context();
    }
    if (!g_shared) mark_skipped(g_skip_reason.empty() ? "no Vulkan device" : g_skip_reason);
    return g_shared.get();
}

void release_shared_context() {
    g_shared.reset();
}

void mark_skipped(const std::string& reason) {
    g_skip_reason = reason;
}
void skip_case(const std::string& reason) {
    WARN("skipped: " << reason);
    std::printf("SKIPPED (this case): %s\n", reason.c_str());
    mark_skipped(reason);
}
bool skipped() {
    return !g_skip_reason.empty();
}
const std::string& skip_reason() {
    return g_skip_reason;
}
int validation_errors() {
    return g_validation_errors;
}

std::vector<float> random_values(size_t count, uint32_t seed, float low, float high) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(low, high);
    std::vector<float> values(count);
    for (float& v : values) v = dist(rng);
    return values;
}

void check_close(std::span<const float> gpu, std::span<const double> reference, std::span<const double> magnitude,
                 int64_t reduction_length, const std::string& what) {
    INFO(what);
    REQUIRE(gpu.size() == reference.size());
    REQUIRE(magnitude.size() == reference.size());
    const double u = std::ldexp(1.0, -24);
    const double factor = static_cast<double>(reduction_length + 2) * u;
    size_t bad = gpu.size();
    double worst_ratio = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const double error = std::fabs(static_cast<double>(gpu[i]) - reference[i]);
        const double bound = factor * magnitude[i] + 1e-30;
        if (!(error <= bound)) {  // NaN fails too
            bad = std::min(bad, i);
            worst_ratio = std::max(worst_ratio, error / bound);
        }
    }
    if (bad != gpu.size()) {
        INFO("first bad index " << bad << ": gpu " << gpu[bad] << " reference " << reference[bad] << " bound "
                                << factor * magnitude[bad] << " (worst error/bound " << worst_ratio << ")");
        FAIL("GPU result differs from the reference beyond the fp32 summation bound");
    }
}

void check_exact(std::span<const float> gpu, std::span<const double> reference, std::span<const double> magnitude,
                 const std::string& what) {
    INFO(what);
    REQUIRE(gpu.size() == reference.size());
    for (double m : magnitude) REQUIRE(m < 16777216.0);  // 2^24: every partial sum is exact in fp32
    size_t wrong = 0, first = gpu.size();
    for (size_t i = 0; i < gpu.size(); ++i)
        if (!(double(gpu[i]) == reference[i])) {
            ++wrong;
            first = std::min(first, i);
        }
    if (wrong) {
        INFO(wrong << " of " << gpu.size() << " values differ; first at " << first << ": gpu " << gpu[first]
                   << ", exact " << reference[first]);
        FAIL("an exact integer sum came out different: a term was lost, doubled or misplaced");
    }
}

}  // namespace vkt
