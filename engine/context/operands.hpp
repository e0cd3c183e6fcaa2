// The device memory a pass works on (a range of a pool allocation, or of several for a paged tensor), and
// windows into it.
//
// A window binds part of a tensor (the images of one chunk) without exceeding maxStorageBufferRange:
// its descriptor offset is rounded down to the pool alignment (which covers the storage and texel offset
// alignments) and the shader adds the remaining `delta` floats itself.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "context/context_impl.hpp"
#include "memory/buffer_pool.hpp"
#include "vkconv/problem.hpp"
#include "vulkan/command_stream.hpp"

namespace vkconv::detail {

// A binding's size rounded up to whole 32-bit words: a kernel that reads 16-bit elements in packed words
// reads the word holding the last one. Pool allocations are multiples of the alignment, so the word is theirs.
inline uint64_t whole_words(uint64_t bytes) {
    return (bytes + 3) / 4 * 4;
}

// Floats that hold `count` fp32 values followed by padding to the next `alignment` bytes: room for an fp32
// sum at a workspace's start with another binding (which must start aligned) after it.
inline uint64_t aligned_floats(uint64_t count, uint64_t alignment) {
    return (count * 4 + alignment - 1) / alignment * alignment / 4;
}

struct Window {
    BufferRange range;
    uint64_t delta = 0;  // elements from range.offset to the window's first element
};

// One page of a paged operand: elements [begin, end) of the operand lie in `allocation` (whose offset is
// on the pool alignment), element `begin` at element `first` from its offset.
struct OperandPage {
    PoolAllocation allocation;
    uint64_t first = 0, begin = 0, end = 0;
};

// A tensor (or workspace) as a pass binds it. The allocation starts on the pool alignment; a view whose
// first byte is off the alignment (Tensor::images at any entry) keeps the aligned start and carries the
// distance to its element 0 in `first`, which every kernel binding it adds to its indices.
//
// A paged operand (a tensor larger than one buffer) also lists its pages; `allocation` is its first
// page's. It cannot be bound whole: passes bind windows of it that lie inside one page (window() refuses
// any other), or run on slices of it that do (slice()).
// Counts and offsets are in elements of element_bytes (4 for fp32 and for every workspace, 2 for a 16-bit
// tensor); the names say "floats" from before there were other types.
struct Operand {
    PoolAllocation allocation;
    uint64_t floats = 0;
    uint64_t first = 0;  // elements from allocation.offset to element 0
    uint32_t element_bytes = 4;
    std::shared_ptr<const std::vector<OperandPage>> pages;  // null: one page
    explicit operator bool() const { return static_cast<bool>(allocation); }
    bool paged() const { return pages != nullptr; }
    // The whole operand: the aligned range up to its last element, and `first` as the window's delta.
    Window whole() const {
        if (paged())
            throw Error(ErrorCategory::Unsupported,
                        "a tensor of " + std::to_string(floats * element_bytes) + " bytes spans " + std::to_string(pages->size()) +
                            " buffers and cannot be bound whole by this kernel");
        return {{allocation.buffer, allocation.offset, whole_words((first + floats) * element_bytes)}, first};
    }
};

// An operand of a tensor's pool range `allocation` (allocation_of), its start aligned down to `alignment`.
inline Operand operand_of(PoolAllocation allocation, uint64_t floats, uint64_t alignment, uint32_t element_bytes = 4) {
    const uint64_t aligned = allocation.offset / alignment * alignment;
    Operand op;
    op.element_bytes = element_bytes;
    op.first = (allocation.offset - aligned) / element_bytes;
    allocation.size += allocation.offset - aligned;
    allocation.offset = aligned;
    op.allocation = allocation;
    op.floats = floats;
    return op;
}

// The page of `operand` holding elements [first, first + count), or null when they span two pages (or
// the operand has one page).
inline const OperandPage* page_holding(const Operand& operand, uint64_t first, uint64_t count) {
    if (!operand.paged()) return nullptr;
    for (const OperandPage& page : *operand.pages)
        if (first >= page.begin && first < page.end) return first + count <= page.end ? &page : nullptr;
    return nullptr;
}

// True when elements [first, first + count) lie in one page of `operand` (always, for one page).
inline bool in_one_page(const Operand& operand, uint64_t first, uint64_t count) {
    return !operand.paged() || page_holding(operand, first, count) != nullptr;
}

// Elements [first, first + count) of `operand`, bound from the alignment at or below the first of them.
// Of a paged operand they must lie in one page.
inline Window window(const Operand& operand, uint64_t first, uint64_t count, uint64_t alignment) {
    PoolAllocation allocation = operand.allocation;
    uint64_t float_of_first = operand.first + first;
    if (operand.paged()) {
        const OperandPage* page = page_holding(operand, first, count);
        if (!page)
            throw Error(ErrorCategory::Unsupported, "elements [" + std::to_string(first) + ", " +
                                                        std::to_string(first + count) +
                                                        ") of a paged tensor span two of its buffers");
        allocation = page->allocation;
        float_of_first = page->first + (first - page->begin);
    }
    const uint64_t bytes = operand.element_bytes;
    const uint64_t byte = float_of_first * bytes;
    const uint64_t aligned = byte / alignment * alignment;
    Window w;
    w.range = {allocation.buffer, allocation.offset + aligned, whole_words(byte - aligned + count * bytes)};
    w.delta = (byte - aligned) / bytes;
    return w;
}

// Elements [first, first + count) of `operand` as an operand of their own: one page (starting on the
// alignment at or below the first of them) where they lie in one, else the pages they span.
inline Operand slice(const Operand& operand, uint64_t first, uint64_t count, uint64_t alignment) {
    if (!operand || count == 0) return {};
    const uint64_t bytes = operand.element_bytes;
    auto one_page = [&](PoolAllocation allocation, uint64_t float_of_first, uint64_t floats) {
        const uint64_t byte = float_of_first * bytes, aligned = byte / alignment * alignment;
        Operand op;
        op.element_bytes = operand.element_bytes;
        op.allocation = allocation;
        op.allocation.offset += aligned;
        op.allocation.size = whole_words(byte - aligned + floats * bytes);
        op.first = (byte - aligned) / bytes;
        op.floats = floats;
        return op;
    };
    if (!operand.paged()) return one_page(operand.allocation, operand.first + first, count);
    if (const OperandPage* page = page_holding(operand, first, count))
        return one_page(page->allocation, page->first + (first - page->begin), count);
    auto pages = std::make_shared<std::vector<OperandPage>>();
    for (const OperandPage& page : *operand.pages) {
        const uint64_t begin = std::max(page.begin, first), end = std::min(page.end, first + count);
        if (begin >= end) continue;
        const Operand part = one_page(page.allocation, page.first + (begin - page.begin), end - begin);
        pages->push_back({part.allocation, part.first, begin - first, end - first});
    }
    Operand op;
    op.element_bytes = operand.element_bytes;
    op.allocation = pages->front().allocation;
    op.first = pages->front().first;
    op.floats = count;
    op.pages = std::move(pages);
    return op;
}

}  // namespace vkconv::detail
