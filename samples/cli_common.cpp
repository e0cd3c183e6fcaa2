#include "cli_common.hpp"

#include <algorithm>
#include <atomic>

#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

namespace vkconv_cli {

int run_guarded(const std::function<int()>& body) {
    try {
        return body();
    } catch (const vkconv::Error& e) {
        std::fprintf(stderr, "vkconv: error (%s): %s\n", vkconv::to_string(e.category()), e.what());
        return e.category() == vkconv::ErrorCategory::InvalidArgument ? kBadInput : kRuntimeFailure;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vkconv: error: %s\n", e.what());
        return kRuntimeFailure;
    }
}

std::pair<int64_t, int64_t> parse_pair(const std::string& text, const std::string& option, int64_t least) {
    auto number = [&](std::string_view part) {
        int64_t value = 0;
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        if (part.empty() || ec != std::errc() || end != part.data() + part.size() || value < least)
            throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                                option + " expects N or N,M with integers of at least " + std::to_string(least) +
                                    ", got '" + text + "'");
        return value;
    };
    const auto comma = text.find(',');
    if (comma == std::string::npos) {
        const int64_t v = number(text);
        return {v, v};
    }
    return {number(std::string_view(text).substr(0, comma)), number(std::string_view(text).substr(comma + 1))};
}

std::array<int64_t, 4> parse_padding(const std::string& text) {
    std::vector<int64_t> values;
    size_t start = 0;
    while (true) {
        const size_t comma = text.find(',', start);
        const std::string_view part = std::string_view(text).substr(start, comma == std::string::npos ? comma : comma - start);
        int64_t value = 0;
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        if (part.empty() || ec != std::errc() || end != part.data() + part.size() || value < 0)
            throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                                "--padding expects P, PH,PW or TOP,BOTTOM,LEFT,RIGHT with integers of at least 0, "
                                "got '" + text + "'");
        values.push_back(value);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    switch (values.size()) {
        case 1:
            return {values[0], values[0], values[0], values[0]};
        case 2:
            return {values[0], values[0], values[1], values[1]};
        case 4:
            return {values[0], values[1], values[2], values[3]};
        default:
            throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                                "--padding expects 1, 2 or 4 values (P, PH,PW or TOP,BOTTOM,LEFT,RIGHT), got " +
                                    std::to_string(values.size()) + " in '" + text + "'");
    }
}

std::vector<std::string> all_algorithm_names() {
    std::vector<std::string> names;
    for (vkconv::Algorithm algorithm : vkconv::all_algorithms()) names.emplace_back(vkconv::to_string(algorithm));
    return names;
}

std::string algorithm_choices(bool with_auto) {
    std::vector<std::string> names = all_algorithm_names();
    if (with_auto) names.insert(names.begin(), "auto");
    std::string text;
    for (size_t i = 0; i < names.size(); ++i)
        text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return text;
}

namespace {

// Every algorithm's forms in the passes that have them, as --variant takes them: "A or B (mec forward), ...".
std::string variant_choices() {
    std::string text;
    for (vkconv::Algorithm algorithm : vkconv::all_algorithms())
        for (vkconv::Pass pass : {vkconv::Pass::Forward, vkconv::Pass::BackwardData}) {
            const std::vector<std::string> forms = vkconv::algorithm_variants(algorithm, pass);
            if (forms.empty()) continue;
            if (pass == vkconv::Pass::BackwardData && forms == vkconv::algorithm_variants(algorithm, vkconv::Pass::Forward))
                continue;  // the same forms as forward: named once
            text += text.empty() ? "" : "; ";
            for (size_t i = 0; i < forms.size(); ++i) text += (i ? " or " : "") + forms[i];
            text += std::string(" (") + vkconv::to_string(algorithm) +
                    (vkconv::algorithm_variants(algorithm, vkconv::Pass::BackwardData).empty() ? " forward)" : ")");
        }
    return text;
}

}  // namespace

