// vkconv tune: times the GEMM's tile configurations on every product shape the layers' lowered passes run
// (im2col and MEC, as planned on this device) and implicit GEMM's configurations on every layer and pass,
// checks each candidate's result first, and stores the winners in the tuning file, where every later
// context with that file (auto and find included) runs them.
#include <algorithm>
#include <cstdio>
#include <set>

#include "cli_common.hpp"
#include "commands.hpp"
#include "layers.hpp"

namespace vkconv_cli {
namespace {

struct TuneArgs {
    std::vector<std::string> only;
    std::string layers_file;
    int64_t batch = 0;
    std::string layout = "nchw";
    std::string pass = "all";
    std::vector<std::string> gemms;
    uint32_t repeat = 3;
    std::string tuning_file;
    std::string json_file;
    std::string device;
};

vkconv::GemmShape parse_shape(const std::string& text) {
    vkconv::GemmShape shape;
    unsigned m = 0, n = 0, k = 0, b = 1;
    char extra = 0;
    const int read = std::sscanf(text.c_str(), "%u,%u,%u,%u%c", &m, &n, &k, &b, &extra);
    if ((read != 3 && read != 4) || m == 0 || n == 0 || k == 0 || b == 0)
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                            "--gemm '" + text + "': expected M,N,K or M,N,K,BATCHES, positive integers");
    shape.M = m, shape.N = n, shape.K = k, shape.batches = b;
    return shape;
}

std::string row_json(const vkconv::TuneResult& r) {
    std::string candidates;
    for (const auto& c : r.candidates)
        candidates += (candidates.empty() ? "" : ",") + JsonObject()
                                                            .add("configuration", c.configuration)
                                                            .add("gpu_ms", c.gpu_ms)
                                                            .add("ok", c.ok)
                                                            .add("problem", c.problem)
                                                            .str();
    return JsonObject()
        .add("what", r.what)
        .add("before", r.before)
        .add("best", r.best)
        .add_raw("candidates", "[" + candidates + "]")
        .str();
}

void print(const vkconv::TuneResult& r) {
    double best_ms = 0, before_ms = 0;
    size_t ok = 0;
    for (const auto& c : r.candidates) {
        if (c.ok) ++ok;
        if (c.configuration == r.best) best_ms = c.gpu_ms;
        if (c.configuration == r.before) before_ms = c.gpu_ms;
    }
    std::printf("%-60s %-28s %9.3f ms  (was %s%s, %zu/%zu candidates ok)\n", r.what.substr(0, 60).c_str(),
                r.best.empty() ? "-" : r.best.c_str(), best_ms, r.before.empty() ? "its own choice" : r.before.c_str(),
                before_ms > 0 ? (" " + number_text(before_ms) + " ms").c_str() : "", ok, r.candidates.size());
}

int run_tune(const TuneArgs& args) {
    std::vector<vkconv::GemmShape> extra;
    for (const auto& g : args.gemms) extra.push_back(parse_shape(g));
    const LayerTable table = read_layer_table(args.layers_file);
    const auto layers = parse_layers(table.text, table.origin);
    check_layer_names(layers, args.only, table.origin);
    if (!args.json_file.empty()) check_writable(args.json_file, "--json");
    std::vector<vkconv::Pass> passes;
    for (vkconv::Pass p : {vkconv::Pass::Forward, vkconv::Pass::BackwardData, vkconv::Pass::BackwardFilter})
        if (args.pass == "all" || args.pass == vkconv::to_string(p)) passes.push_back(p);

    vkconv::ContextOptions options;
    options.device = args.device;
    options.tuning_path = args.tuning_file;
    vkconv::Context context(options);
    if (vkconv::tuning_path(context).empty())
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                            "no tuning file: give --tuning-file, or set VKCONV_TUNING or VKCONV_PIPELINE_CACHE");
    std::printf("device: %s\ntuning file: %s\n", context.device().summary().c_str(), vkconv::tuning_path(context).c_str());

