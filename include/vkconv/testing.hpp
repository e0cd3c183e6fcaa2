// Hooks for tests of vkconv and of the applications around it: they provoke what a real device cannot be
// made to do on demand (a lost device, failed allocations, limits small enough for small problems to reach)
// and expose counters a test asserts on. Not part of the API an application computes with; vkconv.hpp does
// not include this header.
#pragma once

#include <cstdint>

#include "vkconv/context.hpp"
#include "vkconv/export.hpp"

namespace vkconv {
VKCONV_API_BEGIN

namespace testing {
// A context made as Context(options) makes it, with limits lower than the device's own imposed on top (after
// options.device_limits and options.max_buffer_bytes, so the smallest of each limit holds), so that tests
// make on small problems the splits that large ones need:
// - max_workgroups_per_dispatch: the per-dispatch workgroup count (0 = the device limit), for the dispatch
//   splitting of large problems;
// - max_storage_buffer_range: the device's maxStorageBufferRange (and maxTexelBufferElements to match) in
//   bytes (0 = as reported), as DeviceInfo then reports it, for chunking and the paths of tensors too large
//   to bind.
Context make_context(const ContextOptions& options, uint32_t max_workgroups_per_dispatch,
                     uint64_t max_storage_buffer_range);

// Makes the `nth` device call from now (1 = the next) return VK_ERROR_DEVICE_LOST instead of reaching the
// driver, where a real loss arrives: a queue submission, a fence wait or status query, or a memory mapping
// (the calls device_calls() counts). The call then fails exactly as with a real loss: Error(DeviceLost),
// and the context is lost for good. nth = 0 disarms. For tests of that path.
void inject_device_loss(Context& context, uint64_t nth);
// Submissions, fence waits and status queries, and memory mappings the context has made so far.
uint64_t device_calls(const Context& context);
// Makes the pool's `count` device-memory allocation attempts starting with the `nth` from now (1 = the
// next) fail as out of device memory, as a driver would; nth = 0 disarms. For tests of that path.
void inject_allocation_failures(Context& context, uint64_t nth, uint64_t count = 1);
// Vulkan objects vkconv has created on the context's device so far (device, buffers, memory, pipelines and
// their layouts, shader modules, command buffers, fences, semaphores, descriptor and query pools, views).
// A steady-state pass adds none.
uint64_t vulkan_objects_created(const Context& context);
// Of those, the ones not destroyed yet: what a long run must not let grow.
uint64_t vulkan_objects_alive(const Context& context);
}  // namespace testing

VKCONV_API_END
}  // namespace vkconv
