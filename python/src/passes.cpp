// The passes (forward with or without an epilogue, backward-data, backward-filter, backward-bias, the layer
// step), their workspace queries, find_algorithms, and Recording/Submission for many passes in one
// submission. Every pass takes a Context (blocking) or a Recording (recorded, run at submit) first, as in C++.
#include "bindings.hpp"
#include "keywords.hpp"
#include "options.hpp"

namespace vkconv::python {

namespace {

using OptionalOptions = std::optional<PyPassOptions>;

std::string stats_repr(const RunStats& s) {
    return std::string("RunStats(algorithm=") + to_string(s.algorithm) + ", gpu_ms=" + std::to_string(s.gpu_ms) +
           ", wall_ms=" + std::to_string(s.wall_ms) + ", workspace_bytes=" + std::to_string(s.workspace_bytes) +
           ", peak_bytes=" + std::to_string(s.peak_bytes) + ", dispatches=" + std::to_string(s.dispatches) + ")";
}

void bind_option_types(py::module_& module) {
    py::class_<PyPassOptions> options(module, "PassOptions", "Options of every pass; keyword arguments set fields.");
    init_from_keywords(options);
    options.def_readwrite("variant", &PyPassOptions::variant)
        .def_readwrite("max_binding_bytes", &PyPassOptions::max_binding_bytes)
        .def_readwrite("workspace_limit", &PyPassOptions::workspace_limit)
        .def_readwrite("auto_choice", &PyPassOptions::auto_choice)
        .def_readwrite("find_repeats", &PyPassOptions::find_repeats)
        .def_readwrite("workspace", &PyPassOptions::workspace_tensor,
                       "The caller's workspace tensor (None: the pass allocates from the pool).")
        .def("__copy__", [](const PyPassOptions& self) { return self; });

    py::class_<PyEpilogue> epilogue(module, "Epilogue",
                                    "y = activation(alpha * conv(x, w) + bias + beta * residual), in the pass.");
    init_from_keywords(epilogue);
    epilogue.def_readwrite("alpha", &PyEpilogue::alpha)
        .def_readwrite("beta", &PyEpilogue::beta)
        .def_readwrite("residual", &PyEpilogue::residual_tensor)
        .def_readwrite("activation", &PyEpilogue::activation)
        .def_readwrite("negative_slope", &PyEpilogue::negative_slope);

    py::class_<RunStats>(module, "RunStats")
        .def_readonly("algorithm", &RunStats::algorithm)
        .def_readonly("variant", &RunStats::variant)
        .def_readonly("chosen_by", &RunStats::chosen_by)
        .def_readonly("gpu_ms", &RunStats::gpu_ms)
        .def_readonly("gpu_timed", &RunStats::gpu_timed)
        .def_readonly("wall_ms", &RunStats::wall_ms)
        .def_property_readonly(
            "host_overhead_ms",
            [](const RunStats& s) -> std::optional<double> {
                if (!s.gpu_timed) return std::nullopt;
                return std::max(0.0, s.wall_ms - s.gpu_ms);
            },
            "Wall time the GPU did not account for (recording, submission, waiting); None without timestamps.")
        .def_readonly("operand_bytes", &RunStats::operand_bytes)
        .def_readonly("workspace_bytes", &RunStats::workspace_bytes)
        .def_readonly("peak_bytes", &RunStats::peak_bytes)
        .def_readonly("peak_reserved_bytes", &RunStats::peak_reserved_bytes)
        .def_readonly("driver_allocations", &RunStats::driver_allocations)
        .def_readonly("dispatches", &RunStats::dispatches)
        .def_readonly("chunks", &RunStats::chunks)
        .def_readonly("partial_products", &RunStats::partial_products)
        .def_readonly("bias_pieces", &RunStats::bias_pieces)
        .def("__repr__", &stats_repr);

    py::class_<LayerBackwardStats>(module, "LayerBackwardStats")
        .def_readonly("step", &LayerBackwardStats::step)
        .def_readonly("data_algorithm", &LayerBackwardStats::data_algorithm)
        .def_readonly("data_chosen_by", &LayerBackwardStats::data_chosen_by)
        .def_readonly("filter_chosen_by", &LayerBackwardStats::filter_chosen_by)
        .def_readonly("filter_algorithm", &LayerBackwardStats::filter_algorithm)
        .def_readonly("data_workspace_bytes", &LayerBackwardStats::data_workspace_bytes)
        .def_readonly("filter_workspace_bytes", &LayerBackwardStats::filter_workspace_bytes)
        .def_readonly("data_chunks", &LayerBackwardStats::data_chunks)
        .def_readonly("filter_chunks", &LayerBackwardStats::filter_chunks)
        .def("__repr__", [](const LayerBackwardStats& s) {
            return std::string("LayerBackwardStats(data_algorithm=") + to_string(s.data_algorithm) +
                   ", filter_algorithm=" + to_string(s.filter_algorithm) +
                   ", data_workspace_bytes=" + std::to_string(s.data_workspace_bytes) +
                   ", filter_workspace_bytes=" + std::to_string(s.filter_workspace_bytes) +
                   ", step=" + stats_repr(s.step) + ")";
        });

    py::class_<AlgorithmPerf>(module, "AlgorithmPerf")
        .def_readonly("algorithm", &AlgorithmPerf::algorithm)
        .def_readonly("variant", &AlgorithmPerf::variant)
        .def_readonly("ms", &AlgorithmPerf::ms)
        .def_readonly("workspace_bytes", &AlgorithmPerf::workspace_bytes)
        .def_readonly("peak_bytes", &AlgorithmPerf::peak_bytes)
        .def_readonly("chunks", &AlgorithmPerf::chunks)
        .def_readonly("deterministic", &AlgorithmPerf::deterministic)
        .def_readonly("verified", &AlgorithmPerf::verified)
        .def_readonly("error_over_bound", &AlgorithmPerf::error_over_bound)
        .def("__repr__", [](const AlgorithmPerf& p) {
            return std::string("AlgorithmPerf(") + to_string(p.algorithm) + ", ms=" + std::to_string(p.ms) +
                   ", workspace_bytes=" + std::to_string(p.workspace_bytes) +
                   ", verified=" + (p.verified ? "True" : "False") + ")";
        });
}

void bind_recording(py::module_& module) {
    const auto release = py::call_guard<py::gil_scoped_release>();
    py::class_<Submission, GilFreeHolder<Submission>>(module, "Submission",
                                                      "Work submitted on vkconv's queue; wait() blocks until it is done.")
        .def("wait", [](Submission& s) { native_call([&] { s.wait(); }); })
        .def("done", &Submission::done, release)
        .def("empty", &Submission::empty);
    py::class_<Recording, GilFreeHolder<Recording>>(module, "Recording",
                          "Passes recorded now and run later in one submission: pass it instead of the Context.")
        .def(py::init<Context&>(), py::arg("context"), py::keep_alive<1, 2>())
        .def("submit", [](Recording& r) { return native_call([&] { return r.submit(); }); });
}

void bind_workspace_queries(py::module_& module) {
    using Query = uint64_t (*)(const Context&, const ConvProblem&, Algorithm, const PassOptions&);
    const auto query = [&](const char* name, Query function) {
        module.def(
            name,
            [function](const Context& context, const ConvProblem& problem, Algorithm algorithm,
                       const OptionalOptions& options) {
                return native_call([&] { return function(context, problem, algorithm, pass_options(options)); });
            },
            py::arg("context"), py::arg("problem"), py::arg("algorithm") = Algorithm::Auto,
            py::arg("options") = py::none());
    };
    query("forward_workspace_bytes", &forward_workspace_bytes);
    query("backward_data_workspace_bytes", &backward_data_workspace_bytes);
    query("backward_filter_workspace_bytes", &backward_filter_workspace_bytes);
    query("layer_backward_workspace_bytes", &layer_backward_workspace_bytes);
    module.def(
        "backward_bias_workspace_bytes",
        [](const Context& context, const ConvProblem& problem, const OptionalOptions& options) {
            return native_call([&] { return backward_bias_workspace_bytes(context, problem, pass_options(options)); });
        },
        py::arg("context"), py::arg("problem"), py::arg("options") = py::none());
    module.def(
        "choose_forward_algorithm",
        [](const Context& context, const ConvProblem& problem, const OptionalOptions& options) {
            return native_call([&] { return choose_forward_algorithm(context, problem, pass_options(options)); });
        },
        py::arg("context"), py::arg("problem"), py::arg("options") = py::none());
    module.def(
        "find_algorithms",
        [](Context& context, Pass pass, const ConvProblem& problem, const OptionalOptions& options) {
            return native_call([&] { return find_algorithms(context, pass, problem, pass_options(options)); });
        },
        py::arg("context"), py::arg("pass_"), py::arg("problem"), py::arg("options") = py::none());
}

template <class Where>
void bind_passes_for(py::module_& module) {
    module.def(
        "forward",
        [](Where& target, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
           const std::optional<Tensor>& bias, Tensor& output, Algorithm algorithm, const OptionalOptions& options,
           const std::optional<PyEpilogue>& epilogue) {
            const Tensor* bias_pointer = bias ? &*bias : nullptr;
            const PassOptions cpp_options = pass_options(options);
            const Epilogue cpp_epilogue = epilogue ? epilogue->cpp() : Epilogue{};
            return native_call([&] {
                return forward(target, problem, input, filter, bias_pointer, output, algorithm, cpp_options,
                               cpp_epilogue);
            });
        },
        py::arg("target"), py::arg("problem"), py::arg("input"), py::arg("filter"), py::arg("bias"),
        py::arg("output"), py::arg("algorithm") = Algorithm::Auto, py::arg("options") = py::none(),
        py::arg("epilogue") = py::none(),
        "y = conv(x, w) + bias (with an Epilogue: activation(alpha * conv + bias + beta * residual)).");
    module.def(
        "backward_data",
        [](Where& target, const ConvProblem& problem, const Tensor& grad_output, const Tensor& filter,
           Tensor& grad_input, Algorithm algorithm, const OptionalOptions& options) {
            const PassOptions cpp_options = pass_options(options);
            return native_call(
                [&] { return backward_data(target, problem, grad_output, filter, grad_input, algorithm, cpp_options); });
        },
        py::arg("target"), py::arg("problem"), py::arg("grad_output"), py::arg("filter"), py::arg("grad_input"),
        py::arg("algorithm") = Algorithm::Auto, py::arg("options") = py::none(), "dx = conv_transpose(dy, w).");
    module.def(
        "backward_filter",
        [](Where& target, const ConvProblem& problem, const Tensor& input, const Tensor& grad_output,
           Tensor& grad_filter, std::optional<Tensor> grad_bias, Algorithm algorithm, const OptionalOptions& options) {
            const PassOptions cpp_options = pass_options(options);
            Tensor* db = grad_bias ? &*grad_bias : nullptr;
            return native_call([&] {
                return backward_filter(target, problem, input, grad_output, grad_filter, db, algorithm, cpp_options);
            });
        },
        py::arg("target"), py::arg("problem"), py::arg("input"), py::arg("grad_output"), py::arg("grad_filter"),
        py::arg("grad_bias") = py::none(), py::arg("algorithm") = Algorithm::Auto, py::arg("options") = py::none(),
        "dw (and db with grad_bias) from x and dy.");
    module.def(
        "backward_bias",
        [](Where& target, const ConvProblem& problem, const Tensor& grad_output, Tensor& grad_bias,
           const OptionalOptions& options) {
            const PassOptions cpp_options = pass_options(options);
            return native_call([&] { return backward_bias(target, problem, grad_output, grad_bias, cpp_options); });
        },
        py::arg("target"), py::arg("problem"), py::arg("grad_output"), py::arg("grad_bias"),
        py::arg("options") = py::none(), "db = sum of dy over images and positions.");
    module.def(
        "layer_backward",
        [](Where& target, const ConvProblem& problem, const Tensor& input, const Tensor& filter,
           const Tensor& grad_output, Tensor& grad_input, Tensor& grad_filter, std::optional<Tensor> grad_bias,
           Algorithm algorithm, const OptionalOptions& options) {
            const PassOptions cpp_options = pass_options(options);
            Tensor* db = grad_bias ? &*grad_bias : nullptr;
            return native_call([&] {
                return layer_backward(target, problem, input, filter, grad_output, grad_input, grad_filter, db,
                                      algorithm, cpp_options);
            });
        },
        py::arg("target"), py::arg("problem"), py::arg("input"), py::arg("filter"), py::arg("grad_output"),
        py::arg("grad_input"), py::arg("grad_filter"), py::arg("grad_bias") = py::none(),
        py::arg("algorithm") = Algorithm::Auto, py::arg("options") = py::none(),
        "dx, dw and (with grad_bias) db in one submission on one workspace.");
}

}  // namespace

void bind_passes(py::module_& module) {
    bind_option_types(module);
    bind_recording(module);
    bind_workspace_queries(module);
    bind_passes_for<Context>(module);
    bind_passes_for<Recording>(module);
}

}  // namespace vkconv::python
