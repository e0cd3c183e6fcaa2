// vkconv plan: the plan a pass (or a GEMM) would run, without running it: the algorithm, its exact
// workspace, and every dispatch with its workgroups, invocations, serial work per invocation and FLOPs.
// For the present device, or for one described by a device profile (a shipped name or a Vulkan Profiles
// JSON file), with or without a Vulkan device here.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "cli_common.hpp"
#include "commands.hpp"
#include "layers.hpp"

namespace vkconv_cli {
namespace {

struct PlanArgs {
    std::string layer, layers_file;
    int64_t batch = 0;  // 0: the table's batch
    std::string input_shape, filter_shape;  // a problem by shape instead of a layer
    std::string gemm;                       // M,N,K
    std::string pass = "forward";
    std::string profile;
    bool bias = false;
    bool json = false;
    ConvOptions conv;
};

std::vector<int64_t> parse_list(const std::string& text, size_t count, const std::string& option) {
    std::vector<int64_t> values;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        char* end = nullptr;
        const long long v = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || v <= 0 || v > int64_t(UINT32_MAX))
            throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                                option + " '" + text + "': expected " + std::to_string(count) +
                                    " positive integers (below 2^32) separated by commas");
        values.push_back(v);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (values.size() != count)
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, option + " '" + text + "': expected " +
                                                                        std::to_string(count) + " values, got " +
                                                                        std::to_string(values.size()));
    return values;
}

vkconv::Pass parse_pass(const std::string& text) {
    for (vkconv::Pass p : {vkconv::Pass::Forward, vkconv::Pass::BackwardData, vkconv::Pass::BackwardFilter,
                           vkconv::Pass::BackwardBias})
        if (text == vkconv::to_string(p)) return p;
    throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                        "--pass '" + text + "': expected forward, backward-data, backward-filter or backward-bias");
}

std::string dispatch_json(const vkconv::PlannedDispatch& d) {
    return JsonObject()
        .add("name", d.name)
        .add("workgroups", d.workgroups)
        .add("invocations_per_workgroup", uint64_t(d.invocations_per_workgroup))
        .add("serial_macs_per_invocation", d.serial_macs_per_invocation)
        .add("flops", d.flops)
        .str();
}

void print_plan(const vkconv::Plan& plan, const vkconv::DeviceInfo& device, const std::string& what, bool json,
                const std::string& problem) {
    if (json) {
        std::string dispatches;
        for (const auto& d : plan.dispatches) dispatches += (dispatches.empty() ? "" : ",") + dispatch_json(d);
        JsonObject out;
        out.add("device", plan.device)
            .add("compute_units", uint64_t(plan.compute_units))
            .add("compute_units_source", device.compute_units_source)
            .add("subgroup_size", uint64_t(device.subgroup_size))
            .add("what", what);
        if (!problem.empty()) out.add_raw("problem", problem);
        out.add("algorithm", problem.empty() ? "gemm" : vkconv::to_string(plan.algorithm))
            .add("workspace_bytes", plan.workspace_bytes)
            .add_raw("dispatches", "[" + dispatches + "]");
        std::printf("%s\n", out.str().c_str());
        return;
    }
    std::printf("device: %s, %u compute units (%s), subgroup %u\n", plan.device.c_str(), plan.compute_units,
                device.compute_units_source.c_str(), device.subgroup_size);
    std::printf("%s: algorithm %s, workspace %llu bytes, %zu dispatches\n", what.c_str(),
                problem.empty() ? "gemm" : vkconv::to_string(plan.algorithm),
                static_cast<unsigned long long>(plan.workspace_bytes),
                plan.dispatches.size());
    std::printf("%-32s %12s %8s %14s %16s %10s\n", "dispatch", "workgroups", "inv/wg", "serial MACs", "FLOPs",
                "wg per CU");
    for (const auto& d : plan.dispatches)
        std::printf("%-32s %12llu %8u %14llu %16llu %10.2f\n", d.name.c_str(),
                    static_cast<unsigned long long>(d.workgroups), d.invocations_per_workgroup,
                    static_cast<unsigned long long>(d.serial_macs_per_invocation),
                    static_cast<unsigned long long>(d.flops), double(d.workgroups) / double(plan.compute_units));
}

