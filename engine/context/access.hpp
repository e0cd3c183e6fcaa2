// detail::Access — the one door from the engine to what the public classes keep private (a context's
// state, a tensor's storage, a recording's state), so the public headers show no engine type.
#pragma once

#include <memory>

#include "vkconv/context.hpp"
#include "vkconv/recording.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv::detail {

struct Access {
    static const std::shared_ptr<ContextImpl>& impl(const Context& context) { return context.impl_; }
    // Another handle to the same context (a recording reaches its context's planning through this).
    static Context context(std::shared_ptr<ContextImpl> impl) { return Context(std::move(impl)); }
    static const std::shared_ptr<TensorStorage>& storage(const Tensor& tensor) { return tensor.storage_; }
    static Tensor tensor(std::shared_ptr<TensorStorage> storage, const Shape& shape) {
        Tensor t;
        t.shape_ = shape;
        t.storage_ = std::move(storage);
        return t;
    }
    static const std::shared_ptr<RecordingState>& state(const Recording& recording) { return recording.state_; }
    static const std::shared_ptr<RecordingState>& state(const Submission& submission) { return submission.state_; }
    static Recording recording(std::shared_ptr<RecordingState> state) { return Recording(std::move(state)); }
};

inline const std::shared_ptr<TensorStorage>& storage_of(const Tensor& tensor) {
    return Access::storage(tensor);
}

}  // namespace vkconv::detail
