// Tensor: pool-backed device memory with upload and download.
#include "vkconv/tensor.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "context/tensor_storage.hpp"
#include "core/half.hpp"
#include "memory/paging.hpp"
#include "memory/staging.hpp"
#include "vkconv/interop.hpp"

namespace vkconv {

namespace {

// Elements converted at a time between fp32 and a 16-bit type: one staging buffer's worth, in host memory
// of its own.
constexpr uint64_t kConversionRun = detail::Staging::kMaxStagingBytes / 2;

void narrow_into(DataType type, std::span<const float> from, std::span<uint16_t> to) {
    if (type == DataType::F16)
        detail::fp16_from_floats(from, to);
    else
        detail::bf16_from_floats(from, to);
}

// Calls transfer(done, run) for each run of a piece's `elements` 16-bit elements converted at a time (elements
// [done, done + run)): the host memory a conversion takes stays bounded however large the tensor.
template <typename Transfer>
void for_each_run(uint64_t elements, Transfer&& transfer) {
    for (uint64_t done = 0; done < elements; done += kConversionRun)
        transfer(done, std::min<uint64_t>(elements - done, kConversionRun));
}

// A piece's allocation from its 16-bit element `done` on.
detail::PoolAllocation from_element(detail::PoolAllocation allocation, uint64_t done) {
    allocation.offset += done * 2, allocation.size -= done * 2;
    return allocation;
}

void widen_into(DataType type, std::span<const uint16_t> from, std::span<float> to) {
    if (type == DataType::F16)
        detail::floats_from_fp16(from, to);
    else
        detail::floats_from_bf16(from, to);
}

// The element count of a valid tensor shape; Error(InvalidArgument) naming what is wrong otherwise.
int64_t checked_elements(const Shape& shape) {
    if (shape.empty()) throw Error(ErrorCategory::InvalidArgument, "tensor shape is empty");
    int64_t elements = 1;
    for (int64_t d : shape) {
        if (d <= 0)
            throw Error(ErrorCategory::InvalidArgument,
                        "tensor shape " + shape_string(shape) + " has a dimension that is not positive");
        if (__builtin_mul_overflow(elements, d, &elements) || elements > (int64_t{1} << 60) / 4)
            throw Error(ErrorCategory::InvalidArgument, "tensor shape " + shape_string(shape) + " is too large");
    }
    return elements;
}

}  // namespace

Tensor::Tensor(Context& context, const Shape& shape, DataType type) : shape_(shape), type_(type) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    impl.device->throw_if_lost();
    const int64_t elements = checked_elements(shape);
    if (type != DataType::F32 && type != DataType::F16 && type != DataType::BF16)
        throw Error(ErrorCategory::InvalidArgument,
                    "tensor element type " + std::to_string(static_cast<int>(type)) + " is not a DataType");
    auto storage = std::make_shared<detail::TensorStorage>();
    storage->context = detail::Access::impl(context);
    storage->element_bytes = element_bytes(type);
    const uint64_t bytes = static_cast<uint64_t>(elements) * storage->element_bytes;
    // Larger than one buffer: pages of whole units (memory/paging.hpp), each its own pool allocation.
    const uint64_t largest = detail::testing_one_buffer_tensors ? UINT64_MAX : impl.pool->largest_allocation();
    const uint64_t page_elements = detail::page_elements_of(shape, largest, storage->element_bytes);
    if (!page_elements) {
        storage->pages.push_back(impl.pool->allocate(bytes));
    } else {
        storage->page_bytes = page_elements * storage->element_bytes;
        try {
            for (uint64_t at = 0; at < bytes; at += storage->page_bytes)
                storage->pages.push_back(impl.pool->allocate(std::min(storage->page_bytes, bytes - at)));
        } catch (...) {
            for (detail::PoolAllocation& page : storage->pages) impl.pool->release(page);
            storage->pages.clear();
            throw;
        }
    }
    storage_ = std::move(storage);
}

Tensor Tensor::from_host(Context& context, const Shape& shape, std::span<const float> values, DataType type) {
    Tensor tensor(context, shape, type);
    tensor.upload(values);
    return tensor;
}

Tensor Tensor::from_host(Context& context, const Shape& shape, std::span<const uint16_t> values, DataType type) {
    Tensor tensor(context, shape, type);
    tensor.upload(values);
    return tensor;
}

void Tensor::upload(std::span<const float> values) {
    check_host_values("upload", values.size(), DataType::F32);
    const auto lock = detail::serialise(*storage_->context);
    for (const detail::TensorPiece& piece : detail::pieces_of(*this)) {
        const float* first = values.data() + piece.first_element;
        if (type_ == DataType::F32) {
            storage_->context->staging->upload(piece.allocation, first, piece.elements * 4);
            continue;
        }
        std::vector<uint16_t> narrow(std::min<uint64_t>(piece.elements, kConversionRun));
        for_each_run(piece.elements, [&](uint64_t done, uint64_t run) {
            narrow_into(type_, std::span<const float>(first + done, run), std::span<uint16_t>(narrow.data(), run));
            storage_->context->staging->upload(from_element(piece.allocation, done), narrow.data(), run * 2);
        });
    }
}

void Tensor::upload(std::span<const uint16_t> values) {
    check_host_values("upload", values.size(), DataType::F16);
    const auto lock = detail::serialise(*storage_->context);
    for (const detail::TensorPiece& piece : detail::pieces_of(*this))
        storage_->context->staging->upload(piece.allocation, values.data() + piece.first_element, piece.elements * 2);
}

