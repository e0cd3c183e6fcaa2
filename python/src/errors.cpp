// vkconv::Error as Python exceptions: vkconv.Error (a RuntimeError) with .category and .vk_result, and a
// subclass per category, so Python code can catch "my arguments are wrong" (InvalidArgumentError, also a
// ValueError) apart from "the device ran out of memory" (OutOfDeviceMemoryError, also a MemoryError).
#include "bindings.hpp"

namespace vkconv::python {

namespace {

// Made once at import and kept for the process's life (the module holds them too).
struct ErrorClasses {
    py::object base, invalid_argument, unsupported, out_of_memory, device_lost, vulkan_failure;
};
ErrorClasses* classes = nullptr;

py::object new_exception(const char* name, py::tuple bases, const char* doc) {
    PyObject* type = PyErr_NewExceptionWithDoc(name, doc, bases.ptr(), nullptr);
    if (!type) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(type);
}

const py::object& class_of(ErrorCategory category) {
    switch (category) {
        case ErrorCategory::InvalidArgument: return classes->invalid_argument;
        case ErrorCategory::Unsupported: return classes->unsupported;
        case ErrorCategory::OutOfDeviceMemory: return classes->out_of_memory;
        case ErrorCategory::DeviceLost: return classes->device_lost;
        case ErrorCategory::VulkanFailure: return classes->vulkan_failure;
    }
    return classes->base;
}

}  // namespace

void bind_errors(py::module_& module) {
    py::enum_<ErrorCategory>(module, "ErrorCategory")
        .value("InvalidArgument", ErrorCategory::InvalidArgument)
        .value("Unsupported", ErrorCategory::Unsupported)
        .value("OutOfDeviceMemory", ErrorCategory::OutOfDeviceMemory)
        .value("DeviceLost", ErrorCategory::DeviceLost)
        .value("VulkanFailure", ErrorCategory::VulkanFailure);

    classes = new ErrorClasses;
    classes->base = new_exception("vkconv.Error", py::make_tuple(py::handle(PyExc_RuntimeError)),
                                  "A vkconv failure: .category (ErrorCategory), .vk_result (the VkResult, 0 if none).");
    const auto sub = [&](const char* name, py::handle extra, const char* doc) {
        return extra ? new_exception(name, py::make_tuple(classes->base, extra), doc)
                     : new_exception(name, py::make_tuple(classes->base), doc);
    };
    classes->invalid_argument = sub("vkconv.InvalidArgumentError", PyExc_ValueError, "The caller's input is wrong.");
    classes->unsupported = sub("vkconv.UnsupportedError", nullptr, "A valid request the device cannot do.");
    classes->out_of_memory =
        sub("vkconv.OutOfDeviceMemoryError", PyExc_MemoryError, "The driver or the pool's limit refused memory.");
    classes->device_lost = sub("vkconv.DeviceLostError", nullptr, "The device was lost; the context stays unusable.");
    classes->vulkan_failure = sub("vkconv.VulkanFailureError", nullptr, "Another failing Vulkan call.");
    module.attr("Error") = classes->base;
    module.attr("InvalidArgumentError") = classes->invalid_argument;
    module.attr("UnsupportedError") = classes->unsupported;
    module.attr("OutOfDeviceMemoryError") = classes->out_of_memory;
    module.attr("DeviceLostError") = classes->device_lost;
    module.attr("VulkanFailureError") = classes->vulkan_failure;

    py::register_exception_translator([](std::exception_ptr thrown) {
        try {
            if (thrown) std::rethrow_exception(thrown);
        } catch (const Error& error) {
            const py::object& type = class_of(error.category());
            py::object instance = type(error.what());
            instance.attr("category") = py::cast(error.category());
            instance.attr("vk_result") = error.vk_result();
            PyErr_SetObject(type.ptr(), instance.ptr());
        }
    });
}

}  // namespace vkconv::python
