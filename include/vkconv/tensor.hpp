// vkconv::Tensor — a float32 array in device memory, allocated from its context's pool.
//
// A tensor has a shape (any rank) and no layout of its own: the ConvProblem it is used with says how its
// dimensions are ordered. Its memory goes back to the pool when the last copy dies (copies share it).
//
// A view (images()) is a Tensor over a run of a tensor's leading dimension: it shares the memory, keeps
// it alive, and is accepted wherever a Tensor is (passes, kernels, upload, download). It may start at any
// entry: where its first byte is off the device's storage-buffer offset alignment (PoolStats::alignment),
// a pass binds from the alignment below it and indexes from the view's first element (a user Kernel
// opts in with KernelDesc::element_offsets).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "vkconv/context.hpp"
#include "vkconv/error.hpp"
#include "vkconv/export.hpp"
#include "vkconv/problem.hpp"

namespace vkconv {

namespace detail {
struct TensorStorage;
struct Access;
}  // namespace detail

VKCONV_API_BEGIN

class Tensor {
public:
    Tensor() = default;
    // Uninitialised device memory for `shape` (every dimension > 0).
    Tensor(Context& context, const Shape& shape);
    // Allocates and uploads `values` (their count must equal the shape's element count).
    static Tensor from_host(Context& context, const Shape& shape, std::span<const float> values);

    void upload(std::span<const float> values);
    std::vector<float> download() const;
    // Downloads into the caller's memory (its count must equal the element count): no copy beyond staging.
    void download(std::span<float> values) const;

    bool empty() const { return !storage_; }
    const Shape& shape() const { return shape_; }
    int64_t elements() const { return shape_elements(shape_); }
    uint64_t bytes() const { return static_cast<uint64_t>(elements()) * sizeof(float); }

    // A view of entries [first, first + count) of dimension 0 (images of an NCHW or NHWC tensor, frames
    // of a video): shape {count, shape[1], ...}. Error(InvalidArgument) for an empty tensor or a range
    // outside dimension 0.
    Tensor images(int64_t first, int64_t count) const;
    // Bytes from the start of the underlying allocation to this tensor's first element (0 unless a view).
    uint64_t byte_offset() const { return offset_; }
    // True for a tensor over the application's buffer (wrap_buffer in interop.hpp).
    bool external() const;

private:
    friend struct detail::Access;
    Shape shape_;
    std::shared_ptr<detail::TensorStorage> storage_;
    uint64_t offset_ = 0;
};

VKCONV_API_END
}  // namespace vkconv
