// Counters of the device-memory pool, and a scoped peak measurement.
//
// Every device buffer vkconv makes comes from its context's pool (engine/memory/buffer_pool.hpp describes the
// design). The counters are exact: "in use" is the sum of live allocations, each rounded up to the pool's
// alignment; "reserved" is what the pool holds from the driver. Host-visible staging memory used for
// uploads and downloads is not device memory of a tensor and is counted apart (staging_bytes).
#pragma once

#include <cstdint>
#include <memory>

#include "vkconv/export.hpp"

namespace vkconv {
VKCONV_API_BEGIN

class Context;

struct PoolStats {
    uint64_t in_use = 0;       // bytes of live allocations (each rounded up to `alignment`)
    uint64_t peak_in_use = 0;  // highest in_use since creation or reset_peak()
    uint64_t reserved = 0;     // bytes of device memory held from the driver
    uint64_t peak_reserved = 0;
    uint64_t driver_allocations = 0;  // vkAllocateMemory calls made for the pool so far
    uint64_t live_blocks = 0;         // device memory objects held now
    uint64_t live_allocations = 0;
    uint64_t alignment = 0;      // every allocation's offset and size are multiples of this
    uint64_t staging_bytes = 0;  // host-visible staging memory held for transfers

    // Bytes one allocation of `bytes` adds to in_use.
    uint64_t rounded(uint64_t bytes) const {
        const uint64_t b = bytes == 0 ? 1 : bytes;
        return (b + alignment - 1) / alignment * alignment;
    }
};

// Measures the peak of the pool's in-use bytes from construction to peak(), without disturbing the
// context's own peak counter or other scopes (they nest).
class PeakScope {
public:
    explicit PeakScope(Context& context);
    ~PeakScope();
    PeakScope(const PeakScope&) = delete;
    PeakScope& operator=(const PeakScope&) = delete;

    uint64_t peak() const;                // highest in_use seen since construction
    uint64_t baseline() const;            // in_use at construction
    uint64_t peak_reserved() const;       // highest reserved (device memory held from the driver) since construction
    uint64_t driver_allocations() const;  // vkAllocateMemory calls the pool made since construction

private:
    struct State;
    std::shared_ptr<State> state_;
};

VKCONV_API_END
}  // namespace vkconv
