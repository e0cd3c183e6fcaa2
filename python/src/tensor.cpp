// vkconv.Tensor and the NumPy side of it: uploads read the caller's array and downloads write into one
// through the buffer protocol, with no copy on the host beyond the staging buffer's.
#include "bindings.hpp"

namespace vkconv::python {

namespace {

py::buffer_info buffer_of(const py::handle& object, const std::string& name, bool writable, const char* wanted) {
    if (!PyObject_CheckBuffer(object.ptr()))
        throw Error(ErrorCategory::InvalidArgument,
                    name + ": expected a " + wanted + " array (NumPy or any buffer), got " +
                        std::string(py::str(py::type::of(object).attr("__name__"))));
    try {
        return py::reinterpret_borrow<py::buffer>(object).request(writable);
    } catch (py::error_already_set& error) {
        throw Error(ErrorCategory::InvalidArgument, name + ": " + (writable ? "a writable " : "") +
                                                        "buffer is needed: " + std::string(error.what()));
    }
}

// The array's shape, after checking it is C-contiguous and, where given, of the expected shape.
Shape contiguous_shape(const py::buffer_info& info, const std::string& name, const Shape* expected) {
    Shape shape(info.shape.begin(), info.shape.end());
    py::ssize_t stride = info.itemsize;
    for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
        if (info.shape[d] != 1 && info.strides[d] != stride)
            throw Error(ErrorCategory::InvalidArgument,
                        name + ": the array must be C-contiguous (numpy.ascontiguousarray makes it so)");
        stride *= info.shape[d];
    }
    if (expected && shape != *expected)
        throw Error(ErrorCategory::InvalidArgument,
                    name + ": shape " + shape_string(shape) + " does not match " + shape_string(*expected));
    return shape;
}

bool format_is(const std::string& format, char code) {
    return format.size() == 1 ? format[0] == code : format.size() == 2 && (format[0] == '<' || format[0] == '=') &&
                                                        format[1] == code;
}

}  // namespace

FloatArray float_array(const py::handle& object, std::string_view role, bool writable, const Shape* expected) {
    const std::string name(role);
    FloatArray array;
    array.info = buffer_of(object, name, writable, "float32");
    const py::buffer_info& info = array.info;
    if (info.itemsize != sizeof(float) || !format_is(info.format, 'f'))
        throw Error(ErrorCategory::InvalidArgument, name + ": dtype must be float32, got format '" + info.format +
                                                        "' with " + std::to_string(info.itemsize) + "-byte items");
    array.shape = contiguous_shape(info, name, expected);
    array.values = {static_cast<float*>(info.ptr), static_cast<size_t>(shape_elements(array.shape))};
    return array;
}

HostArray host_array(const py::handle& object, std::string_view role, bool writable, const Shape* expected) {
    const std::string name(role);
    HostArray array;
    array.info = buffer_of(object, name, writable, "float32, float16 or uint16");
    const py::buffer_info& info = array.info;
    array.is_float16 = info.itemsize == 2 && format_is(info.format, 'e');
    const bool bits = info.itemsize == 2 && format_is(info.format, 'H');
    array.is_float32 = info.itemsize == 4 && format_is(info.format, 'f');
    if (!array.is_float32 && !array.is_float16 && !bits)
        throw Error(ErrorCategory::InvalidArgument, name + ": dtype must be float32, float16 or uint16 (16-bit values "
                                                           "as bits), got format '" + info.format + "' with " +
                                                           std::to_string(info.itemsize) + "-byte items");
    array.shape = contiguous_shape(info, name, expected);
    const auto count = static_cast<size_t>(shape_elements(array.shape));
    if (array.is_float32)
        array.values = {static_cast<float*>(info.ptr), count};
    else
        array.sixteen = {static_cast<uint16_t*>(info.ptr), count};
    return array;
}

