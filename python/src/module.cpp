// The vkconv Python extension (_vkconv): the C++ API under the same names. The package vkconv re-exports it
// and adds vkconv.torch (python/vkconv).
#include "bindings.hpp"
#include "vkconv/version.hpp"

namespace vkconv::python {

namespace {
thread_local double native_seconds = 0;
}

void record_native_seconds(double seconds) {
    native_seconds = seconds;
}

double last_native_seconds() {
    return native_seconds;
}

}  // namespace vkconv::python

PYBIND11_MODULE(_vkconv, module) {
    namespace vp = vkconv::python;
    module.doc() = "vkconv: 2-D convolution forward and backward passes on any Vulkan device";
    module.attr("__version__") = VKCONV_VERSION_STRING;
    vp::bind_errors(module);
    vp::bind_problem(module);
    vp::bind_context(module);
    vp::bind_tensor(module);
    vp::bind_passes(module);
    vp::bind_extras(module);
    module.def("_last_native_seconds", &vp::last_native_seconds,
               "Seconds the last call on this thread spent inside the C++ library (for host-overhead benchmarks).");
}
