// vkconv forward: y = conv(x, w) (+ b) from .npy files, optionally through the fused epilogue
// y = act(alpha * conv(x, w) + b + beta * z) with z from --residual.
#include <cstdio>

#include "cli_common.hpp"
#include "commands.hpp"

namespace vkconv_cli {
namespace {

struct ForwardArgs {
    std::string input, weight, bias, output, residual;
    ConvOptions conv;
    EpilogueOptions epilogue;
};

vkconv::Error bad(const std::string& message) {
    return {vkconv::ErrorCategory::InvalidArgument, message};
}

// Derives the problem from the arrays' shapes and the options, naming both sides of any mismatch.
vkconv::ConvProblem problem_from(const ForwardArgs& args, const vkconv::NpyArray& x, const vkconv::NpyArray& w,
                                 const vkconv::NpyArray* b) {
    vkconv::ConvProblem p;
    args.conv.apply(p);
    const bool nhwc = p.layout == vkconv::Layout::NHWC;
    if (x.shape.size() != 4)
        throw bad("--input '" + args.input + "' has shape " + vkconv::shape_string(x.shape) + "; expected 4-D " +
                  (nhwc ? "N,H,W,C" : "N,C,H,W"));
    if (w.shape.size() != 4)
        throw bad("--weight '" + args.weight + "' has shape " + vkconv::shape_string(w.shape) + "; expected 4-D " +
                  (nhwc ? "K,R,S,C/groups" : "K,C/groups,R,S"));
    set_problem_sizes(p, x.shape, w.shape, "--input '" + args.input + "'", "--weight '" + args.weight + "'");
    args.conv.apply_padding(p);
    p.has_bias = b != nullptr;
    p.validate();
    if (b && b->shape != p.bias_shape())
        throw bad("--bias '" + args.bias + "' has shape " + vkconv::shape_string(b->shape) + "; expected [" +
                  std::to_string(p.K) + "] (K, from --weight)");
    return p;
}

// The residual for --beta, of the output's shape; InvalidArgument naming the options when --beta and
// --residual do not come together.
vkconv::NpyArray read_residual(const ForwardArgs& args, const vkconv::ConvProblem& p) {
    const bool beta = args.epilogue.has_residual();
    if (beta && args.residual.empty())
        throw bad("--beta " + number_text(args.epilogue.beta) +
                  " scales a residual: give it with --residual Z.npy (the output's shape)");
    if (!beta && !args.residual.empty())
        throw bad("--residual '" + args.residual + "' is read only with a nonzero --beta (it is 0)");
    vkconv::NpyArray z;
    if (!beta) return z;
    z = vkconv::read_npy(args.residual);
    if (z.shape != p.output_shape())
        throw bad("--residual '" + args.residual + "' has shape " + vkconv::shape_string(z.shape) +
                  "; expected the output's shape " + vkconv::shape_string(p.output_shape()));
    return z;
}

int run_forward(const ForwardArgs& args) {
    check_writable(args.output, "--output");
    const auto algorithm = vkconv::parse_algorithm(args.conv.algorithm);
    args.epilogue.check();
    const auto x = vkconv::read_npy(args.input);
    const auto w = vkconv::read_npy(args.weight);
    vkconv::NpyArray b;
    if (!args.bias.empty()) b = vkconv::read_npy(args.bias);
    auto problem = problem_from(args, x, w, args.bias.empty() ? nullptr : &b);
    problem.data_type = args.conv.data_type(x);
    const auto z = read_residual(args, problem);

    vkconv::Context context(args.conv.context_options());
    const vkconv::DataType type = problem.data_type;
    auto input = vkconv::Tensor::from_host(context, problem.input_shape(), x.data, type);
    auto filter = vkconv::Tensor::from_host(context, problem.filter_shape(), w.data, type);
    vkconv::Tensor bias;
    if (problem.has_bias) bias = vkconv::Tensor::from_host(context, problem.bias_shape(), b.data, type);
    vkconv::Tensor output(context, problem.output_shape(), type), residual;
    if (args.epilogue.has_residual())
        residual = vkconv::Tensor::from_host(context, problem.output_shape(), z.data, type);
    const auto stats = args.conv.run_pass([&] {
        return vkconv::forward(context, problem, input, filter, problem.has_bias ? &bias : nullptr, output,
                               algorithm, args.conv.forward_options(context),
                               args.epilogue.epilogue(args.epilogue.has_residual() ? &residual : nullptr));
    });
    vkconv::write_npy(args.output, problem.output_shape(), output.download(), file_type(type));

    if (args.conv.stats) {
        JsonObject o;
        o.add("pass", "forward").add("algorithm", vkconv::to_string(stats.algorithm));
        o.add("device", context.device().name).add("gpu_ms", stats.gpu_ms).add("gpu_timed", stats.gpu_timed);
        o.add("wall_ms", stats.wall_ms).add("gflops", problem.forward_flops() / (stats.gpu_ms * 1e6));
        o.add_memory(stats);
        o.add("dispatches", static_cast<uint64_t>(stats.dispatches)).add("chunks", static_cast<uint64_t>(stats.chunks));
        if (stats.algorithm == vkconv::Algorithm::Mec) o.add("mec_schedule", stats.variant);
        if (!stats.variant.empty()) o.add("variant", stats.variant);
        o.add_raw("problem", problem_json(problem));
        std::printf("%s\n", o.str().c_str());
    }
    return kSuccess;
}

}  // namespace

Action add_forward_command(CLI::App& root) {
    auto args = std::make_shared<ForwardArgs>();
    auto* command = root.add_subcommand("forward", "y = conv(x, w) + b from .npy files (float32 or float16, C order)");
    command->add_option("--input", args->input, "input X.npy (N,C,H,W or N,H,W,C)")->required();
    command->add_option("--weight", args->weight, "filter W.npy (K,C/G,R,S or K,R,S,C/G)")->required();
    command->add_option("--bias", args->bias, "optional bias B.npy (K)");
    command->add_option("--output", args->output, "output Y.npy, written only on success")->required();
    command->add_option("--residual", args->residual, "residual Z.npy (the output's shape) that --beta scales");
    args->conv.add_to(*command);
    args->epilogue.add_to(*command, "y = act(alpha * conv + bias + beta * z): beta, with z from --residual");
    return [args] { return run_forward(*args); };
}

}  // namespace vkconv_cli