    const auto here = vkconv::DeviceProfile::of(context);
    std::set<vkconv::GemmShape> shapes(extra.begin(), extra.end());
    std::vector<std::pair<vkconv::ConvProblem, vkconv::Pass>> implicit;
    for (const auto& layer : layers) {
        if (!args.only.empty() && std::count(args.only.begin(), args.only.end(), layer.name) == 0) continue;
        vkconv::ConvProblem p = layer.problem;
        if (args.batch > 0) p.N = args.batch;
        p.layout = vkconv::parse_layout(args.layout);
        for (vkconv::Pass pass : passes) {
            for (vkconv::Algorithm a : {vkconv::Algorithm::Im2col, vkconv::Algorithm::Mec}) {
                try {
                    for (const auto& g : vkconv::plan_pass(here, p, pass, a).gemms) shapes.insert(g);
                } catch (const vkconv::Error& e) {
                    if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
                }
            }
            implicit.emplace_back(p, pass);
        }
    }
    std::vector<std::string> rows;
    std::printf("\nGEMM products (%zu shapes)\n", shapes.size());
    for (const auto& shape : shapes) {
        try {
            const auto r = vkconv::tune_gemm(context, shape, args.repeat);
            print(r);
            rows.push_back(row_json(r));
        } catch (const vkconv::Error& e) {
            if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
            std::printf("gemm %ux%ux%ux%u: skipped (%s)\n", shape.M, shape.N, shape.K, shape.batches, e.what());
        }
    }
    std::printf("\nImplicit GEMM (%zu passes)\n", implicit.size());
    for (const auto& [p, pass] : implicit) {
        try {
            const auto r = vkconv::tune_implicit_gemm(context, p, pass, args.repeat);
            print(r);
            rows.push_back(row_json(r));
        } catch (const vkconv::Error& e) {
            if (e.category() != vkconv::ErrorCategory::Unsupported) throw;
            std::printf("implicit-gemm %s %s: skipped (%s)\n", vkconv::to_string(pass), p.str().c_str(), e.what());
        }
    }
    vkconv::save_tuning(context);
    std::printf("\n%zu winners in %s\n", vkconv::tuned_entries(context), vkconv::tuning_path(context).c_str());
    if (!args.json_file.empty()) write_json_rows(args.json_file, "--json", context.device().summary(), "", rows);
    return kSuccess;
}

}  // namespace

Action add_tune_command(CLI::App& root) {
    auto args = std::make_shared<TuneArgs>();
    CLI::App* command = root.add_subcommand(
        "tune", "time the GEMM and implicit-GEMM configurations on this device for the layers, and keep the winners");
    command->add_option("--layer", args->only, "only these layers (repeatable; default: every layer)");
    command->add_option("--layers", args->layers_file, "a layer table in the layers.csv format (default: built in)");
    command->add_option("--batch", args->batch, "batch size (default: the layer's)")->check(positive_integer());
    command->add_option("--layout", args->layout, "nchw or nhwc")
        ->check(CLI::IsMember({"nchw", "nhwc"}, CLI::ignore_case))
        ->capture_default_str();
    command->add_option("--pass", args->pass, "forward, backward-data, backward-filter or all")
        ->check(CLI::IsMember({"forward", "backward-data", "backward-filter", "all"}))
        ->capture_default_str();
    command->add_option("--gemm", args->gemms, "also tune this GEMM shape: M,N,K[,BATCHES] (repeatable)")
        ->check(parsed_by([](const std::string& text) { parse_shape(text); }, "M,N,K[,B]"));
    command->add_option("--repeat", args->repeat, "timed runs per candidate (median)")
        ->check(positive_integer())
        ->capture_default_str();
    command->add_option("--tuning-file", args->tuning_file,
                        "where the winners are kept (default: VKCONV_TUNING, else the pipeline cache file + .tuning)");
    command->add_option("--json", args->json_file, "also write every candidate's time as JSON to this file");
    command->add_option("--device", args->device, "device index or case-insensitive name substring");
    return [args] { return run_guarded([&] { return run_tune(*args); }); };
}

}  // namespace vkconv_cli
