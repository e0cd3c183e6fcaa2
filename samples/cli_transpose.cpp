// vkconv conv-transpose: a transposed convolution (ONNX ConvTranspose) from .npy files.
#include <cstdio>

#include "cli_common.hpp"
#include "commands.hpp"

namespace vkconv_cli {
namespace {

struct TransposeArgs {
    std::string input, weight, bias, output;
    std::string output_padding = "0", output_shape;
    ConvOptions conv;
};

vkconv::Error bad(const std::string& message) {
    return {vkconv::ErrorCategory::InvalidArgument, message};
}

// The problem from the arrays' shapes and the options, naming both sides of any mismatch.
vkconv::ConvTransposeProblem problem_from(const TransposeArgs& args, const vkconv::NpyArray& x,
                                          const vkconv::NpyArray& w, const vkconv::NpyArray* b) {
    vkconv::ConvTransposeProblem p;
    p.layout = vkconv::parse_layout(args.conv.layout);
    const bool nhwc = p.layout == vkconv::Layout::NHWC;
    if (x.shape.size() != 4)
        throw bad("--input '" + args.input + "' has shape " + vkconv::shape_string(x.shape) + "; expected 4-D " +
                  (nhwc ? "N,H,W,C" : "N,C,H,W"));
    if (w.shape.size() != 4)
        throw bad("--weight '" + args.weight + "' has shape " + vkconv::shape_string(w.shape) + "; expected 4-D " +
                  (nhwc ? "C,R,S,K/groups" : "C,K/groups,R,S"));
    p.N = x.shape[0], p.C = nhwc ? x.shape[3] : x.shape[1], p.H = nhwc ? x.shape[1] : x.shape[2];
    p.W = nhwc ? x.shape[2] : x.shape[3];
    std::tie(p.stride_h, p.stride_w) = parse_pair(args.conv.stride, "--stride");
    std::tie(p.dilation_h, p.dilation_w) = parse_pair(args.conv.dilation, "--dilation");
    std::tie(p.output_padding_h, p.output_padding_w) = parse_pair(args.output_padding, "--output-padding", 0);
    p.groups = args.conv.groups;
    if (w.shape[0] != p.C)
        throw bad("--weight '" + args.weight + "' has " + std::to_string(w.shape[0]) + " input channels, but --input '" +
                  args.input + "' has C = " + std::to_string(p.C));
    p.K = (nhwc ? w.shape[3] : w.shape[1]) * p.groups;
    p.R = nhwc ? w.shape[1] : w.shape[2], p.S = nhwc ? w.shape[2] : w.shape[3];
    if (!args.conv.auto_pad.empty() && !args.conv.padding.empty())
        throw bad("--auto-pad and --padding cannot be combined: --auto-pad works the pads out itself");
    if (!args.output_shape.empty() && !args.conv.padding.empty())
        throw bad("--output-shape and --padding cannot be combined: the pads follow from the output shape");
    if (!args.conv.auto_pad.empty()) p.auto_pad = vkconv::parse_auto_pad(args.conv.auto_pad);
    if (!args.conv.padding.empty()) {
        const auto pads = parse_padding(args.conv.padding);
        p.pad_top = pads[0], p.pad_bottom = pads[1], p.pad_left = pads[2], p.pad_right = pads[3];
    }
    if (!args.output_shape.empty()) {
        const auto [rows, columns] = parse_pair(args.output_shape, "--output-shape");
        p.output_size = std::array<int64_t, 2>{rows, columns};
    }
    p.has_bias = b != nullptr;
    p.validate();
    if (w.shape != p.filter_shape())
        throw bad("--weight '" + args.weight + "' has shape " + vkconv::shape_string(w.shape) + "; expected " +
                  vkconv::shape_string(p.filter_shape()) + " with --groups " + std::to_string(p.groups));
    if (b && b->shape != p.bias_shape())
        throw bad("--bias '" + args.bias + "' has shape " + vkconv::shape_string(b->shape) + "; expected [" +
                  std::to_string(p.K) + "] (the output channels, from --weight and --groups)");
    return p;
}

int run_conv_transpose(const TransposeArgs& args) {
    check_writable(args.output, "--output");
    const auto algorithm = vkconv::parse_algorithm(args.conv.algorithm);
    const auto x = vkconv::read_npy(args.input);
    const auto w = vkconv::read_npy(args.weight);
    vkconv::NpyArray b;
    if (!args.bias.empty()) b = vkconv::read_npy(args.bias);
    auto problem = problem_from(args, x, w, args.bias.empty() ? nullptr : &b);
    problem.data_type = args.conv.data_type(x);  // --dtype, or the input file's (float16: f16)

    vkconv::Context context(args.conv.context_options());
    const vkconv::DataType type = problem.data_type;
    auto input = vkconv::Tensor::from_host(context, problem.input_shape(), x.data, type);
    auto filter = vkconv::Tensor::from_host(context, problem.filter_shape(), w.data, type);
    vkconv::Tensor bias;
    if (problem.has_bias) bias = vkconv::Tensor::from_host(context, problem.bias_shape(), b.data, type);
    vkconv::Tensor output(context, problem.output_shape(), type);
    const auto stats = args.conv.run_pass([&] {
        return vkconv::conv_transpose(context, problem, input, filter, problem.has_bias ? &bias : nullptr, output,
                                      algorithm, args.conv.forward_options(context));
    });
    vkconv::write_npy(args.output, problem.output_shape(), output.download(), file_type(type));
    if (args.conv.stats) {
        JsonObject o;
        o.add("pass", "conv_transpose").add("algorithm", vkconv::to_string(stats.algorithm));
        o.add("device", context.device().name).add("gpu_ms", stats.gpu_ms).add("gpu_timed", stats.gpu_timed);
        o.add("wall_ms", stats.wall_ms).add("gflops", problem.convolution().forward_flops() / (stats.gpu_ms * 1e6));
        o.add_memory(stats);
        o.add("dispatches", static_cast<uint64_t>(stats.dispatches));
        const auto pads = problem.resolved_pads();
        o.add("output_h", problem.P()).add("output_w", problem.Q());
        o.add("pad_top", pads[0]).add("pad_bottom", pads[1]).add("pad_left", pads[2]).add("pad_right", pads[3]);
        o.add_raw("convolution", problem_json(problem.convolution()));
        std::printf("%s\n", o.str().c_str());
    }
    return kSuccess;
}

}  // namespace

Action add_conv_transpose_command(CLI::App& root) {
    auto args = std::make_shared<TransposeArgs>();
    auto* command = root.add_subcommand(
        "conv-transpose", "y = conv_transpose(x, w) + b from .npy files, as ONNX ConvTranspose (float32 or float16, C order)");
    command->add_option("--input", args->input, "input X.npy (N,C,H,W or N,H,W,C)")->required();
    command->add_option("--weight", args->weight, "filter W.npy (C,K/G,R,S or C,R,S,K/G)")->required();
    command->add_option("--bias", args->bias, "optional bias B.npy (K)");
    command->add_option("--output", args->output, "output Y.npy, written only on success")->required();
    command
        ->add_option("--output-padding", args->output_padding,
                     "rows and columns added at the bottom and right: P or PH,PW (less than the stride or dilation)")
        ->check(parsed_by([](const std::string& text) { parse_pair(text, "--output-padding", 0); }, "N|N,M"))
        ->capture_default_str();
    command
        ->add_option("--output-shape", args->output_shape,
                     "the output's rows and columns H,W (ONNX output_shape): the pads follow from it")
        ->check(parsed_by([](const std::string& text) { parse_pair(text, "--output-shape"); }, "H,W"));
    args->conv.add_to(*command);
    return [args] { return run_conv_transpose(*args); };
}

}  // namespace vkconv_cli
