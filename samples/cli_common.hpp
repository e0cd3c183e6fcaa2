// Shared pieces of the vkconv command-line tool: exit codes, error reporting, option parsing helpers
// and a tiny JSON writer for --stats.
#pragma once

#include <CLI/CLI.hpp>

#include <array>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "vkconv/vkconv.hpp"

namespace vkconv_cli {

enum ExitCode : int {
    kSuccess = 0,
    kRuntimeFailure = 1,  // device or runtime failure: no device, out of memory, device lost, Vulkan errors
    kBadInput = 2,        // bad usage or bad input: message on stderr, no output written
};

// Runs a subcommand body, mapping vkconv::Error to an exit code and a one-line message on stderr.
int run_guarded(const std::function<int()>& body);

// "3" -> {3, 3}; "2,3" -> {2, 3}. Throws InvalidArgument naming `option` otherwise.
// N or N,M as two integers of at least `least`, refused in `option`'s name (strides, dilations and sizes
// start at 1, an output padding at 0), rather than later by the problem in its field's.
std::pair<int64_t, int64_t> parse_pair(const std::string& text, const std::string& option, int64_t least = 1);

// A CLI11 check that runs `parse` on an option's text while the command line is parsed, so text it refuses
// (with vkconv::Error) fails there: exit code 2 and the option named with parse's message, before any device
// or file is opened. `description` is the form of the value shown in --help ("N|N,M").
// --padding: P (all four), PH,PW (top and bottom, left and right) or TOP,BOTTOM,LEFT,RIGHT, as
// {top, bottom, left, right}. Throws InvalidArgument naming the forms; negative values are left to
// ConvProblem::validate(), which names the pad.
std::array<int64_t, 4> parse_padding(const std::string& text);

CLI::Validator parsed_by(std::function<void(const std::string&)> parse, const std::string& description);
// A check for counts (batch sizes, repeats): a positive integer, said in words a person reads.
CLI::Validator positive_integer();

// The algorithm table's names, as the CLI spells them (vkconv::all_algorithms; "auto" not among them).
std::vector<std::string> all_algorithm_names();
// "auto, direct, ... or implicit-gemm" (without "auto, " when with_auto is false), for help texts.
std::string algorithm_choices(bool with_auto = true);
// The .npy type results of `type` are written in: float16 for F16, float32 otherwise (bf16 exactly).
vkconv::DataType file_type(vkconv::DataType type);
// --variant's text as PassOptions::variant takes it: "auto" (any case) is none, and a form of the table
// (algorithm_variants) in any case is that form ("a" is MEC's "A", "f(2x2,3x3)" Winograd's "F(2x2,3x3)").
std::string variant_option(const std::string& text);
// The longest algorithm name: the width of an algorithm column.
int algorithm_column_width();

// --dtype of the reports (memory, bench): element types to measure, repeatable or as a list ("f32,f16"),
// each checked while parsing so `--dtype f64` fails there, naming it. `types` keeps its default (f32) unless
// the option is given.
void add_data_types_option(CLI::App& command, std::vector<std::string>& types, const std::string& help);
// Those names as types, each once, f32 first where it is among them: the 16-bit figures are then compared
// with f32's measured just before, in the same run.
std::vector<vkconv::DataType> data_types(const std::vector<std::string>& names);
// "0.500x": a 16-bit figure over f32's; "—" where either is missing or f32's is 0.
std::string ratio_text(double numerator, double denominator);
// `text` right-aligned in `width` columns, counting characters rather than bytes ("—" is one column).
std::string pad_left(const std::string& text, int width);

// --workspace-limit BYTES|auto, checked while parsing.
void add_workspace_limit_option(CLI::App& command, std::string& workspace_limit);

// Convolution options shared by the passes: stride, padding, dilation, groups, layout, algorithm, device.
struct ConvOptions {
    std::string stride = "1", padding, dilation = "1";  // padding: P, PH,PW or T,B,L,R; empty: none given
    std::string auto_pad;                                 // valid, same-upper or same-lower; empty: none
    int64_t groups = 1;
    std::string layout = "nchw";
    std::string algorithm = "auto";
    std::string variant = "auto";  // PassOptions::variant (variant_option), "auto": none
    std::string dtype = "auto";    // f32, f16 or bf16; "auto": the first input file's (float16 files f16)
    std::string workspace_limit = "0";  // bytes, 0 = none, or "auto" (Context::auto_workspace_limit)
    bool heuristic = false;             // algo auto: the heuristic alone
    bool measure = false;               // algo auto: measure where nothing is stored
    std::string find_cache;             // ContextOptions::find_cache_path
    std::string device;
    bool stats = false;

