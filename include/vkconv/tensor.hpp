// vkconv::Tensor — an array in device memory, allocated from its context's pool, of fp32 or of 16-bit
// floats (DataType, problem.hpp: F16 or BF16), which take half the memory.
//
// Host data is fp32 or, for a 16-bit tensor, its own 16-bit values: fp32 values uploaded to a 16-bit
// tensor are narrowed (to nearest, ties to even), and a 16-bit tensor downloads as fp32 exactly or as its
// 16-bit values. The passes, gemm and kernels take fp32 tensors (Error(Unsupported) naming a 16-bit one).
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
    // Uninitialised device memory for `shape` (every dimension > 0) of `type`.
    Tensor(Context& context, const Shape& shape, DataType type = DataType::F32);
    // Allocates and uploads `values` (their count must equal the shape's element count), narrowed to `type`.
    static Tensor from_host(Context& context, const Shape& shape, std::span<const float> values,
                            DataType type = DataType::F32);
    // A 16-bit tensor (`type` F16 or BF16) from its own values, as they are.
    static Tensor from_host(Context& context, const Shape& shape, std::span<const uint16_t> values, DataType type);

    // fp32 values, narrowed to a 16-bit tensor's type.
    void upload(std::span<const float> values);
    // A 16-bit tensor's own values, as they are (Error(InvalidArgument) for an fp32 tensor).
    void upload(std::span<const uint16_t> values);
    std::vector<float> download() const;  // as fp32 (a 16-bit tensor's values widened, exactly)
    // Downloads into the caller's memory (its count must equal the element count): no copy beyond staging
    // for fp32; a 16-bit tensor's values widened to fp32 on the way.
    void download(std::span<float> values) const;
    // A 16-bit tensor's own values (Error(InvalidArgument) for an fp32 tensor).
    void download(std::span<uint16_t> values) const;

    bool empty() const { return !storage_; }
    const Shape& shape() const { return shape_; }
    DataType data_type() const { return type_; }
    int64_t elements() const { return shape_elements(shape_); }
    uint64_t bytes() const { return static_cast<uint64_t>(elements()) * element_bytes(type_); }

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
    // Error(InvalidArgument) for an empty tensor, 16-bit host values with an fp32 tensor, or `count` values
    // for a tensor of another element count.
    void check_host_values(const char* what, size_t count, DataType host) const;
    Shape shape_;
    DataType type_ = DataType::F32;
    std::shared_ptr<detail::TensorStorage> storage_;
    uint64_t offset_ = 0;
};

VKCONV_API_END
}  // namespace vkconv
