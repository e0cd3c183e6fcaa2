// vkconv find: the measured algorithm choice for layers of the table. Every algorithm (in each of its forms)
// that fits runs, is timed and spot-checked against the CPU reference; the table lists them fastest first,
// as Algorithm::Auto sees them. With --find-cache the choices persist for later runs of any command.
#include <cstdio>
#include <fstream>

#include "bench.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "layers.hpp"

namespace vkconv_cli {
namespace {

struct FindArgs {
    std::vector<std::string> only;
    int64_t batch = 0;  // 0: the table's
    std::string layout = "nchw";
    std::string pass = "all";
    std::string workspace_limit = "0";
    std::string find_cache;
    uint32_t repeats = 2;
    std::string json_file;
    std::string device;
};

double pass_flops(const vkconv::ConvProblem& p) {
    return p.forward_flops();  // each pass does the forward's multiply-adds, transposed
}

int run_find(const FindArgs& args) {
    if (!args.json_file.empty()) check_writable(args.json_file, "--json");
    std::vector<vkconv::Pass> passes;
    if (args.pass == "all")
        passes = {vkconv::Pass::Forward, vkconv::Pass::BackwardData, vkconv::Pass::BackwardFilter};
    else
        passes = {vkconv::parse_pass(args.pass)};
    auto layers = parse_layers(builtin_layers_csv(), "built-in layers.csv");
    check_layer_names(layers, args.only, "built-in layers.csv");
    ConvOptions conv;
    conv.workspace_limit = args.workspace_limit;
    conv.find_cache = args.find_cache;
    conv.device = args.device;
    vkconv::Context context(conv.context_options());
    auto options = conv.forward_options(context);
    options.find_repeats = args.repeats;
    std::printf("device: %s\n", context.device().summary().c_str());
    std::printf("%-17s %-16s %-10s %10s %9s %10s %10s %6s %-6s %s\n", "layer", "pass", "algo", "ms", "GFLOP/s",
                "workspace", "peak", "chunks", "determ", "verified (error/bound)");
    std::vector<std::string> rows;
    for (const auto& layer : layers) {
        if (std::count(args.only.begin(), args.only.end(), layer.name) == 0) continue;
        auto p = layer.problem;
        if (args.batch > 0) p.N = args.batch;
        p.layout = vkconv::parse_layout(args.layout);
        for (vkconv::Pass pass : passes) {
            const auto results = vkconv::find_algorithms(context, pass, p, options);
            for (const auto& r : results) {
                std::string algo = vkconv::to_string(r.algorithm);
                if (!r.variant.empty()) algo += "/" + r.variant;
                char verified[48];
                std::snprintf(verified, sizeof verified, "%s (%.3f)", r.verified ? "yes" : "NO", r.error_over_bound);
                std::printf("%-17s %-16s %-10s %10.3f %9.2f %10s %10s %6u %-6s %s\n", layer.name.c_str(),
                            vkconv::to_string(pass), algo.c_str(), r.ms, pass_flops(p) / (r.ms * 1e6),
                            mib(r.workspace_bytes).c_str(), mib(r.peak_bytes).c_str(), r.chunks,
                            r.deterministic ? "yes" : "no", verified);
                JsonObject row;
                row.add("layer", layer.name)
                    .add("pass", vkconv::to_string(pass))
                    .add("algorithm", vkconv::to_string(r.algorithm))
                    .add("variant", r.variant)
                    .add("ms", r.ms)
                    .add("workspace_bytes", r.workspace_bytes)
                    .add("peak_bytes", r.peak_bytes)
                    .add("chunks", uint64_t{r.chunks})
                    .add("deterministic", r.deterministic)
                    .add("verified", r.verified)
                    .add("error_over_bound", r.error_over_bound)
                    .add_raw("problem", problem_json(p));
                rows.push_back(row.str());
            }
            std::fflush(stdout);
        }
    }
    if (!args.json_file.empty()) {
        write_json_rows(args.json_file, "--json", context.device().summary(), "", rows);
    }
    std::printf(
        "times: fastest of %u runs after a warm-up (%s); verified: 64 sampled outputs against the CPU "
        "reference within the fp32 summation bound\n",
        args.repeats, context.device().timestamps ? "GPU timestamps" : "wall clock");
    return kSuccess;
}

}  // namespace

Action add_find_command(CLI::App& root) {
    auto args = std::make_shared<FindArgs>();
    auto* command = root.add_subcommand(
        "find", "measure every algorithm that fits on layers of the table: time, workspace, peak, verified");
    command->add_option("--layer", args->only, "layers to measure (repeatable)")->required();
    command->add_option("--batch", args->batch, "batch size N (default: the table's)")->check(positive_integer());
    command->add_option("--layout", args->layout, "nchw or nhwc")
        ->check(CLI::IsMember({"nchw", "nhwc"}))
        ->capture_default_str();
    command->add_option("--pass", args->pass, "forward, backward-data, backward-filter or all")
        ->check(CLI::IsMember({"all", "forward", "backward-data", "backward-filter"}))
        ->capture_default_str();
    add_workspace_limit_option(*command, args->workspace_limit);
    command->add_option("--repeats", args->repeats, "timed runs of each algorithm after its warm-up")
        ->check(positive_integer())
        ->capture_default_str();
    command->add_option("--find-cache", args->find_cache, "keep the fastest choices in this file for algo auto");
    command->add_option("--json", args->json_file, "also write the results as JSON to this file");
    command->add_option("--device", args->device, "device index or case-insensitive name substring");
    return [args] { return run_find(*args); };
}

}  // namespace vkconv_cli