    void add_to(CLI::App& command);
    // Applies stride/dilation/groups/layout to `problem`.
    void apply(vkconv::ConvProblem& problem) const;
    // The problem's element type: --dtype, or with "auto" the first input file's.
    vkconv::DataType data_type(const vkconv::NpyArray& first_input) const;
    // Applies --padding or --auto-pad, once the problem's sizes are set (auto padding follows from them).
    void apply_padding(vkconv::ConvProblem& problem) const;
    vkconv::ContextOptions context_options() const;
    // Needs the context for --workspace-limit auto.
    vkconv::PassOptions forward_options(const vkconv::Context& context) const;
    // Runs `pass`. An algorithm named with --algo that cannot run the problem here (the pass's Unsupported
    // refusal) is the user's choice to change, so it becomes bad input (exit 2) naming the option; under
    // auto an Unsupported error is the device's (exit 1).
    template <typename Pass>
    auto run_pass(Pass&& pass) const -> decltype(pass()) {
        try {
            return pass();
        } catch (const vkconv::Error& e) {
            if (e.category() != vkconv::ErrorCategory::Unsupported || algorithm == "auto") throw;
            throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                                "--algo " + algorithm + " cannot run this problem on this device: " + e.what() +
                                    " (--algo auto chooses one that can)");
        }
    }
};

// The forward epilogue, y = act(alpha * conv + bias + beta * z) (vkconv::Epilogue): --activation,
// --negative-slope, --alpha and --beta. Where z comes from is the command's (forward: --residual Z.npy; demo:
// random values).
struct EpilogueOptions {
    std::string activation = "none";
    float alpha = 1.0f, beta = 0.0f, negative_slope = 0.01f;

    // `beta_help` says where the residual comes from.
    void add_to(CLI::App& command, const std::string& beta_help);
    // InvalidArgument naming the option for a value that is not finite.
    void check() const;
    bool has_residual() const { return beta != 0.0f; }
    // The epilogue, reading `residual` (null: none).
    vkconv::Epilogue epilogue(const vkconv::Tensor* residual) const;
    // In double, for checks: each conv[i] (the reference without the bias) becomes
    // act(alpha * conv[i] + beta * z[i]), and its magnitude |alpha| * magnitude[i] + |beta * z[i]| (the
    // activation taken as the identity). `z` is empty without a residual.
    void apply(std::vector<double>& conv, std::vector<double>& magnitude, const std::vector<float>& z) const;
};

// Fills the sizes of `p` from 4-D input and filter shapes in p.layout's order (N,C,H,W / K,C/G,R,S, or
// N,H,W,C / K,R,S,C/G); InvalidArgument naming both shapes when the filter's channels per group do not
// match the input's C and p.groups. The names say where the shapes came from ("--input 'x.npy'").
void set_problem_sizes(vkconv::ConvProblem& p, const vkconv::Shape& input, const vkconv::Shape& filter,
                       const std::string& input_name, const std::string& filter_name);

// Fails with InvalidArgument before any work when `path` cannot be written (missing directory, ...).
void check_writable(const std::string& path, const std::string& option);

class JsonObject {
public:
    JsonObject& add(const std::string& key, const std::string& value);
    JsonObject& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
    JsonObject& add(const std::string& key, double value);
    JsonObject& add(const std::string& key, uint64_t value);
    JsonObject& add(const std::string& key, int64_t value);
    JsonObject& add(const std::string& key, bool value);
    JsonObject& add_raw(const std::string& key, const std::string& json);
    // The pass's memory as the pool measured it: operand_bytes, workspace_bytes, peak_bytes,
    // peak_reserved_bytes, driver_allocations.
    JsonObject& add_memory(const vkconv::RunStats& stats);
    std::string str() const { return "{" + body_ + "}"; }

private:
    void key(const std::string& k);
    std::string body_;
};

std::string json_quote(const std::string& text);

// A number as %g prints it (for messages).
std::string number_text(double value);

// Writes {"device": ..., <header fields>, "rows": [rows...]} to `path` (InvalidArgument naming `option` when
// it cannot be written). `header` is a JsonObject's fields without braces, or empty.
void write_json_rows(const std::string& path, const std::string& option, const std::string& device,
                     const std::string& header, const std::vector<std::string>& rows);

// `count` values uniform in [-1, 1) from a fixed seed: the demo's and the benchmark's inputs. Made in
// blocks of 2^20 on the host's threads (each block seeded from `seed` and its index), so a batch-32
// layer's half-gigabyte operands do not take longer to make than to run.
std::vector<float> random_values(int64_t count, uint32_t seed);

// Calls body(i) for every i in [0, count) on the host's threads. For the sampled reference checks,
// whose exact sums (N*P*Q terms per entry of a filter gradient) would otherwise take longer than the
// GPU work they check. body must not throw.
void parallel_for(int64_t count, const std::function<void(int64_t)>& body);

// The problem as a JSON object (sizes, geometry, layout).
std::string problem_json(const vkconv::ConvProblem& problem);

}  // namespace vkconv_cli