namespace {

// Error(InvalidArgument) where a 16-bit array does not suit a tensor of `type`: float16 arrays are F16's
// own values, uint16 arrays any 16-bit type's bits; an F32 tensor takes float32 arrays only.
void check_array_for(const HostArray& array, DataType type, const std::string& name) {
    if (array.is_float32) return;
    if (type == DataType::F32)
        throw Error(ErrorCategory::InvalidArgument,
                    name + ": an f32 tensor takes float32 arrays, got " +
                        (array.is_float16 ? "float16" : "uint16 (16-bit values as bits need dtype=F16 or BF16)"));
    if (array.is_float16 && type != DataType::F16)
        throw Error(ErrorCategory::InvalidArgument, name + ": a float16 array holds f16 values, not " +
                                                        std::string(to_string(type)) + " (pass its bits as uint16)");
}

}  // namespace

void bind_tensor(py::module_& module) {
    py::class_<Tensor, GilFreeHolder<Tensor>>(module, "Tensor",
                       "An array of float32 or 16-bit floats (DataType) in device memory from its context's pool "
                       "(memory goes back to the pool when the last reference dies).")
        .def(py::init([](Context& context, const Shape& shape, DataType dtype) {
                 return native_call([&] { return Tensor(context, shape, dtype); });
             }),
             py::arg("context"), py::arg("shape"), py::arg("dtype") = DataType::F32,
             "Uninitialised device memory of this shape and element type.")
        .def_static(
            "from_host",
            [](Context& context, const py::object& values, std::optional<DataType> dtype) {
                const HostArray array = host_array(values, "Tensor.from_host values", false);
                const DataType type = dtype.value_or(array.is_float16 ? DataType::F16 : DataType::F32);
                check_array_for(array, type, "Tensor.from_host values");
                return native_call([&] {
                    return array.is_float32 ? Tensor::from_host(context, array.shape, array.values, type)
                                            : Tensor::from_host(context, array.shape, array.sixteen, type);
                });
            },
            py::arg("context"), py::arg("values"), py::arg("dtype") = py::none(),
            "A tensor of the array's shape holding its values: float32 narrowed to `dtype` (default F32), float16 "
            "as F16, uint16 as the bits of `dtype`.")
        .def(
            "upload",
            [](Tensor& tensor, const py::object& values) {
                if (tensor.empty()) throw Error(ErrorCategory::InvalidArgument, "upload to an empty tensor");
                const HostArray array = host_array(values, "Tensor.upload values", false, &tensor.shape());
                check_array_for(array, tensor.data_type(), "Tensor.upload values");
                native_call([&] { array.is_float32 ? tensor.upload(array.values) : tensor.upload(array.sixteen); });
            },
            py::arg("values"),
            "Copies a C-contiguous array of the tensor's shape to the device: float32 (narrowed to a 16-bit "
            "tensor's type), or a 16-bit tensor's own values (float16 for F16, or uint16 bits).")
        .def(
            "download",
            [](const Tensor& tensor, const py::object& out) -> py::object {
                if (tensor.empty()) throw Error(ErrorCategory::InvalidArgument, "download from an empty tensor");
                py::object target = out;
                if (target.is_none()) target = py::array_t<float>(tensor.shape());
                const HostArray array = host_array(target, "Tensor.download out", true, &tensor.shape());
                check_array_for(array, tensor.data_type(), "Tensor.download out");
                native_call([&] { array.is_float32 ? tensor.download(array.values) : tensor.download(array.sixteen); });
                return target;
            },
            py::arg("out") = py::none(),
            "The tensor's values: into `out` (C-contiguous, the tensor's shape: float32, widened from a 16-bit "
            "tensor exactly, or a 16-bit tensor's own values as float16 or uint16) or a new float32 NumPy array.")
        .def_property_readonly("dtype", &Tensor::data_type)
        .def("empty", &Tensor::empty)
        .def_property_readonly("shape", &Tensor::shape)
        .def("elements", &Tensor::elements)
        .def("bytes", &Tensor::bytes)
        .def("images", &Tensor::images, py::arg("first"), py::arg("count"))
        .def("byte_offset", &Tensor::byte_offset)
        .def("external", &Tensor::external)
        .def("__repr__", [](const Tensor& t) {
            return "Tensor(shape=" + shape_string(t.shape()) + ", dtype=" + to_string(t.data_type()) + ")";
        });
}

}  // namespace vkconv::python
