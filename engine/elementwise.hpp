// One invocation per element: dispatches `total` invocations of a 1-D shader in as many dispatches as the
// device's workgroup-count limit needs. The shader's push constants end with {uint base, count}: the
// dispatch covers elements [base, base + count).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>

#include "command_stream.hpp"

namespace vkconv::detail {

constexpr uint32_t kElementwiseWorkgroup = 64;  // within the spec's 128-invocation minimum

template <typename Push>
void dispatch_elements(ContextImpl& context, CommandStream& stream, const Pipeline& pipeline,
                       std::span<const Binding> bindings, Push push, uint64_t total) {
    // Shaders index elements in 32 bits: a larger pass must be split by its caller, never wrap.
    if (total > UINT32_MAX)
        throw Error(ErrorCategory::Unsupported, "a pass of " + std::to_string(total) +
                                                    " elements exceeds 32-bit element indexing (split it smaller)");
    const uint64_t per_dispatch = uint64_t{context.max_workgroups(0)} * kElementwiseWorkgroup;
    for (uint64_t base = 0; base < total; base += per_dispatch) {
        const uint64_t count = std::min(per_dispatch, total - base);
        push.base = static_cast<uint32_t>(base);
        push.count = static_cast<uint32_t>(count);
        stream.dispatch(pipeline, bindings, &push,
                        static_cast<uint32_t>((count + kElementwiseWorkgroup - 1) / kElementwiseWorkgroup));
    }
}

}  // namespace vkconv::detail