std::vector<float> Tensor::download() const {
    if (!storage_) throw Error(ErrorCategory::InvalidArgument, "download from an empty tensor");
    std::vector<float> values(static_cast<size_t>(elements()));
    download(values);
    return values;
}

void Tensor::download(std::span<float> values) const {
    check_host_values("download", values.size(), DataType::F32);
    const auto lock = detail::serialise(*storage_->context);
    for (const detail::TensorPiece& piece : detail::pieces_of(*this)) {
        float* first = values.data() + piece.first_element;
        if (type_ == DataType::F32) {
            storage_->context->staging->download(piece.allocation, first, piece.elements * 4);
            continue;
        }
        std::vector<uint16_t> narrow(std::min<uint64_t>(piece.elements, kConversionRun));
        for_each_run(piece.elements, [&](uint64_t done, uint64_t run) {
            storage_->context->staging->download(from_element(piece.allocation, done), narrow.data(), run * 2);
            widen_into(type_, std::span<const uint16_t>(narrow.data(), run), std::span<float>(first + done, run));
        });
    }
}

void Tensor::download(std::span<uint16_t> values) const {
    check_host_values("download", values.size(), DataType::F16);
    const auto lock = detail::serialise(*storage_->context);
    for (const detail::TensorPiece& piece : detail::pieces_of(*this))
        storage_->context->staging->download(piece.allocation, values.data() + piece.first_element,
                                             piece.elements * 2);
}

void Tensor::check_host_values(const char* what, size_t count, DataType host) const {
    const bool up = std::string_view(what) == "upload";
    if (!storage_)
        throw Error(ErrorCategory::InvalidArgument, up ? "upload to an empty tensor" : "download from an empty tensor");
    if (host != DataType::F32 && type_ == DataType::F32)
        throw Error(ErrorCategory::InvalidArgument, std::string(what) + " of 16-bit values with an f32 tensor of " +
                                                        "shape " + shape_string(shape_) + " (its values are float)");
    if (static_cast<int64_t>(count) == elements()) return;
    const std::string tensor =
        "a tensor of shape " + shape_string(shape_) + " (" + std::to_string(elements()) + " elements)";
    throw Error(ErrorCategory::InvalidArgument, up ? "upload of " + std::to_string(count) + " values to " + tensor
                                                   : "download of " + tensor + " into " + std::to_string(count) +
                                                         " values");
}

bool Tensor::external() const {
    return storage_ && storage_->external;
}

Tensor wrap_buffer(Context& context, const ExternalBuffer& buffer, const Shape& shape) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    impl.device->throw_if_lost();
    const int64_t elements = checked_elements(shape);
    auto bad = [](const std::string& message) {
        return Error(ErrorCategory::InvalidArgument, "wrap_buffer: " + message);
    };
    if (!buffer.buffer) throw bad("the buffer is null");
    if (buffer.offset % 4) throw bad("offset " + std::to_string(buffer.offset) + " is not a multiple of 4 bytes");
    const uint64_t bytes = static_cast<uint64_t>(elements) * sizeof(float);
    if (buffer.offset > UINT64_MAX - buffer.size)
        throw bad("offset " + std::to_string(buffer.offset) + " + size " + std::to_string(buffer.size) +
                  " overflows 64 bits");
    if (buffer.size < bytes)
        throw bad("the range of " + std::to_string(buffer.size) + " bytes is smaller than shape " +
                  shape_string(shape) + " (" + std::to_string(bytes) + " bytes)");
    // Passes bind it as a storage buffer and copy within it (MEC moves an output through its workspace),
    // upload and download copy to and from it.
    for (auto [bit, name] : {std::pair{VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, "VK_BUFFER_USAGE_STORAGE_BUFFER_BIT"},
                             std::pair{VK_BUFFER_USAGE_TRANSFER_SRC_BIT, "VK_BUFFER_USAGE_TRANSFER_SRC_BIT"},
                             std::pair{VK_BUFFER_USAGE_TRANSFER_DST_BIT, "VK_BUFFER_USAGE_TRANSFER_DST_BIT"}})
        if (!(buffer.usage & bit)) throw bad(std::string("the buffer's usage lacks ") + name);
    auto storage = std::make_shared<detail::TensorStorage>();
    storage->context = detail::Access::impl(context);
    storage->external = true;
    storage->usage = buffer.usage;
    storage->pages = {{nullptr, buffer.buffer, buffer.offset, buffer.size}};
    impl.device->note_foreign_buffer(buffer.buffer);
    return detail::Access::tensor(std::move(storage), shape);
}

Tensor Tensor::images(int64_t first, int64_t count) const {
    if (!storage_) throw Error(ErrorCategory::InvalidArgument, "view of an empty tensor");
    const int64_t n = shape_[0];
    if (first < 0 || count <= 0 || first > n - count)
        throw Error(ErrorCategory::InvalidArgument,
                    "view of entries [" + std::to_string(first) + ", " + std::to_string(first + count) +
                        ") of dimension 0 of shape " + shape_string(shape_) +
                        " (need 0 <= first, count > 0, first + count <= " + std::to_string(n) + ")");
    const uint64_t entry_bytes = bytes() / static_cast<uint64_t>(n);
    const uint64_t offset = offset_ + static_cast<uint64_t>(first) * entry_bytes;
    // Any entry: a pass binds a view that starts off the offset alignment from the alignment below it and
    // adds the distance to its indices (operand_of, context/operands.hpp).
    Tensor view;
    view.shape_ = shape_;
    view.shape_[0] = count;
    view.type_ = type_;
    view.storage_ = storage_;
    view.offset_ = offset;
    return view;
}

}  // namespace vkconv
