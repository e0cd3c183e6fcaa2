// vkconv.Tensor and the NumPy side of it: uploads read the caller's array and downloads write into one
// through the buffer protocol, with no copy on the host beyond the staging buffer's.
#include "bindings.hpp"

namespace vkconv::python {

FloatArray float_array(const py::handle& object, std::string_view role, bool writable, const Shape* expected) {
    const std::string name(role);
    if (!PyObject_CheckBuffer(object.ptr()))
        throw Error(ErrorCategory::InvalidArgument,
                    name + ": expected a float32 array (NumPy or any buffer), got " +
                        std::string(py::str(py::type::of(object).attr("__name__"))));
    FloatArray array;
    try {
        array.info = py::reinterpret_borrow<py::buffer>(object).request(writable);
    } catch (py::error_already_set& error) {
        throw Error(ErrorCategory::InvalidArgument, name + ": " + (writable ? "a writable " : "") +
                                                        "buffer is needed: " + std::string(error.what()));
    }
    const py::buffer_info& info = array.info;
    if (info.itemsize != sizeof(float) || (info.format != "f" && info.format != "<f" && info.format != "=f"))
        throw Error(ErrorCategory::InvalidArgument, name + ": dtype must be float32, got format '" + info.format +
                                                        "' with " + std::to_string(info.itemsize) + "-byte items");
    array.shape.assign(info.shape.begin(), info.shape.end());
    py::ssize_t stride = sizeof(float);
    for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
        if (info.shape[d] != 1 && info.strides[d] != stride)
            throw Error(ErrorCategory::InvalidArgument,
                        name + ": the array must be C-contiguous (numpy.ascontiguousarray makes it so)");
        stride *= info.shape[d];
    }
    if (expected && array.shape != *expected)
        throw Error(ErrorCategory::InvalidArgument,
                    name + ": shape " + shape_string(array.shape) + " does not match " + shape_string(*expected));
    array.values = {static_cast<float*>(info.ptr), static_cast<size_t>(shape_elements(array.shape))};
    return array;
}

void bind_tensor(py::module_& module) {
    py::class_<Tensor, GilFreeHolder<Tensor>>(module, "Tensor",
                       "A float32 array in device memory from its context's pool (memory goes back to the pool "
                       "when the last reference dies).")
        .def(py::init([](Context& context, const Shape& shape) {
                 return native_call([&] { return Tensor(context, shape); });
             }),
             py::arg("context"), py::arg("shape"), "Uninitialised device memory of this shape.")
        .def_static(
            "from_host",
            [](Context& context, const py::object& values) {
                const FloatArray array = float_array(values, "Tensor.from_host values", false);
                return native_call([&] { return Tensor::from_host(context, array.shape, array.values); });
            },
            py::arg("context"), py::arg("values"), "A tensor of the array's shape holding its values.")
        .def(
            "upload",
            [](Tensor& tensor, const py::object& values) {
                if (tensor.empty()) throw Error(ErrorCategory::InvalidArgument, "upload to an empty tensor");
                const FloatArray array = float_array(values, "Tensor.upload values", false, &tensor.shape());
                native_call([&] { tensor.upload(array.values); });
            },
            py::arg("values"), "Copies a float32 C-contiguous array of the tensor's shape to the device.")
        .def(
            "download",
            [](const Tensor& tensor, const py::object& out) -> py::object {
                if (tensor.empty()) throw Error(ErrorCategory::InvalidArgument, "download from an empty tensor");
                py::object target = out;
                if (target.is_none()) target = py::array_t<float>(tensor.shape());
                const FloatArray array = float_array(target, "Tensor.download out", true, &tensor.shape());
                native_call([&] { tensor.download(array.values); });
                return target;
            },
            py::arg("out") = py::none(),
            "The tensor's values: into `out` (float32, C-contiguous, the tensor's shape) or a new NumPy array.")
        .def("empty", &Tensor::empty)
        .def_property_readonly("shape", &Tensor::shape)
        .def("elements", &Tensor::elements)
        .def("bytes", &Tensor::bytes)
        .def("images", &Tensor::images, py::arg("first"), py::arg("count"))
        .def("byte_offset", &Tensor::byte_offset)
        .def("external", &Tensor::external)
        .def("__repr__", [](const Tensor& t) { return "Tensor(shape=" + shape_string(t.shape()) + ")"; });
}

}  // namespace vkconv::python