std::string variant_option(const std::string& text) {
    auto lower = [](std::string s) {
        for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    };
    if (lower(text) == "auto") return {};
    for (vkconv::Algorithm algorithm : vkconv::all_algorithms())
        for (vkconv::Pass pass : {vkconv::Pass::Forward, vkconv::Pass::BackwardData, vkconv::Pass::BackwardFilter})
            for (const std::string& form : vkconv::algorithm_variants(algorithm, pass))
                if (lower(form) == lower(text)) return form;
    return text;  // no form of any algorithm: the pass refuses it, naming the forms
}

int algorithm_column_width() {
    size_t width = 4;  // "algo", "auto"
    for (const std::string& name : all_algorithm_names()) width = std::max(width, name.size());
    return static_cast<int>(width);
}

CLI::Validator positive_integer() {
    return CLI::Validator(
        [](const std::string& value) -> std::string {
            int64_t number = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
            if (value.empty() || ec != std::errc() || end != value.data() + value.size() || number < 1)
                return "expects a positive integer, got '" + value + "'";
            return "";
        },
        "POSITIVE");
}

CLI::Validator parsed_by(std::function<void(const std::string&)> parse, const std::string& description) {
    return CLI::Validator(
        [parse = std::move(parse)](const std::string& value) {
            try {
                parse(value);
                return std::string();
            } catch (const vkconv::Error& e) {
                return std::string(e.what());
            }
        },
        description);
}

