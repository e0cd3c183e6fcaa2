// What the binding files of the vkconv Python module share: the pieces each registers, NumPy buffer checks,
// and the timer behind the host-overhead measurement.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "vkconv/vkconv.hpp"

namespace vkconv::python {

namespace py = pybind11;

void bind_errors(py::module_& module);
void bind_problem(py::module_& module);
void bind_context(py::module_& module);
void bind_tensor(py::module_& module);
void bind_passes(py::module_& module);
void bind_extras(py::module_& module);  // gemm, conv_transpose, the CPU reference

// A float32 view of a caller's array through the buffer protocol, checked before any device work: float32,
// C-contiguous, `expected` shape (when given) and writable when asked. Error(InvalidArgument) naming `role`
// and what is wrong otherwise. The span points into the caller's memory: no copy.
struct FloatArray {
    py::buffer_info info;
    Shape shape;
    std::span<float> values;
};
FloatArray float_array(const py::handle& object, std::string_view role, bool writable, const Shape* expected = nullptr);

// A C-contiguous array of float32 (format 'f'), float16 ('e') or uint16 ('H': 16-bit values as bits) through
// the buffer protocol; `sixteen` views the 16-bit ones, `values` the float32 ones.
struct HostArray {
    py::buffer_info info;
    Shape shape;
    bool is_float32 = true;
    bool is_float16 = false;  // NumPy float16: a 16-bit array that says it is fp16
    std::span<float> values;
    std::span<uint16_t> sixteen;
};
HostArray host_array(const py::handle& object, std::string_view role, bool writable, const Shape* expected = nullptr);

// Seconds the last pass, query or transfer spent inside the C++ library (the call alone, without the
// binding's argument conversion): a host-overhead benchmark subtracts it from the wall time it measures in
// Python. Per thread.
void record_native_seconds(double seconds);
double last_native_seconds();

// Runs `call` with the GIL released and records how long it took (the C++ library never calls back into
// Python except through a message callback, which takes the GIL itself).
template <class Call>
auto native_call(Call&& call) {
    struct Timer {
        std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
        ~Timer() {
            record_native_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
    };
    py::gil_scoped_release release;
    Timer timer;
    return call();
}

// Holder of the classes whose destruction can wait (a Tensor or Recording takes its context's lock, a
// Submission waits for the GPU, a Context for its device): the GIL is released while they are destroyed, so
// other Python threads go on, and a message callback the destructor triggers can take the GIL.
template <class T>
struct ReleaseGilDelete {
    void operator()(T* object) const noexcept {
        if (PyGILState_Check()) {
            py::gil_scoped_release release;
            delete object;
        } else {
            delete object;
        }
    }
};
template <class T>
using GilFreeHolder = std::unique_ptr<T, ReleaseGilDelete<T>>;

}  // namespace vkconv::python
