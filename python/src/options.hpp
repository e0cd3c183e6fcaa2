// PassOptions and Epilogue as Python holds them: the tensors they point to in C++ (a caller's workspace, a
// residual) are kept as references of their own, so a Python object can never leave a dangling pointer.
#pragma once

#include "bindings.hpp"

namespace vkconv::python {

struct PyPassOptions : PassOptions {
    std::optional<Tensor> workspace_tensor;
    PassOptions cpp() const {
        PassOptions options = *this;
        options.workspace = workspace_tensor ? &*workspace_tensor : nullptr;
        return options;
    }
};

struct PyEpilogue : Epilogue {
    std::optional<Tensor> residual_tensor;
    Epilogue cpp() const {
        Epilogue epilogue = *this;
        epilogue.residual = residual_tensor ? &*residual_tensor : nullptr;
        return epilogue;
    }
};

inline PassOptions pass_options(const std::optional<PyPassOptions>& options) {
    return options ? options->cpp() : PassOptions{};
}

}  // namespace vkconv::python
