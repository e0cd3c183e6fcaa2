// vkconv backward-data and backward-filter: gradients from .npy files.
//
// Shapes on the command line are in the chosen layout's order (N,C,H,W or N,H,W,C for the input,
// K,C/G,R,S or K,R,S,C/G for the filter), like the arrays in the files.
#include <charconv>
#include <cstdio>

#include "cli_common.hpp"
#include "commands.hpp"

namespace vkconv_cli {
namespace {

vkconv::Error bad(const std::string& message) {
    return {vkconv::ErrorCategory::InvalidArgument, message};
}

// "2,3,5,7" -> {2, 3, 5, 7}; exactly four positive integers.
vkconv::Shape parse_shape(const std::string& text, const std::string& option) {
    vkconv::Shape shape;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string_view part(text.data() + start, comma - start);
        int64_t value = 0;
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        if (part.empty() || ec != std::errc() || end != part.data() + part.size() || value <= 0)
            throw bad(option + " expects four positive integers separated by commas, got '" + text + "'");
        shape.push_back(value);
        start = comma + 1;
    }
    if (shape.size() != 4)
        throw bad(option + " expects four positive integers separated by commas, got '" + text + "'");
    return shape;
}

// parse_shape while the command line is parsed: a malformed shape fails before any file is read.
CLI::Validator shape_check(const std::string& option) {
    return parsed_by([option](const std::string& text) { parse_shape(text, option); }, "A,B,C,D");
}

void require_rank4(const vkconv::NpyArray& array, const std::string& option, const std::string& path) {
    if (array.shape.size() != 4)
        throw bad(option + " '" + path + "' has shape " + vkconv::shape_string(array.shape) + "; expected 4-D");
}

void check_grad_output(const vkconv::ConvProblem& p, const vkconv::NpyArray& dy, const std::string& path,
                       const std::string& shape_option, const vkconv::Shape& given) {
    if (dy.shape != p.output_shape())
        throw bad("--grad-output '" + path + "' has shape " + vkconv::shape_string(dy.shape) + ", but " + shape_option +
                  " " + vkconv::shape_string(given) + " with these convolution options gives an " + "output of shape " +
                  vkconv::shape_string(p.output_shape()));
}

void print_stats(const char* pass, const vkconv::RunStats& stats, const vkconv::Context& context,
                 const vkconv::ConvProblem& p) {
    JsonObject o;
    o.add("pass", pass).add("algorithm", vkconv::to_string(stats.algorithm)).add("device", context.device().name);
    o.add("gpu_ms", stats.gpu_ms).add("gpu_timed", stats.gpu_timed).add("wall_ms", stats.wall_ms);
    o.add("gflops", p.forward_flops() / (stats.gpu_ms * 1e6));
    o.add_memory(stats);
    o.add("dispatches", static_cast<uint64_t>(stats.dispatches));
    if (!stats.variant.empty()) o.add("variant", stats.variant);
    o.add_raw("problem", problem_json(p));
    std::printf("%s\n", o.str().c_str());
}

struct DataArgs {
    std::string grad_output, weight, input_shape, output;
    ConvOptions conv;
};

int run_backward_data(const DataArgs& args) {
    check_writable(args.output, "--output");
    const auto algorithm = vkconv::parse_algorithm(args.conv.algorithm);
    const auto input_shape = parse_shape(args.input_shape, "--input-shape");
    const auto dy = vkconv::read_npy(args.grad_output);
    const auto w = vkconv::read_npy(args.weight);
    require_rank4(dy, "--grad-output", args.grad_output);
    require_rank4(w, "--weight", args.weight);
    vkconv::ConvProblem p;
    args.conv.apply(p);
    set_problem_sizes(p, input_shape, w.shape, "--input-shape", "--weight '" + args.weight + "'");
    args.conv.apply_padding(p);
    p.data_type = args.conv.data_type(dy);
    p.validate();
    check_grad_output(p, dy, args.grad_output, "--input-shape", input_shape);

    vkconv::Context context(args.conv.context_options());
    auto tdy = vkconv::Tensor::from_host(context, p.output_shape(), dy.data, p.data_type);
    auto tw = vkconv::Tensor::from_host(context, p.filter_shape(), w.data, p.data_type);
    vkconv::Tensor tdx(context, p.input_shape(), p.data_type);
    const auto stats = args.conv.run_pass(
        [&] { return vkconv::backward_data(context, p, tdy, tw, tdx, algorithm, args.conv.forward_options(context)); });
    vkconv::write_npy(args.output, p.input_shape(), tdx.download(), file_type(p.data_type));
    if (args.conv.stats) print_stats("backward_data", stats, context, p);
    return kSuccess;
}

struct FilterArgs {
    std::string input, grad_output, weight_shape, output, grad_bias;
    bool fp32_gradients = false;
    ConvOptions conv;
};

int run_backward_filter(const FilterArgs& args) {
    check_writable(args.output, "--output");
    if (!args.grad_bias.empty()) check_writable(args.grad_bias, "--grad-bias");
    const auto algorithm = vkconv::parse_algorithm(args.conv.algorithm);
    const auto weight_shape = parse_shape(args.weight_shape, "--weight-shape");
    const auto x = vkconv::read_npy(args.input);
    const auto dy = vkconv::read_npy(args.grad_output);
    require_rank4(x, "--input", args.input);
    require_rank4(dy, "--grad-output", args.grad_output);
    vkconv::ConvProblem p;
    args.conv.apply(p);
    set_problem_sizes(p, x.shape, weight_shape, "--input '" + args.input + "'", "--weight-shape");
    args.conv.apply_padding(p);
    p.has_bias = !args.grad_bias.empty();
    p.data_type = args.conv.data_type(x);
    p.fp32_weight_gradients = args.fp32_gradients;
    p.validate();
    check_grad_output(p, dy, args.grad_output, "--input of shape", x.shape);

    vkconv::Context context(args.conv.context_options());
    auto tx = vkconv::Tensor::from_host(context, p.input_shape(), x.data, p.data_type);
    auto tdy = vkconv::Tensor::from_host(context, p.output_shape(), dy.data, p.data_type);
    const vkconv::DataType gradient_type = p.weight_gradient_type();
    vkconv::Tensor tdw(context, p.filter_shape(), gradient_type);
    vkconv::Tensor tdb;
    if (p.has_bias) tdb = vkconv::Tensor(context, p.bias_shape(), gradient_type);
    const auto stats = args.conv.run_pass([&] {
        return vkconv::backward_filter(context, p, tx, tdy, tdw, p.has_bias ? &tdb : nullptr, algorithm,
                                       args.conv.forward_options(context));
    });
    const auto dw = tdw.download();
    const auto db = p.has_bias ? tdb.download() : std::vector<float>{};
    vkconv::write_npy(args.output, p.filter_shape(), dw, file_type(gradient_type));
    if (p.has_bias) vkconv::write_npy(args.grad_bias, p.bias_shape(), db, file_type(gradient_type));
    if (args.conv.stats) print_stats("backward_filter", stats, context, p);
    return kSuccess;
}

}  // namespace