namespace {

// "auto", or a decimal byte count that fits 64 bits.
bool is_workspace_limit(const std::string& value) {
    if (value == "auto") return true;
    return !value.empty() && value.size() <= 19 &&
           std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

void add_workspace_limit_option(CLI::App& command, std::string& workspace_limit) {
    command
        .add_option("--workspace-limit", workspace_limit,
                    "largest workspace the pass may allocate: bytes (0: no limit) or auto (from the device "
                    "heap's budget); algorithms run in chunks that fit, or are skipped")
        ->check(
            [](const std::string& value) {
                return is_workspace_limit(value) ? std::string()
                                                 : "must be a number of bytes or auto, not '" + value + "'";
            },
            "BYTES|auto")
        ->capture_default_str();
}

void add_data_types_option(CLI::App& command, std::vector<std::string>& types, const std::string& help) {
    command.add_option("--dtype", types, help)
        ->delimiter(',')
        ->check(parsed_by([](const std::string& text) { vkconv::parse_data_type(text); }, "f32|f16|bf16"))
        ->capture_default_str();
}

std::vector<vkconv::DataType> data_types(const std::vector<std::string>& names) {
    std::vector<vkconv::DataType> types;
    for (const std::string& name : names) {
        const vkconv::DataType type = vkconv::parse_data_type(name);
        if (std::find(types.begin(), types.end(), type) == types.end()) types.push_back(type);
    }
    std::stable_partition(types.begin(), types.end(), [](vkconv::DataType t) { return t == vkconv::DataType::F32; });
    return types;
}

std::string ratio_text(double numerator, double denominator) {
    if (!(denominator > 0) || !std::isfinite(numerator)) return "—";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3fx", numerator / denominator);
    return buf;
}

std::string pad_left(const std::string& text, int width) {
    int columns = 0;
    for (unsigned char c : text) columns += (c & 0xC0) != 0x80;  // UTF-8: count the lead bytes only
    return std::string(static_cast<size_t>(std::max(0, width - columns)), ' ') + text;
}

void ConvOptions::add_to(CLI::App& command) {
    // Malformed numbers fail while parsing; values out of range (stride 0) fail in ConvProblem::validate().
    auto pair = [](const std::string& option) {
        return parsed_by([option](const std::string& text) { parse_pair(text, option); }, "N|N,M");
    };
    command.add_option("--stride", stride, "stride S or SH,SW")->check(pair("--stride"))->capture_default_str();
    command
        .add_option("--padding", padding,
                    "zero padding P, PH,PW or TOP,BOTTOM,LEFT,RIGHT (default 0)")
        ->check(parsed_by([](const std::string& text) { parse_padding(text); }, "P|PH,PW|T,B,L,R"));
    command
        .add_option("--auto-pad", auto_pad,
                    "padding from the input size as ONNX and TensorFlow define it: valid, same-upper "
                    "(TensorFlow's SAME: the odd pad at the end) or same-lower")
        ->check(parsed_by([](const std::string& text) { vkconv::parse_auto_pad(text); }, "MODE"));
    command.add_option("--dilation", dilation, "dilation D or DH,DW")->check(pair("--dilation"))->capture_default_str();
    command.add_option("--groups", groups, "groups (C and K must be divisible by it)")->capture_default_str();
    command
        .add_option("--dtype", dtype,
                    "element type to run in: f32, f16 or bf16 (auto: f16 where the first input file is float16, "
                    "else f32); results are written in it, bf16 as float32 (which holds it exactly)")
        ->check(parsed_by(
            [](const std::string& text) {
                if (text != "auto") vkconv::parse_data_type(text);
            },
            "DTYPE"))
        ->capture_default_str();
    command.add_option("--layout", layout, "nchw (OIHW filters) or nhwc (OHWI filters)")
        ->check(CLI::IsMember({"nchw", "nhwc"}, CLI::ignore_case))
        ->capture_default_str();
    command.add_option("--algo", algorithm, "algorithm: " + algorithm_choices())
        ->check(parsed_by([](const std::string& text) { vkconv::parse_algorithm(text); }, "ALGORITHM"))
        ->capture_default_str();
    command.add_option("--variant", variant, "the algorithm's form (auto: chosen): " + variant_choices())
        ->capture_default_str();
    add_workspace_limit_option(command, workspace_limit);
    auto* by_heuristic = command.add_flag(
        "--heuristic", heuristic, "algo auto: the heuristic alone, even where a measured choice is stored");
    command
        .add_flag("--measure", measure,
                  "algo auto: measure every algorithm once (find) where no measured choice is stored (default: "
                  "a stored measurement, else the heuristic)")
        ->excludes(by_heuristic);
    command.add_option("--find-cache", find_cache, "algo auto: keep measured choices in this file across runs");
    command.add_option("--device", device, "device index or case-insensitive name substring");
    command.add_flag("--stats", stats, "print one JSON object with timing and memory on stdout");
}

vkconv::DataType ConvOptions::data_type(const vkconv::NpyArray& first_input) const {
    return dtype == "auto" ? first_input.type : vkconv::parse_data_type(dtype);
}

vkconv::DataType file_type(vkconv::DataType type) {
    return type == vkconv::DataType::F16 ? vkconv::DataType::F16 : vkconv::DataType::F32;
}

void ConvOptions::apply(vkconv::ConvProblem& problem) const {
    std::tie(problem.stride_h, problem.stride_w) = parse_pair(stride, "--stride");
    std::tie(problem.dilation_h, problem.dilation_w) = parse_pair(dilation, "--dilation");
    problem.groups = groups;
    problem.layout = vkconv::parse_layout(layout);
}

void ConvOptions::apply_padding(vkconv::ConvProblem& problem) const {
    if (!auto_pad.empty() && !padding.empty())
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                            "--auto-pad and --padding cannot be combined: --auto-pad works the pads out itself");
    if (!auto_pad.empty()) {
        problem.set_auto_padding(vkconv::parse_auto_pad(auto_pad));
        return;
    }
    const auto pads = parse_padding(padding.empty() ? "0" : padding);
    problem.set_padding(pads[0], pads[1], pads[2], pads[3]);
}

vkconv::PassOptions ConvOptions::forward_options(const vkconv::Context& context) const {
    vkconv::PassOptions options;
    options.variant = variant_option(variant);
    if (workspace_limit == "auto") {
        options.workspace_limit = context.auto_workspace_limit();
    } else {
        if (!is_workspace_limit(workspace_limit))
            throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                                "--workspace-limit must be a number of bytes or auto, not '" + workspace_limit + "'");
        options.workspace_limit = std::stoull(workspace_limit);
    }
    if (heuristic) options.auto_choice = vkconv::AutoChoice::Heuristic;
    if (measure) options.auto_choice = vkconv::AutoChoice::Measure;
    return options;
}

