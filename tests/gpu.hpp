// Test helpers for GPU cases: a shared validated context, skip-when-no-device, tolerance checks.
//
// Every context the suite makes has VK_LAYER_KHRONOS_validation on and routes its messages here: any
// validation error makes the test binary exit non-zero (see test_main.cpp), so the test that provoked it
// fails in ctest. A missing layer fails the test too, unless VKCONV_TEST_WITHOUT_VALIDATION=1. Without a Vulkan device,
// GPU tests return early and the binary exits with kSkipReturnCode, which ctest reports as skipped (SKIP_RETURN_CODE),
// never as a pass.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "vkconv/testing.hpp"
#include "vkconv/vkconv.hpp"

namespace vkt {

constexpr int kSkipReturnCode = 77;

// Options every test context starts from: validation on, messages counted.
vkconv::ContextOptions test_options();
// The suite requires VK_LAYER_KHRONOS_validation: a context made with validation requested but running
// without it FAILs the test, naming the package, unless VKCONV_TEST_WITHOUT_VALIDATION=1 opts out.
bool validation_opted_out();
void require_validation(const vkconv::Context& context);
// The process-wide context, created on first use; nullptr (and the test marked skipped) without a device.
vkconv::Context* shared_context();
// Destroys the shared context, so messages the validation layer prints at teardown (leaked objects)
// are counted before the runner decides its exit code.
void release_shared_context();
// A fresh context with `options` layered on test_options(); nullptr (skipped) without a device.
std::unique_ptr<vkconv::Context> fresh_context(vkconv::ContextOptions options = test_options());
// Limits below the device's own (testing::make_context's arguments; 0 = the device's own).
struct LoweredLimits {
    uint32_t max_workgroups_per_dispatch = 0;
    uint64_t max_storage_buffer_range = 0;
};
// The same with `limits` below the device's own (testing::make_context), so small problems take the splits
// large ones need: fresh_context(test_options(), {.max_storage_buffer_range = 4096}).
std::unique_ptr<vkconv::Context> fresh_context(vkconv::ContextOptions options, const LoweredLimits& limits);

void mark_skipped(const std::string& reason);
// Marks the running test case as skipped on this device, with the reason printed: the test binary then exits
// with kSkipReturnCode (when nothing failed), so ctest lists the case as skipped, never as passed.
void skip_case(const std::string& reason);
bool skipped();
const std::string& skip_reason();
int validation_errors();

std::vector<float> random_values(size_t count, uint32_t seed, float low = -1.0f, float high = 1.0f);

// Checks a GPU result against the double-precision reference with the worst-case bound of recursive
// fp32 summation: |gpu - ref| <= (n + 2) * u * sum|terms|, where n is the reduction length, u = 2^-24
// and sum|terms| is the reference computed on absolute values (`magnitude`). Reports the first
// offending index with the problem description.
void check_close(std::span<const float> gpu, std::span<const double> reference, std::span<const double> magnitude,
                 int64_t reduction_length, const std::string& what);

// Checks a GPU result for equality with the reference, for data that keep every sum exact: nonzero integers small
// enough that every product and partial sum is an integer below 2^24, exact in fp32 in any order. `magnitude` (the
// reference on |operands|) proves it: each value must be below 2^24. One lost, doubled or misplaced term fails.
// Reports how many values differ and the first, with `what`.
void check_exact(std::span<const float> gpu, std::span<const double> reference, std::span<const double> magnitude,
                 const std::string& what);

}  // namespace vkt

// Gets the shared context into `name`, or returns from the test case when there is no device.
#define VKT_REQUIRE_CONTEXT(name)                  \
    vkconv::Context* name = vkt::shared_context(); \
    if (!name) return