int run_plan(const PlanArgs& args) {
    const int sources = int(!args.layer.empty()) + int(!args.input_shape.empty()) + int(!args.gemm.empty());
    if (sources != 1)
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                            "give exactly one of --layer, --input-shape (with --filter-shape) or --gemm");
    if (!args.input_shape.empty() && args.filter_shape.empty())
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "--input-shape needs --filter-shape");
    // The profile first: a described device needs no Vulkan at all.
    std::optional<vkconv::Context> context;
    vkconv::DeviceProfile profile = [&] {
        if (!args.profile.empty()) return vkconv::DeviceProfile::load(args.profile);
        context.emplace(args.conv.context_options());
        return vkconv::DeviceProfile::of(*context);
    }();
    if (!args.gemm.empty()) {
        const auto mnk = parse_list(args.gemm, 3, "--gemm");
        const auto plan = vkconv::plan_gemm(profile, uint32_t(mnk[0]), uint32_t(mnk[1]), uint32_t(mnk[2]));
        print_plan(plan, profile.info(), "gemm " + args.gemm, args.json, "");
        return kSuccess;
    }
    vkconv::ConvProblem p;
    if (!args.layer.empty()) {
        const LayerTable table = read_layer_table(args.layers_file);
        const auto layers = parse_layers(table.text, table.origin);
        check_layer_names(layers, {args.layer}, table.origin);
        for (const auto& l : layers)
            if (l.name == args.layer) p = l.problem;
        p.layout = vkconv::parse_layout(args.conv.layout);
    } else {
        const auto x = parse_list(args.input_shape, 4, "--input-shape");
        const auto w = parse_list(args.filter_shape, 4, "--filter-shape");
        args.conv.apply(p);
        set_problem_sizes(p, vkconv::Shape(x.begin(), x.end()), vkconv::Shape(w.begin(), w.end()), "--input-shape",
                          "--filter-shape");
        args.conv.apply_padding(p);
    }
    if (args.batch > 0) p.N = args.batch;
    p.has_bias = args.bias;
    // (No input file to take the type from: "auto" plans f32.)
    if (args.conv.dtype != "auto") p.data_type = vkconv::parse_data_type(args.conv.dtype);
    const vkconv::Pass pass = parse_pass(args.pass);
    if (!context && args.conv.workspace_limit == "auto")
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                            "--workspace-limit auto reads the present device's memory; give bytes with --device-profile");
    vkconv::PassOptions options;
    if (context) {
        options = args.conv.forward_options(*context);
    } else {
        ConvOptions no_auto = args.conv;
        // forward_options needs a context only for "auto", refused above; any context will not be touched.
        options.variant = variant_option(no_auto.variant);
        options.workspace_limit = std::stoull(no_auto.workspace_limit);
    }
    const auto plan = args.conv.run_pass(
        [&] { return vkconv::plan_pass(profile, p, pass, vkconv::parse_algorithm(args.conv.algorithm), options); });
    print_plan(plan, profile.info(), (args.layer.empty() ? std::string("problem") : args.layer) + " " + args.pass,
               args.json, problem_json(p));
    return kSuccess;
}

}  // namespace

Action add_plan_command(CLI::App& root) {
    auto args = std::make_shared<PlanArgs>();
    CLI::App* command = root.add_subcommand(
        "plan", "print the plan a pass or GEMM would run (algorithm, workspace, dispatches), without running it");
    command->add_option("--layer", args->layer, "a layer of the layer table (samples/layers.csv)");
    command->add_option("--layers", args->layers_file, "a layer table in the layers.csv format (default: built in)");
    command->add_option("--batch", args->batch, "batch size (default: the layer's)")->check(positive_integer());
    command->add_option("--input-shape", args->input_shape, "a problem by shape: N,C,H,W (NHWC: N,H,W,C)");
    command->add_option("--filter-shape", args->filter_shape, "K,C/G,R,S (NHWC: K,R,S,C/G)");
    command->add_option("--gemm", args->gemm, "plan a GEMM of M,N,K instead");
    command->add_option("--pass", args->pass, "forward, backward-data, backward-filter or backward-bias")
        ->check(CLI::IsMember({"forward", "backward-data", "backward-filter", "backward-bias"}))
        ->capture_default_str();
    command->add_flag("--bias", args->bias, "the problem has a bias (backward-filter then plans its gradient too)");
    command->add_option("--device-profile", args->profile,
                        "plan for a described device: a shipped profile (" +
                            [] {
                                std::string names;
                                for (const auto& n : vkconv::device_profile_names())
                                    names += (names.empty() ? "" : ", ") + n;
                                return names;
                            }() +
                            ") or a Vulkan Profiles JSON file such as `vulkaninfo --json` writes");
    command->add_flag("--json", args->json, "print the plan as one JSON object");
    args->conv.add_to(*command);
    return [args] { return run_guarded([&] { return run_plan(*args); }); };
}

}  // namespace vkconv_cli
