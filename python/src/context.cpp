// Devices, Context (options, pool counters and control) and PeakScope (a context manager measuring the
// pool's peak over a `with` block).
#include "bindings.hpp"
#include "keywords.hpp"

namespace vkconv::python {

namespace {

// A Python message callback called from C++: it takes the GIL itself (passes run with it released), and an
// exception it raises is reported as unraisable rather than thrown through the library.
MessageCallback python_callback(py::object callback) {
    if (callback.is_none()) return {};
    auto shared = std::shared_ptr<py::object>(new py::object(std::move(callback)), [](py::object* object) {
        py::gil_scoped_acquire gil;
        delete object;
    });
    return [shared](MessageSeverity severity, std::string_view message) {
        py::gil_scoped_acquire gil;
        try {
            (*shared)(severity, std::string(message));
        } catch (py::error_already_set& error) {
            error.discard_as_unraisable("vkconv message callback");
        }
    };
}

// ContextOptions as Python sees it: the callback kept as the Python object it was given.
struct PyContextOptions : ContextOptions {
    py::object message_callback = py::none();
};

// DeviceInfo: what a device is and the limits planning reads.
void bind_device_info(py::module_& module) {
    py::class_<DeviceInfo>(module, "DeviceInfo")
        .def_readonly("index", &DeviceInfo::index)
        .def_readonly("name", &DeviceInfo::name)
        .def_readonly("type", &DeviceInfo::type)
        .def_readonly("driver", &DeviceInfo::driver)
        .def_readonly("api_version", &DeviceInfo::api_version)
        .def_readonly("subgroup_size", &DeviceInfo::subgroup_size)
        .def_readonly("compute_units", &DeviceInfo::compute_units)
        .def_readonly("compute_units_source", &DeviceInfo::compute_units_source)
        .def_readonly("shared_memory_bytes", &DeviceInfo::shared_memory_bytes)
        .def_readonly("max_storage_buffer_range", &DeviceInfo::max_storage_buffer_range)
        .def_readonly("max_buffer_bytes", &DeviceInfo::max_buffer_bytes)
        .def_readonly("imposed_limits", &DeviceInfo::imposed_limits)
        .def_readonly("max_workgroup_invocations", &DeviceInfo::max_workgroup_invocations)
        .def_readonly("max_workgroup_count", &DeviceInfo::max_workgroup_count)
        .def_readonly("max_push_constants_bytes", &DeviceInfo::max_push_constants_bytes)
        .def_readonly("max_texel_buffer_elements", &DeviceInfo::max_texel_buffer_elements)
        .def_readonly("fp16", &DeviceInfo::fp16)
        .def_readonly("storage_16bit", &DeviceInfo::storage_16bit)
        .def_readonly("timestamps", &DeviceInfo::timestamps)
        .def("summary", &DeviceInfo::summary)
        .def("__repr__", [](const DeviceInfo& d) { return "DeviceInfo(" + d.summary() + ")"; });
}

// The message severities and ContextOptions (the message callback as the Python object given).
void bind_context_options(py::module_& module) {
    py::enum_<MessageSeverity>(module, "MessageSeverity")
        .value("Verbose", MessageSeverity::Verbose)
        .value("Info", MessageSeverity::Info)
        .value("Warning", MessageSeverity::Warning)
        .value("Error", MessageSeverity::Error);

    py::class_<PyContextOptions> options(module, "ContextOptions",
                                         "How a Context is made; keyword arguments set the fields.");
    init_from_keywords(options);
    options.def_readwrite("device", &PyContextOptions::device)
        .def_readwrite("validation", &PyContextOptions::validation)
        .def_readwrite("on_message", &PyContextOptions::message_callback,
                       "Called as on_message(severity, text) for validation messages; None: printed on stderr.")
        .def_readwrite("device_memory_limit", &PyContextOptions::device_memory_limit)
        .def_readwrite("pool_block_bytes", &PyContextOptions::pool_block_bytes)
        .def_readwrite("pool_min_block_bytes", &PyContextOptions::pool_min_block_bytes)
        .def_readwrite("max_buffer_bytes", &PyContextOptions::max_buffer_bytes)
        .def_readwrite("device_limits", &PyContextOptions::device_limits)
        .def_readwrite("find_cache_path", &PyContextOptions::find_cache_path)
        .def_readwrite("pipeline_cache_path", &PyContextOptions::pipeline_cache_path)
        .def_readwrite("tuning_path", &PyContextOptions::tuning_path)
        .def_readwrite("auto_choice", &PyContextOptions::auto_choice);
}

void bind_pool_stats(py::module_& module) {
    py::class_<PoolStats>(module, "PoolStats")
        .def_readonly("in_use", &PoolStats::in_use)
        .def_readonly("peak_in_use", &PoolStats::peak_in_use)
        .def_readonly("reserved", &PoolStats::reserved)
        .def_readonly("peak_reserved", &PoolStats::peak_reserved)
        .def_readonly("driver_allocations", &PoolStats::driver_allocations)
        .def_readonly("live_blocks", &PoolStats::live_blocks)
        .def_readonly("live_allocations", &PoolStats::live_allocations)
        .def_readonly("alignment", &PoolStats::alignment)
        .def_readonly("staging_bytes", &PoolStats::staging_bytes)
        .def("rounded", &PoolStats::rounded, py::arg("bytes"))
        .def("__repr__", [](const PoolStats& s) {
            return "PoolStats(in_use=" + std::to_string(s.in_use) + ", peak_in_use=" + std::to_string(s.peak_in_use) +
                   ", reserved=" + std::to_string(s.reserved) + ", peak_reserved=" + std::to_string(s.peak_reserved) +
                   ", driver_allocations=" + std::to_string(s.driver_allocations) +
                   ", live_blocks=" + std::to_string(s.live_blocks) +
                   ", live_allocations=" + std::to_string(s.live_allocations) +
                   ", alignment=" + std::to_string(s.alignment) + ", staging_bytes=" + std::to_string(s.staging_bytes) +
                   ")";
        });
}

// Context(options) or Context(**keywords), not both; the Python callback wrapped to take the GIL.
Context make_context(const std::optional<PyContextOptions>& given, const py::kwargs& keywords) {
    if (given && keywords.size() > 0)
        throw py::type_error("Context: give ContextOptions or keyword arguments, not both");
    PyContextOptions options = given ? *given : py::cast<PyContextOptions>(py::type::of<PyContextOptions>()(**keywords));
    ContextOptions cpp = options;
    cpp.on_message = python_callback(options.message_callback);
    return Context(cpp);
}

// Context, its pool control released from the GIL (they take the context's lock).
void bind_context_class(py::module_& module) {
    const auto release = py::call_guard<py::gil_scoped_release>();  // calls that take the context's lock
    py::class_<Context, GilFreeHolder<Context>>(module, "Context",
                        "One Vulkan device with its queue, buffer pool and pipeline cache. Thread-safe: calls on one "
                        "context are serialised.")
        .def(py::init(&make_context), py::arg("options") = py::none())
        .def_property_readonly("device", &Context::device)
        .def_property_readonly("validation_enabled", &Context::validation_enabled)
        .def_property_readonly("external_device", &Context::external_device)
        .def("pool_stats", &Context::pool_stats, release)
        .def("reset_peak", &Context::reset_peak, release)
        .def("trim", &Context::trim, release)
        .def("auto_workspace_limit", &Context::auto_workspace_limit, release)
        .def("save_pipeline_cache", &Context::save_pipeline_cache, release)
        .def("__repr__", [](const Context& c) { return "Context(" + c.device().name + ")"; });
}

// PeakScope, a context manager over the pool's peak.
void bind_peak_scope(py::module_& module) {
    const auto release = py::call_guard<py::gil_scoped_release>();  // calls that take the context's lock
    py::class_<PeakScope>(module, "PeakScope",
                          "The pool's in-use peak from construction (or `with` entry) on, nesting with others.")
        .def(py::init<Context&>(), py::arg("context"), py::keep_alive<1, 2>())
        .def("peak", &PeakScope::peak, release)
        .def("baseline", &PeakScope::baseline, release)
        .def("peak_reserved", &PeakScope::peak_reserved, release)
        .def("driver_allocations", &PeakScope::driver_allocations, release)
        .def("__enter__", [](PeakScope& scope) -> PeakScope& { return scope; }, py::return_value_policy::reference)
        .def("__exit__", [](PeakScope&, py::args) { return false; });
}

}  // namespace

void bind_context(py::module_& module) {
    bind_device_info(module);
    bind_context_options(module);
    bind_pool_stats(module);
    bind_context_class(module);
    module.def("list_devices", &list_devices, "Every physical device the Vulkan loader reports, in its order.");
    bind_peak_scope(module);
}

}  // namespace vkconv::python