Action add_backward_data_command(CLI::App& root) {
    auto args = std::make_shared<DataArgs>();
    auto* command = root.add_subcommand("backward-data", "dx from dy and w (.npy files, float32, C order)");
    command->add_option("--grad-output", args->grad_output, "dy.npy (the output's shape)")->required();
    command->add_option("--weight", args->weight, "filter W.npy (K,C/G,R,S or K,R,S,C/G)")->required();
    command->add_option("--input-shape", args->input_shape, "N,C,H,W (or N,H,W,C with --layout nhwc)")
        ->required()
        ->check(shape_check("--input-shape"));
    command->add_option("--output", args->output, "dx.npy, written only on success")->required();
    args->conv.add_to(*command);
    return [args] { return run_backward_data(*args); };
}

Action add_backward_filter_command(CLI::App& root) {
    auto args = std::make_shared<FilterArgs>();
    auto* command = root.add_subcommand("backward-filter", "dw (and db) from x and dy (.npy files)");
    command->add_option("--input", args->input, "X.npy (N,C,H,W or N,H,W,C)")->required();
    command->add_option("--grad-output", args->grad_output, "dy.npy (the output's shape)")->required();
    command->add_option("--weight-shape", args->weight_shape, "K,C/G,R,S (or K,R,S,C/G with --layout nhwc)")
        ->required()
        ->check(shape_check("--weight-shape"));
    command->add_option("--output", args->output, "dw.npy, written only on success")->required();
    command->add_option("--grad-bias", args->grad_bias, "also write db.npy (K), the bias gradient");
    command->add_flag("--fp32-grads", args->fp32_gradients,
                      "with a 16-bit --dtype or input: write dw and db as float32, the unrounded fp32 sums");
    args->conv.add_to(*command);
    return [args] { return run_backward_filter(*args); };
}

}  // namespace vkconv_cli
