// One invocation per element: dispatches `total` invocations of a 1-D shader in as many dispatches as the
// device's workgroup-count limit needs. The shader's push constants end with {uint base, count}: the
// dispatch covers elements [base, base + count).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>

#include "vkconv/error.hpp"
#include "vulkan/command_stream.hpp"

namespace vkconv::detail {

constexpr uint32_t kElementwiseWorkgroup = 64;  // within the spec's 128-invocation minimum

// What one element (one invocation) computes, for a plan's listing (CommandStream::note_work): FLOPs, and
// the multiply-adds or additions it runs one after the other.
struct ElementWork {
    double flops = 0;
    uint64_t serial = 0;
};

// `macs` multiply-adds spread evenly over `elements` invocations.
inline ElementWork macs_over(uint64_t macs, uint64_t elements) {
    if (elements == 0) return {};
    return {2.0 * double(macs) / double(elements), (macs + elements - 1) / elements};
}

// `push` holds the shader's push constants; each dispatch's {base, count} go in the two uint32 at
// `range_offset` bytes.
inline void dispatch_elements(CommandStream& stream, const Pipeline& pipeline, std::span<const Binding> bindings,
                              std::span<std::byte> push, size_t range_offset, uint64_t total, ElementWork work = {}) {
    // Shaders index elements in 32 bits: a larger pass must be split by its caller, never wrap.
    if (total > UINT32_MAX)
        throw Error(ErrorCategory::Unsupported, "a pass of " + std::to_string(total) +
                                                    " elements exceeds 32-bit element indexing (split it smaller)");
    const uint64_t per_dispatch = uint64_t{stream.device().max_workgroups(0)} * kElementwiseWorkgroup;
    for (uint64_t base = 0; base < total; base += per_dispatch) {
        const uint32_t range[2] = {static_cast<uint32_t>(base),
                                   static_cast<uint32_t>(std::min(per_dispatch, total - base))};
        std::memcpy(push.data() + range_offset, range, sizeof range);
        stream.note_work(static_cast<uint64_t>(work.flops * range[1] + 0.5), work.serial);
        stream.dispatch(pipeline, bindings, push.data(),
                        static_cast<uint32_t>((range[1] + kElementwiseWorkgroup - 1) / kElementwiseWorkgroup));
    }
}

// The same with a push-constant struct whose members `base` and `count` come one after the other.
template <typename Push>
void dispatch_elements(CommandStream& stream, const Pipeline& pipeline, std::span<const Binding> bindings, Push push,
                       uint64_t total, ElementWork work = {}) {
    static_assert(std::is_standard_layout_v<Push> && offsetof(Push, count) == offsetof(Push, base) + 4);
    dispatch_elements(stream, pipeline, bindings, std::as_writable_bytes(std::span<Push>(&push, 1)),
                      offsetof(Push, base), total, work);
}

}  // namespace vkconv::detail
