// Hooks for tests of vkconv and of the applications around it: they provoke what a real device cannot be
// made to do on demand (a lost device, failed allocations) and expose counters a test asserts on. Not
// part of the API an application computes with; vkconv.hpp does not include this header.
#pragma once

#include <cstdint>

#include "vkconv/context.hpp"
#include "vkconv/export.hpp"

namespace vkconv {
VKCONV_API_BEGIN

namespace testing {
// Marks the context's device as lost, exactly as a VK_ERROR_DEVICE_LOST from the driver would: every later
// call on it throws Error(DeviceLost). Only for tests of that path; a real loss cannot be provoked portably.
void simulate_device_loss(Context& context);
// Makes the pool's `count` device-memory allocation attempts starting with the `nth` from now (1 = the
// next) fail as out of device memory, as a driver would; nth = 0 disarms. For tests of that path.
void inject_allocation_failures(Context& context, uint64_t nth, uint64_t count = 1);
// Vulkan objects vkconv has created on the context's device so far (buffers, memory, pipelines, command
// buffers, fences, descriptor and query pools, views). A steady-state pass adds none.
uint64_t vulkan_objects_created(const Context& context);
}  // namespace testing

VKCONV_API_END
}  // namespace vkconv
