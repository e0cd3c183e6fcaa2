// The convolution commands: forward, backward-data, backward-filter and backward-bias on MATLAB arrays.
#include "mex_commands.hpp"
#include "mex_options.hpp"
#include "mex_session.hpp"

namespace vkconv::mex {

namespace {

[[noreturn]] void invalid(const std::string& message) {
    throw Error(ErrorCategory::InvalidArgument, message);
}

void require_arguments(int count, int needed, const char* usage) {
    if (count < needed) invalid(std::string("not enough arguments: ") + usage);
}

// A size argument ([H W C N] data or [R S Cg Kg G] weights) as `rank` extents.
std::vector<int64_t> size_argument(const mxArray* array, size_t rank, const std::string& role) {
    std::vector<int64_t> v = whole_numbers(array, role, 1);
    if (v.size() > rank)
        invalid(role + " must have at most " + std::to_string(rank) + " elements; got " + describe(array));
    v.resize(rank, 1);
    return v;
}

// The bias argument: [] for none, a scalar for every filter, or one value per filter.
const mxArray* bias_argument(const mxArray* bias, int64_t filters) {
    if (bias && mxIsNumeric(bias) && mxIsEmpty(bias) && !mxIsSparse(bias)) return nullptr;
    require_float_array(bias, "bias");
    const size_t count = mxGetNumberOfElements(bias);
    if (count != 1 && static_cast<int64_t>(count) != filters)
        invalid("bias must be [], a scalar or one value per filter (" + std::to_string(filters) + "); got " +
                describe(bias));
    return bias;
}

Tensor upload_bias(Context& context, const mxArray* bias, const ConvProblem& problem) {
    if (mxGetNumberOfElements(bias) == static_cast<size_t>(problem.K))
        return upload(context, bias, problem.bias_shape(), problem.data_type);
    const float value = static_cast<float>(mxGetScalar(bias));  // a scalar for every filter
    return Tensor::from_host(context, problem.bias_shape(), std::vector<float>(problem.K, value), problem.data_type);
}

void remember(const char* command, const RunStats& stats) {
    last_run() = {command, stats};
}

// A backward pass's problem, from the sizes given and the arrays passed, with dY's size checked against it.
ConvProblem gradient_problem(const MatlabConv& conv, const ConvOptions& options, bool bias, const mxArray* dy) {
    const ConvProblem problem = to_problem(conv, options, bias);
    ConvProblem::check_shape("dY (height, width, filters, batch)", extents(dy, 4, "dY"), output_extents(problem));
    return problem;
}

// The checks the three convolution commands open with: enough arguments, two float arrays first, then the
// options after the third argument.
ConvOptions opening(const mxArray* const* args, int count, const char* usage, const char* first, const char* second) {
    require_arguments(count, 3, usage);
    require_float_array(args[0], first);
    require_float_array(args[1], second);
    return parse_conv_options(args + 3, count - 3);
}

}  // namespace

Outputs forward_command(const mxArray* const* args, int count, int) {
    const ConvOptions options =
        opening(args, count, "Y = vkconv('forward', X, weights, bias, Name, Value, ...)", "X", "weights");
    const MatlabConv conv{extents(args[0], 4, "X"), extents(args[1], 5, "weights")};
    const mxArray* bias = bias_argument(args[2], conv.weights[3] * conv.weights[4]);
    const ConvProblem problem = to_problem(conv, options, bias != nullptr);
    Outputs out;
    out.push_back(result_array(output_extents(problem), all_double({args[0], args[1], bias})));

    Context& c = context();
    const Tensor x = upload(c, args[0], problem.input_shape(), problem.data_type);
    const Tensor w = upload(c, args[1], problem.filter_shape(), problem.data_type);
    const Tensor b = bias ? upload_bias(c, bias, problem) : Tensor();
    Tensor y(c, problem.output_shape(), problem.data_type);
    remember("forward",
             vkconv::forward(c, problem, x, w, bias ? &b : nullptr, y, options.algorithm, pass_options(options)));
    download(y, out[0].get());
    return out;
}

Outputs backward_data_command(const mxArray* const* args, int count, int) {
    const ConvOptions options =
        opening(args, count, "dX = vkconv('backwardData', dY, weights, sizeX, Name, Value, ...)", "dY", "weights");
    const MatlabConv conv{size_argument(args[2], 4, "sizeX"), extents(args[1], 5, "weights")};
    const ConvProblem problem = gradient_problem(conv, options, false, args[0]);
    Outputs out;
    out.push_back(result_array(conv.data, all_double({args[0], args[1]})));

    Context& c = context();
    const Tensor dy = upload(c, args[0], problem.output_shape(), problem.data_type);
    const Tensor w = upload(c, args[1], problem.filter_shape(), problem.data_type);
    Tensor dx(c, problem.input_shape(), problem.data_type);
    remember("backwardData", vkconv::backward_data(c, problem, dy, w, dx, options.algorithm, pass_options(options)));
    download(dx, out[0].get());
    return out;
}

Outputs backward_filter_command(const mxArray* const* args, int count, int outputs) {
    const ConvOptions options =
        opening(args, count, "[dW, db] = vkconv('backwardFilter', X, dY, sizeW, Name, Value, ...)", "X", "dY");
    const MatlabConv conv{extents(args[0], 4, "X"), size_argument(args[2], 5, "sizeW")};
    const bool with_bias = outputs >= 2;
    const ConvProblem problem = gradient_problem(conv, options, with_bias, args[1]);
    const bool as_double = all_double({args[0], args[1]});
    Outputs out;  // dW's size from the problem: [R S Cg Kg G] in MATLAB's order
    out.push_back(result_array(
        {problem.S, problem.R, problem.channels_per_group(), problem.filters_per_group(), problem.groups}, as_double));
    if (with_bias) out.push_back(result_array({problem.K, 1}, as_double));

    Context& c = context();
    const Tensor x = upload(c, args[0], problem.input_shape(), problem.data_type);
    const Tensor dy = upload(c, args[1], problem.output_shape(), problem.data_type);
    Tensor dw(c, problem.filter_shape(), problem.weight_gradient_type());
    Tensor db = with_bias ? Tensor(c, problem.bias_shape(), problem.weight_gradient_type()) : Tensor();
    remember("backwardFilter", vkconv::backward_filter(c, problem, x, dy, dw, with_bias ? &db : nullptr,
                                                       options.algorithm, pass_options(options)));
    download(dw, out[0].get());
    if (with_bias) download(db, out[1].get());
    return out;
}

Outputs backward_bias_command(const mxArray* const* args, int count, int) {
    require_arguments(count, 1, "db = vkconv('backwardBias', dY, Name, Value, ...)");
    require_float_array(args[0], "dY");
    const ConvOptions options = parse_bias_options(args + 1, count - 1);
    const std::vector<int64_t> dims = extents(args[0], 4, "dY");
    ConvProblem problem;  // a 1x1 convolution whose output is dY: db sums dY over all but its third dimension
    problem.N = dims[3], problem.C = 1, problem.H = dims[1], problem.W = dims[0], problem.K = dims[2];
    problem.has_bias = true, problem.data_type = options.storage, problem.fp32_weight_gradients = true;
    problem.validate();
    Outputs out;
    out.push_back(result_array({problem.K, 1}, all_double({args[0]})));

    Context& c = context();
    const Tensor dy = upload(c, args[0], problem.output_shape(), problem.data_type);
    Tensor db(c, problem.bias_shape(), problem.weight_gradient_type());
    remember("backwardBias", vkconv::backward_bias(c, problem, dy, db, pass_options(options)));
    download(db, out[0].get());
    return out;
}

}  // namespace vkconv::mex