vkconv::ContextOptions ConvOptions::context_options() const {
    vkconv::ContextOptions options;
    options.device = device;
    options.find_cache_path = find_cache;
    return options;
}

void EpilogueOptions::add_to(CLI::App& command, const std::string& beta_help) {
    command
        .add_option("--activation", activation, "activation applied as y is written: none, relu, relu6 or leaky-relu")
        ->check(CLI::IsMember({"none", "relu", "relu6", "leaky-relu"}, CLI::ignore_case))
        ->capture_default_str();
    command.add_option("--negative-slope", negative_slope, "leaky-relu's slope for negative values")
        ->capture_default_str();
    command.add_option("--alpha", alpha, "y = act(alpha * conv + bias + beta * z): alpha")->capture_default_str();
    command.add_option("--beta", beta, beta_help)->capture_default_str();
}

void EpilogueOptions::check() const {
    for (const auto& [value, option] :
         {std::pair{alpha, "--alpha"}, {beta, "--beta"}, {negative_slope, "--negative-slope"}})
        if (!std::isfinite(value))
            throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                                std::string(option) + " must be a finite number, got " + number_text(value));
}

vkconv::Epilogue EpilogueOptions::epilogue(const vkconv::Tensor* residual) const {
    vkconv::Epilogue e;
    e.alpha = alpha;
    e.beta = beta;
    e.residual = residual;
    e.activation = vkconv::parse_activation(activation);
    e.negative_slope = negative_slope;
    return e;
}

void EpilogueOptions::apply(std::vector<double>& conv, std::vector<double>& magnitude,
                            const std::vector<float>& z) const {
    const vkconv::Activation act = vkconv::parse_activation(activation);
    for (size_t i = 0; i < conv.size(); ++i) {
        const double residual = z.empty() ? 0.0 : double(beta) * z[i];
        double v = double(alpha) * conv[i] + residual;
        if (act == vkconv::Activation::ReLU) v = std::max(v, 0.0);
        if (act == vkconv::Activation::ReLU6) v = std::min(std::max(v, 0.0), 6.0);
        if (act == vkconv::Activation::LeakyReLU && v < 0) v *= double(negative_slope);
        conv[i] = v;
        magnitude[i] = std::fabs(double(alpha)) * magnitude[i] + std::fabs(residual);
    }
}

void check_writable(const std::string& path, const std::string& option) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    fs::path dir = target.parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    if (fs::is_directory(target, ec))
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, option + " '" + path + "' is a directory");
    if (!fs::is_directory(dir, ec))
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                            option + " '" + path + "': directory '" + dir.string() + "' does not exist");
    if (::access(dir.c_str(), W_OK) != 0)
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                            option + " '" + path + "': directory '" + dir.string() + "' is not writable");
}

void write_json_rows(const std::string& path, const std::string& option, const std::string& device,
                     const std::string& header, const std::vector<std::string>& rows) {
    std::ofstream out(path);
    out << "{\"device\": " << json_quote(device) << (header.empty() ? "" : ", ") << header << ", \"rows\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) out << "  " << rows[i] << (i + 1 < rows.size() ? ",\n" : "\n");
    out << "]}\n";
    if (!out) throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument, "cannot write " + option + " '" + path + "'");
}

std::vector<float> random_values(int64_t count, uint32_t seed) {
    constexpr int64_t kBlock = int64_t{1} << 20;
    std::vector<float> v(static_cast<size_t>(count));
    parallel_for((count + kBlock - 1) / kBlock, [&](int64_t block) {
        std::seed_seq seeds{seed, static_cast<uint32_t>(block)};
        std::mt19937 rng(seeds);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        const int64_t end = std::min(count, (block + 1) * kBlock);
        for (int64_t i = block * kBlock; i < end; ++i) v[static_cast<size_t>(i)] = dist(rng);
    });
    return v;
}

