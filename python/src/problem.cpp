// The problem descriptors and the enums every call takes: ConvProblem, ConvTransposeProblem, Layout,
// AutoPad, Pass, Algorithm, AutoChoice, Activation, with their text forms.
#include "bindings.hpp"
#include "keywords.hpp"

namespace vkconv::python {

std::string repr_fields(const py::object& object, std::initializer_list<const char*> fields) {
    std::string text = std::string(py::str(py::type::of(object).attr("__name__"))) + "(";
    bool first = true;
    for (const char* field : fields) {
        text += (first ? "" : ", ") + std::string(field) + "=" + std::string(py::repr(object.attr(field)));
        first = false;
    }
    return text + ")";
}

namespace {

// str() of an enum value is its text name ("implicit-gemm"). Set as a new attribute: a def() would join
// pybind11's own __str__ as a later overload, which never runs.
template <class E>
void text_str(py::enum_<E>& cls) {
    py::setattr(cls, "__str__",
                py::cpp_function([](E value) { return std::string(to_string(value)); }, py::is_method(cls)));
}

// Enums also convert from their text names ("implicit-gemm", "nhwc"), as the CLI spells them.
template <class E, class Parse>
void text_names(py::enum_<E>& cls, Parse parse) {
    cls.def(py::init([parse](const std::string& text) { return parse(text); }), py::arg("name"));
    py::implicitly_convertible<std::string, E>();
    text_str(cls);
}

// The enums of the problem descriptor: layout, ONNX's auto padding and the passes.
void bind_problem_enums(py::module_& module) {
    py::enum_<Layout> layout(module, "Layout");
    layout.value("NCHW", Layout::NCHW).value("NHWC", Layout::NHWC);
    text_names(layout, parse_layout);

    py::enum_<AutoPad> auto_pad(module, "AutoPad");
    auto_pad.value("Valid", AutoPad::Valid).value("SameUpper", AutoPad::SameUpper).value("SameLower", AutoPad::SameLower);
    text_names(auto_pad, parse_auto_pad);

    py::enum_<DataType> data_type(module, "DataType", "A tensor's element type: F32, F16 or BF16.");
    data_type.value("F32", DataType::F32).value("F16", DataType::F16).value("BF16", DataType::BF16);
    text_names(data_type, parse_data_type);
    module.def("element_bytes", &element_bytes, py::arg("dtype"));

    py::enum_<Pass> pass(module, "Pass");
    pass.value("Forward", Pass::Forward)
        .value("BackwardData", Pass::BackwardData)
        .value("BackwardFilter", Pass::BackwardFilter)
        .value("BackwardBias", Pass::BackwardBias);
    text_names(pass, parse_pass);
}

// The algorithms: Auto and one value per row of the algorithm table, with the table's queries.
void bind_algorithms(py::module_& module) {
    py::enum_<Algorithm> algorithm(module, "Algorithm");
    // Auto and one value per row of the algorithm table, named by its C++ enumerator.
    algorithm.value("Auto", Algorithm::Auto);
#define VKCONV_PYTHON_ALGORITHM(enumerator, name, entry, summary) algorithm.value(#enumerator, Algorithm::enumerator);
    VKCONV_ALGORITHMS(VKCONV_PYTHON_ALGORITHM)
#undef VKCONV_PYTHON_ALGORITHM
    text_names(algorithm, parse_algorithm);
    module.def(
        "all_algorithms", [] { return std::vector<Algorithm>(all_algorithms().begin(), all_algorithms().end()); },
        "Every algorithm (Auto excluded), in the algorithm table's order.");
    module.def("algorithm_applies", &algorithm_applies, py::arg("algorithm"), py::arg("problem"), py::arg("pass_"),
               "Whether the algorithm runs this pass of problems shaped like this one at all (depthwise: one input "
               "channel per group); the device and a workspace limit may still refuse it.");
    module.def("algorithm_variants", &algorithm_variants, py::arg("algorithm"), py::arg("pass_"),
               "The algorithm's forms in this pass (PassOptions.variant, RunStats.variant): MEC's forward 'A' and "
               "'B', Winograd's 'F(4x4,3x3)' and 'F(2x2,3x3)'; none for the others.");
}

// The enums that steer and report a choice: how Auto chooses, where a choice came from,
// and the fused activation.
void bind_choice_enums(py::module_& module) {
    py::enum_<AutoChoice> auto_choice(module, "AutoChoice");
    auto_choice.value("Measure", AutoChoice::Measure)
        .value("Heuristic", AutoChoice::Heuristic)
        .value("Stored", AutoChoice::Stored);
    text_names(auto_choice, parse_auto_choice);

    py::enum_<ChoiceSource> source(module, "ChoiceSource");
    source.value("Named", ChoiceSource::Named)
        .value("Heuristic", ChoiceSource::Heuristic)
        .value("Stored", ChoiceSource::Stored)
        .value("Measured", ChoiceSource::Measured);
    text_str(source);

    py::enum_<Activation> activation(module, "Activation");
    activation.value("None_", Activation::None)
        .value("ReLU", Activation::ReLU)
        .value("ReLU6", Activation::ReLU6)
        .value("LeakyReLU", Activation::LeakyReLU);
    text_names(activation, parse_activation);
}

// A ConvProblem's pickled state: every field, in declaration order.
py::tuple conv_problem_state(const ConvProblem& p) {
    return py::make_tuple(p.N, p.C, p.H, p.W, p.K, p.R, p.S, p.pad_h, p.pad_w, p.pad_h_end, p.pad_w_end, p.stride_h,
                          p.stride_w, p.dilation_h, p.dilation_w, p.groups, p.layout, p.has_bias, p.data_type,
                          p.fp32_weight_gradients);
}

ConvProblem conv_problem_from_state(const py::tuple& t) {
    ConvProblem p;
    // 20 fields; 18 from before data_type (then F32), 19 from before fp32_weight_gradients (then false).
    if (t.size() < 18 || t.size() > 20) throw py::value_error("ConvProblem: bad pickled state");
    p.N = t[0].cast<int64_t>(), p.C = t[1].cast<int64_t>(), p.H = t[2].cast<int64_t>();
    p.W = t[3].cast<int64_t>(), p.K = t[4].cast<int64_t>(), p.R = t[5].cast<int64_t>();
    p.S = t[6].cast<int64_t>(), p.pad_h = t[7].cast<int64_t>(), p.pad_w = t[8].cast<int64_t>();
    p.pad_h_end = t[9].cast<std::optional<int64_t>>();
    p.pad_w_end = t[10].cast<std::optional<int64_t>>();
    p.stride_h = t[11].cast<int64_t>(), p.stride_w = t[12].cast<int64_t>();
    p.dilation_h = t[13].cast<int64_t>(), p.dilation_w = t[14].cast<int64_t>();
    p.groups = t[15].cast<int64_t>(), p.layout = t[16].cast<Layout>();
    p.has_bias = t[17].cast<bool>();
    if (t.size() >= 19) p.data_type = t[18].cast<DataType>();
    if (t.size() == 20) p.fp32_weight_gradients = t[19].cast<bool>();
    return p;
}

// ConvProblem: its fields, then its derived shapes and sizes, then pickling.
void bind_conv_problem(py::module_& module) {
    py::class_<ConvProblem> problem(module, "ConvProblem",
                                    "The one descriptor of a convolution (N, C, H, W input; K filters of R x S; pads, "
                                    "strides, dilations, groups, layout, bias). Keyword arguments set the fields.");
    init_from_keywords(problem);
    problem.def_readwrite("N", &ConvProblem::N)
        .def_readwrite("C", &ConvProblem::C)
        .def_readwrite("H", &ConvProblem::H)
        .def_readwrite("W", &ConvProblem::W)
        .def_readwrite("K", &ConvProblem::K)
        .def_readwrite("R", &ConvProblem::R)
        .def_readwrite("S", &ConvProblem::S)
        .def_readwrite("pad_h", &ConvProblem::pad_h)
        .def_readwrite("pad_w", &ConvProblem::pad_w)
        .def_readwrite("pad_h_end", &ConvProblem::pad_h_end)
        .def_readwrite("pad_w_end", &ConvProblem::pad_w_end)
        .def_readwrite("stride_h", &ConvProblem::stride_h)
        .def_readwrite("stride_w", &ConvProblem::stride_w)
        .def_readwrite("dilation_h", &ConvProblem::dilation_h)
        .def_readwrite("dilation_w", &ConvProblem::dilation_w)
        .def_readwrite("groups", &ConvProblem::groups)
        .def_readwrite("layout", &ConvProblem::layout)
        .def_readwrite("has_bias", &ConvProblem::has_bias)
        .def_readwrite("data_type", &ConvProblem::data_type)
        .def_readwrite("fp32_weight_gradients", &ConvProblem::fp32_weight_gradients);
    problem.def("validate", &ConvProblem::validate)
        .def("weight_gradient_type", &ConvProblem::weight_gradient_type)
        .def("pad_top", &ConvProblem::pad_top)
        .def("pad_bottom", &ConvProblem::pad_bottom)
        .def("pad_left", &ConvProblem::pad_left)
        .def("pad_right", &ConvProblem::pad_right)
        .def("symmetric_padding", &ConvProblem::symmetric_padding)
        .def("set_padding", &ConvProblem::set_padding, py::arg("top"), py::arg("bottom"), py::arg("left"),
             py::arg("right"))
        .def("set_auto_padding", &ConvProblem::set_auto_padding, py::arg("mode"))
        .def("P", &ConvProblem::P)
        .def("Q", &ConvProblem::Q)
        .def("channels_per_group", &ConvProblem::channels_per_group)
        .def("filters_per_group", &ConvProblem::filters_per_group)
        .def("input_shape", &ConvProblem::input_shape)
        .def("filter_shape", &ConvProblem::filter_shape)
        .def("output_shape", &ConvProblem::output_shape)
        .def("bias_shape", &ConvProblem::bias_shape)
        .def("input_elements", &ConvProblem::input_elements)
        .def("filter_elements", &ConvProblem::filter_elements)
        .def("output_elements", &ConvProblem::output_elements)
        .def("forward_flops", &ConvProblem::forward_flops)
        .def("str", &ConvProblem::str)
        .def("__str__", &ConvProblem::str)
        .def("__repr__", [](const ConvProblem& p) { return "ConvProblem(" + p.str() + ")"; });
    problem.def(py::pickle(&conv_problem_state, &conv_problem_from_state));
}

void bind_conv_transpose_problem(py::module_& module) {
    py::class_<ConvTransposeProblem> transpose(module, "ConvTransposeProblem",
                                               "A transposed convolution as ONNX's ConvTranspose defines it.");
    init_from_keywords(transpose);
    transpose.def_readwrite("N", &ConvTransposeProblem::N)
        .def_readwrite("C", &ConvTransposeProblem::C)
        .def_readwrite("H", &ConvTransposeProblem::H)
        .def_readwrite("W", &ConvTransposeProblem::W)
        .def_readwrite("K", &ConvTransposeProblem::K)
        .def_readwrite("R", &ConvTransposeProblem::R)
        .def_readwrite("S", &ConvTransposeProblem::S)
        .def_readwrite("stride_h", &ConvTransposeProblem::stride_h)
        .def_readwrite("stride_w", &ConvTransposeProblem::stride_w)
        .def_readwrite("dilation_h", &ConvTransposeProblem::dilation_h)
        .def_readwrite("dilation_w", &ConvTransposeProblem::dilation_w)
        .def_readwrite("groups", &ConvTransposeProblem::groups)
        .def_readwrite("pad_top", &ConvTransposeProblem::pad_top)
        .def_readwrite("pad_bottom", &ConvTransposeProblem::pad_bottom)
        .def_readwrite("pad_left", &ConvTransposeProblem::pad_left)
        .def_readwrite("pad_right", &ConvTransposeProblem::pad_right)
        .def_readwrite("output_padding_h", &ConvTransposeProblem::output_padding_h)
        .def_readwrite("output_padding_w", &ConvTransposeProblem::output_padding_w)
        .def_readwrite("auto_pad", &ConvTransposeProblem::auto_pad)
        .def_readwrite("output_size", &ConvTransposeProblem::output_size)
        .def_readwrite("layout", &ConvTransposeProblem::layout)
        .def_readwrite("has_bias", &ConvTransposeProblem::has_bias)
        .def_readwrite("data_type", &ConvTransposeProblem::data_type)
        .def("validate", &ConvTransposeProblem::validate)
        .def("resolved_pads", &ConvTransposeProblem::resolved_pads)
        .def("P", &ConvTransposeProblem::P)
        .def("Q", &ConvTransposeProblem::Q)
        .def("input_shape", &ConvTransposeProblem::input_shape)
        .def("filter_shape", &ConvTransposeProblem::filter_shape)
        .def("output_shape", &ConvTransposeProblem::output_shape)
        .def("bias_shape", &ConvTransposeProblem::bias_shape)
        .def("convolution", &ConvTransposeProblem::convolution)
        .def("str", &ConvTransposeProblem::str)
        .def("__str__", &ConvTransposeProblem::str)
        .def("__repr__", [](const ConvTransposeProblem& p) { return "ConvTransposeProblem(" + p.str() + ")"; });
}

}  // namespace

void bind_problem(py::module_& module) {
    bind_problem_enums(module);
    bind_algorithms(module);
    bind_choice_enums(module);
    module.def("shape_elements", &shape_elements, py::arg("shape"));
    bind_conv_problem(module);
    bind_conv_transpose_problem(module);
}

}  // namespace vkconv::python
