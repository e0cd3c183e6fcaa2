#include "context/pass.hpp"

#include <algorithm>
#include <string>

#include "context/recording_state.hpp"
#include "context/tensor_storage.hpp"

namespace vkconv::detail {

Operand tensor_operand(ContextImpl& context, const Tensor& tensor, std::string_view role, const Shape& expected,
                       DataType type) {
    if (tensor.empty()) throw Error(ErrorCategory::InvalidArgument, std::string(role) + " tensor is empty");
    if (storage_of(tensor)->context.get() != &context)
        throw Error(ErrorCategory::InvalidArgument, std::string(role) + " tensor belongs to another context");
    ConvProblem::check_shape(role, tensor.shape(), expected);
    if (tensor.data_type() != type)
        throw Error(ErrorCategory::InvalidArgument, std::string(role) + " tensor is " + to_string(tensor.data_type()) +
                                                        ", but the problem's " + std::string(role) + " is " +
                                                        to_string(type));
    const uint64_t alignment = context.pool->alignment();
    const uint32_t bytes = element_bytes(type);
    const std::vector<TensorPiece> pieces = pieces_of(tensor);
    if (pieces.size() == 1)
        return operand_of(pieces.front().allocation, static_cast<uint64_t>(tensor.elements()), alignment, bytes);
    // Paged: each piece from the alignment at or below its first byte.
    auto pages = std::make_shared<std::vector<OperandPage>>();
    for (const TensorPiece& piece : pieces) {
        const Operand part = operand_of(piece.allocation, piece.elements, alignment, bytes);
        pages->push_back({part.allocation, part.first, piece.first_element, piece.first_element + piece.elements});
    }
    Operand op;
    op.element_bytes = bytes;
    op.allocation = pages->front().allocation;
    op.first = pages->front().first;
    op.floats = static_cast<uint64_t>(tensor.elements());
    op.pages = std::move(pages);
    return op;
}

void check_not_aliased(const Tensor& output, std::string_view role, std::initializer_list<const Tensor*> inputs) {
    for (const Tensor* t : inputs)
        if (t && overlaps(*t, output))
            throw Error(ErrorCategory::InvalidArgument,
                        "the " + std::string(role) + " tensor must not also be one of the pass's inputs");
}

}  // namespace vkconv::detail

namespace vkconv::detail {
namespace {

// The caller's workspace from its first byte on the pool alignment: the range passes carve slots from.
BufferRange usable_workspace(ContextImpl& context, const Tensor& workspace) {
    const PoolAllocation a = allocation_of(workspace, "a pass's workspace (PassOptions::workspace)");
    const uint64_t align = context.pool->alignment();
    const uint64_t first = (a.offset + align - 1) / align * align;
    const uint64_t end = a.offset + workspace.bytes();
    return {a.buffer, first, end > first ? end - first : 0};
}

}  // namespace

uint64_t usable_workspace_bytes(ContextImpl& context, const Tensor& workspace) {
    if (workspace.empty()) throw Error(ErrorCategory::InvalidArgument, "the workspace tensor is empty");
    if (storage_of(workspace)->context.get() != &context)
        throw Error(ErrorCategory::InvalidArgument, "the workspace tensor belongs to another context");
    // At least 1: a limit of 0 would mean none, and an unaligned sliver offers no slot at all.
    return std::max<uint64_t>(usable_workspace(context, workspace).size, 1);
}

PassWorkspace::PassWorkspace(ContextImpl& context, const std::vector<uint64_t>& floats, const PassTarget& target)
    : context_(context) {
    BufferPool& pool = *context.pool;
    if (target.workspace) {
        const BufferRange range = usable_workspace(context, *target.workspace);
        uint64_t offset = 0;
        for (uint64_t f : floats) {
            Operand op;
            if (f) {
                const uint64_t bytes = pool.round(f * 4);
                if (offset + f * 4 > range.size)
                    throw Error(ErrorCategory::InvalidArgument,
                                "the workspace tensor offers " + std::to_string(range.size) +
                                    " bytes from its first aligned byte; the pass needs " +
                                    std::to_string(offset + bytes));
                op.allocation = {nullptr, range.buffer, range.offset + offset, std::min(bytes, range.size - offset)};
                op.floats = f;
                offset += bytes;
            }
            operands_.push_back(op);
        }
        return;
    }
    if (target.recording) {
        recording_ = target.recording;
        operands_ = recording_->take_workspace(floats);
        return;
    }
    try {
        for (uint64_t f : floats) {
            Operand op;
            if (f) {
                op = {pool.allocate(f * 4), f};
                owned_.push_back(op.allocation);
            }
            operands_.push_back(op);
        }
    } catch (...) {
        for (PoolAllocation& a : owned_) pool.release(a);
        throw;
    }
}

PassWorkspace::~PassWorkspace() {
    for (PoolAllocation& a : owned_) context_.pool->release(a);
    if (recording_) recording_->idle_workspace();
}

CommandStream& recording_stream(const PassTarget& target) {
    return *target.recording->stream;
}

void count_recorded_pass(const PassTarget& target) {
    ++target.recording->passes;
}

void mark_broken(const PassTarget& target) {
    target.recording->broken = true;
}

}  // namespace vkconv::detail