void parallel_for(int64_t count, const std::function<void(int64_t)>& body) {
    const int64_t threads = std::min<int64_t>(count, std::max(1u, std::thread::hardware_concurrency()));
    std::atomic<int64_t> next{0};
    auto work = [&] {
        for (int64_t i; (i = next++) < count;) body(i);
    };
    std::vector<std::thread> pool;
    for (int64_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& thread : pool) thread.join();
}

void set_problem_sizes(vkconv::ConvProblem& p, const vkconv::Shape& input, const vkconv::Shape& filter,
                       const std::string& input_name, const std::string& filter_name) {
    const bool nhwc = p.layout == vkconv::Layout::NHWC;
    p.N = input[0];
    p.C = nhwc ? input[3] : input[1];
    p.H = nhwc ? input[1] : input[2];
    p.W = nhwc ? input[2] : input[3];
    p.K = filter[0];
    p.R = nhwc ? filter[1] : filter[2];
    p.S = nhwc ? filter[2] : filter[3];
    const int64_t filter_channels = nhwc ? filter[3] : filter[1];
    if (p.groups > 0 && p.C % p.groups == 0 && filter_channels != p.C / p.groups)
        throw vkconv::Error(vkconv::ErrorCategory::InvalidArgument,
                            filter_name + " " + vkconv::shape_string(filter) + " has " +
                                std::to_string(filter_channels) + " input channels per group, but " + input_name + " " +
                                vkconv::shape_string(input) + " has C = " + std::to_string(p.C) + " with --groups " +
                                std::to_string(p.groups) + " (expected " + std::to_string(p.C / p.groups) + ")");
}

std::string number_text(double value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", value);
    return buf;
}

std::string json_quote(const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out + "\"";
}

void JsonObject::key(const std::string& k) {
    if (!body_.empty()) body_ += ", ";
    body_ += json_quote(k) + ": ";
}

JsonObject& JsonObject::add(const std::string& k, const std::string& value) {
    key(k);
    body_ += json_quote(value);
    return *this;
}

JsonObject& JsonObject::add(const std::string& k, double value) {
    key(k);
    if (!std::isfinite(value)) {
        body_ += "null";
    } else {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.6g", value);
        body_ += buf;
    }
    return *this;
}

JsonObject& JsonObject::add(const std::string& k, uint64_t value) {
    key(k);
    body_ += std::to_string(value);
    return *this;
}

JsonObject& JsonObject::add(const std::string& k, int64_t value) {
    key(k);
    body_ += std::to_string(value);
    return *this;
}

JsonObject& JsonObject::add(const std::string& k, bool value) {
    key(k);
    body_ += value ? "true" : "false";
    return *this;
}

JsonObject& JsonObject::add_memory(const vkconv::RunStats& stats) {
    add("operand_bytes", stats.operand_bytes).add("workspace_bytes", stats.workspace_bytes);
    add("peak_bytes", stats.peak_bytes).add("peak_reserved_bytes", stats.peak_reserved_bytes);
    return add("driver_allocations", static_cast<uint64_t>(stats.driver_allocations));
}

JsonObject& JsonObject::add_raw(const std::string& k, const std::string& json) {
    key(k);
    body_ += json;
    return *this;
}

std::string problem_json(const vkconv::ConvProblem& p) {
    JsonObject o;
    o.add("N", p.N).add("C", p.C).add("H", p.H).add("W", p.W).add("K", p.K).add("R", p.R).add("S", p.S);
    o.add("P", p.P()).add("Q", p.Q());
    o.add("stride_h", p.stride_h).add("stride_w", p.stride_w).add("pad_h", p.pad_h).add("pad_w", p.pad_w);
    o.add("pad_top", p.pad_top()).add("pad_bottom", p.pad_bottom()).add("pad_left", p.pad_left());
    o.add("pad_right", p.pad_right());
    o.add("dilation_h", p.dilation_h).add("dilation_w", p.dilation_w).add("groups", p.groups);
    o.add("layout", vkconv::to_string(p.layout)).add("bias", p.has_bias).add("data_type", vkconv::to_string(p.data_type));
    return o.str();
}

}  // namespace vkconv_cli
