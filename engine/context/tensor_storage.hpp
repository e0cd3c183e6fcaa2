// The device memory behind a Tensor: pool allocations that go back to the pool with the last owner, or
// a range of the application's buffer (wrap_buffer), which vkconv never frees.
//
// A tensor larger than the device's largest buffer is stored in pages (memory/paging.hpp): page i holds
// the tensor's bytes [i * page_bytes, (i + 1) * page_bytes). Every other tensor is one page.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "context/access.hpp"
#include "context/context_impl.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv::detail {

struct TensorStorage {
    std::shared_ptr<ContextImpl> context;
    // For an external buffer: one page with no block, the application's buffer and range.
    std::vector<PoolAllocation> pages;
    uint64_t page_bytes = UINT64_MAX;  // bytes of the tensor per page (all but the last full)
    uint32_t element_bytes = 4;        // of its DataType
    bool external = false;
    VkBufferUsageFlags usage = 0;  // external: the usage the application declared
    ~TensorStorage() {
        const auto lock = serialise(*context);  // a tensor may die on any thread
        if (external)
            context->device->forget_foreign_buffer(pages.front().buffer);
        else
            for (PoolAllocation& page : pages) context->pool->release(page);
    }
};

// The part of a tensor (or view) in one page: the pool range from its first byte (its size the piece's
// bytes rounded up to the pool alignment, never past the page's end), and the elements it holds.
struct TensorPiece {
    PoolAllocation allocation;
    uint64_t first_element = 0, elements = 0;
};

// The pieces of a non-empty tensor or view, in element order: one unless it spans several pages.
inline std::vector<TensorPiece> pieces_of(const Tensor& tensor) {
    const TensorStorage& storage = *storage_of(tensor);
    const uint64_t begin = tensor.byte_offset(), end = begin + tensor.bytes();
    std::vector<TensorPiece> pieces;
    for (uint64_t byte = begin; byte < end;) {
        // (One page: page_bytes is UINT64_MAX, so page 0 from byte 0 to the end.)
        const uint64_t page = byte / storage.page_bytes, page_start = page * storage.page_bytes;
        const uint64_t page_end = std::min(end, page_start + storage.page_bytes);
        PoolAllocation a = storage.pages[page];
        const uint64_t offset = byte - page_start, bytes = page_end - byte;
        a.size = std::min(storage.context->pool->round(bytes), a.size - offset);
        a.offset += offset;
        pieces.push_back({a, (byte - begin) / storage.element_bytes, bytes / storage.element_bytes});
        byte = page_end;
    }
    return pieces;
}

// Error(Unsupported) naming `role` and `user` for a 16-bit tensor, for calls that take fp32 tensors only
// (an application's own kernels declare float bindings).
inline void require_f32(const Tensor& tensor, std::string_view role, std::string_view user) {
    if (tensor.data_type() == DataType::F32) return;
    throw Error(ErrorCategory::Unsupported, std::string(user) + " takes f32 tensors; " + std::string(role) +
                                                " is " + to_string(tensor.data_type()) + " (shape " +
                                                shape_string(tensor.shape()) + ")");
}

// The pool range a tensor (or a view) in one page covers: the allocation moved to the view's first byte,
// its size the view's bytes rounded up to the pool alignment but never past the allocation's end.
// Error(Unsupported) for a tensor spread over several pages: `user` (a call that binds a tensor whole)
// takes only tensors that fit one buffer.
inline PoolAllocation allocation_of(const Tensor& tensor, const char* user = "this call") {
    std::vector<TensorPiece> pieces = pieces_of(tensor);
    if (pieces.size() != 1)
        throw Error(ErrorCategory::Unsupported,
                    std::string(user) + " takes tensors in one buffer; one of shape " + shape_string(tensor.shape()) +
                        " (" + std::to_string(tensor.bytes()) + " bytes) spans " + std::to_string(pieces.size()) +
                        " buffers, this device's largest holding " +
                        std::to_string(storage_of(tensor)->context->pool->largest_allocation()) + " bytes");
    return pieces.front().allocation;
}

// True when two non-empty tensors share at least one byte (views of one allocation may not, nor may two
// tensors over one application buffer).
inline bool overlaps(const Tensor& a, const Tensor& b) {
    if (a.empty() || b.empty()) return false;
    for (const TensorPiece& x : pieces_of(a))
        for (const TensorPiece& y : pieces_of(b)) {
            if (x.allocation.buffer != y.allocation.buffer) continue;
            const uint64_t a0 = x.allocation.offset, b0 = y.allocation.offset;
            const uint64_t a_bytes = x.elements * element_bytes(a.data_type());
            const uint64_t b_bytes = y.elements * element_bytes(b.data_type());
            if (a0 < b0 + b_bytes && b0 < a0 + a_bytes) return true;
        }
    return false;
}

}  // namespace vkconv::detail
