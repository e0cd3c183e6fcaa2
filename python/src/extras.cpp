// The rest of the C++ API: the GEMM, ONNX-style transposed convolution, and the double-precision CPU
// reference (vkconv.reference), which tests and users check the GPU's results against.
#include "bindings.hpp"
#include "keywords.hpp"
#include "options.hpp"

namespace vkconv::python {

namespace {

py::array_t<double> to_numpy(std::vector<double>&& values, const Shape& shape) {
    auto* owner = new std::vector<double>(std::move(values));
    py::capsule free_owner(owner, [](void* pointer) { delete static_cast<std::vector<double>*>(pointer); });
    return py::array_t<double>(shape, owner->data(), free_owner);
}

// The reference reads the caller's float32 arrays of the problem's shapes.
void bind_reference(py::module_& module) {
    py::module_ reference = module.def_submodule("reference", "Double-precision CPU reference of every pass.");
    reference.def(
        "forward",
        [](const ConvProblem& problem, const py::object& input, const py::object& filter, const py::object& bias) {
            problem.validate();
            const Shape input_shape = problem.input_shape(), filter_shape = problem.filter_shape();
            const Shape bias_shape = problem.bias_shape();
            const FloatArray x = float_array(input, "reference.forward input", false, &input_shape);
            const FloatArray w = float_array(filter, "reference.forward filter", false, &filter_shape);
            std::optional<FloatArray> b;
            if (!bias.is_none()) b = float_array(bias, "reference.forward bias", false, &bias_shape);
            std::vector<double> y = native_call([&] {
                return reference::forward(problem, x.values, w.values,
                                          b ? std::span<const float>(b->values) : std::span<const float>());
            });
            return to_numpy(std::move(y), problem.output_shape());
        },
        py::arg("problem"), py::arg("input"), py::arg("filter"), py::arg("bias") = py::none());
    reference.def(
        "backward_data",
        [](const ConvProblem& problem, const py::object& grad_output, const py::object& filter) {
            problem.validate();
            const Shape output_shape = problem.output_shape(), filter_shape = problem.filter_shape();
            const FloatArray dy = float_array(grad_output, "reference.backward_data grad_output", false, &output_shape);
            const FloatArray w = float_array(filter, "reference.backward_data filter", false, &filter_shape);
            std::vector<double> dx = native_call([&] { return reference::backward_data(problem, dy.values, w.values); });
            return to_numpy(std::move(dx), problem.input_shape());
        },
        py::arg("problem"), py::arg("grad_output"), py::arg("filter"));
    reference.def(
        "backward_filter",
        [](const ConvProblem& problem, const py::object& input, const py::object& grad_output) {
            problem.validate();
            const Shape input_shape = problem.input_shape(), output_shape = problem.output_shape();
            const FloatArray x = float_array(input, "reference.backward_filter input", false, &input_shape);
            const FloatArray dy = float_array(grad_output, "reference.backward_filter grad_output", false, &output_shape);
            std::vector<double> dw =
                native_call([&] { return reference::backward_filter(problem, x.values, dy.values); });
            return to_numpy(std::move(dw), problem.filter_shape());
        },
        py::arg("problem"), py::arg("input"), py::arg("grad_output"));
    reference.def(
        "backward_bias",
        [](const ConvProblem& problem, const py::object& grad_output) {
            problem.validate();
            const Shape output_shape = problem.output_shape();
            const FloatArray dy = float_array(grad_output, "reference.backward_bias grad_output", false, &output_shape);
            std::vector<double> db = native_call([&] { return reference::backward_bias(problem, dy.values); });
            return to_numpy(std::move(db), problem.bias_shape());
        },
        py::arg("problem"), py::arg("grad_output"));
}

void bind_gemm(py::module_& module) {
    py::class_<GemmOptions> options(module, "GemmOptions", "c = alpha * op(a) op(b) + beta * c.");
    init_from_keywords(options);
    options.def_readwrite("transpose_a", &GemmOptions::transpose_a)
        .def_readwrite("transpose_b", &GemmOptions::transpose_b)
        .def_readwrite("alpha", &GemmOptions::alpha)
        .def_readwrite("beta", &GemmOptions::beta)
        .def_readwrite("configuration", &GemmOptions::configuration);
    const auto bind_for = [&](auto* target_type) {
        using Where = std::remove_pointer_t<decltype(target_type)>;
        module.def(
            "gemm",
            [](Where& target, const Tensor& a, const Tensor& b, Tensor& c, const std::optional<GemmOptions>& options) {
                const GemmOptions cpp = options.value_or(GemmOptions{});
                return native_call([&] { return gemm(target, a, b, c, cpp); });
            },
            py::arg("target"), py::arg("a"), py::arg("b"), py::arg("c"), py::arg("options") = py::none());
    };
    bind_for(static_cast<Context*>(nullptr));
    bind_for(static_cast<Recording*>(nullptr));
    module.def("gemm_configurations", &gemm_configurations, py::arg("context"));
}

void bind_transpose(py::module_& module) {
    module.def(
        "conv_transpose_workspace_bytes",
        [](const Context& context, const ConvTransposeProblem& problem, Algorithm algorithm,
           const std::optional<PyPassOptions>& options) {
            return native_call(
                [&] { return conv_transpose_workspace_bytes(context, problem, algorithm, pass_options(options)); });
        },
        py::arg("context"), py::arg("problem"), py::arg("algorithm") = Algorithm::Auto, py::arg("options") = py::none());
    const auto bind_for = [&](auto* target_type) {
        using Where = std::remove_pointer_t<decltype(target_type)>;
        module.def(
            "conv_transpose",
            [](Where& target, const ConvTransposeProblem& problem, const Tensor& input, const Tensor& filter,
               const std::optional<Tensor>& bias, Tensor& output, Algorithm algorithm,
               const std::optional<PyPassOptions>& options) {
                const PassOptions cpp = pass_options(options);
                const Tensor* b = bias ? &*bias : nullptr;
                return native_call(
                    [&] { return conv_transpose(target, problem, input, filter, b, output, algorithm, cpp); });
            },
            py::arg("target"), py::arg("problem"), py::arg("input"), py::arg("filter"), py::arg("bias"),
            py::arg("output"), py::arg("algorithm") = Algorithm::Auto, py::arg("options") = py::none());
    };
    bind_for(static_cast<Context*>(nullptr));
    bind_for(static_cast<Recording*>(nullptr));
}

}  // namespace

void bind_extras(py::module_& module) {
    bind_reference(module);
    bind_gemm(module);
    bind_transpose(module);
}

}  // namespace vkconv::python
