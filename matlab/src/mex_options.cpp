#include "mex_options.hpp"

#include <functional>
#include <map>

#include "mex_arrays.hpp"

namespace vkconv::mex {

namespace {

[[noreturn]] void invalid(const std::string& message) {
    throw Error(ErrorCategory::InvalidArgument, message);
}

// A scalar, or a pair [vertical horizontal], of whole numbers of at least `minimum`.
std::array<int64_t, 2> pair_option(const mxArray* value, const std::string& role, int64_t minimum) {
    const std::vector<int64_t> v = whole_numbers(value, role, minimum);
    if (v.size() == 1) return {v[0], v[0]};
    if (v.size() == 2) return {v[0], v[1]};
    invalid(role + " must be a scalar or a vector of two elements [vertical horizontal]; got " + describe(value));
}

// 'same'; a scalar (every side); [vertical horizontal]; dlconv's 2x2 [top left; bottom right]; or
// convolution2dLayer's [top bottom left right].
void padding_option(const mxArray* value, ConvOptions& options) {
    if (mxIsChar(value)) {
        const std::string mode = lowercase(text(value, "'Padding'"));
        if (mode != "same") invalid("'Padding' must be 'same' or numbers; got '" + mode + "'");
        options.same = true;
        return;
    }
    const std::vector<int64_t> v = whole_numbers(value, "'Padding'", 0);
    options.same = false;
    if (v.size() == 1)
        options.pad = {v[0], v[0], v[0], v[0]};
    else if (v.size() == 2)
        options.pad = {v[0], v[0], v[1], v[1]};
    else if (v.size() == 4)  // [top bottom left right], or dlconv's 2x2 read column-major: the same order
        options.pad = {v[0], v[1], v[2], v[3]};
    else
        invalid(
            "'Padding' must be 'same', a scalar, [vertical horizontal], [top left; bottom right] or "
            "[top bottom left right]; got " +
            describe(value));
}

DataType storage_option(const mxArray* value) {
    const std::string name = lowercase(text(value, "'Storage'"));
    if (name == "single") return DataType::F32;
    if (name == "half") return DataType::F16;
    try {
        return parse_data_type(name);
    } catch (const Error&) {
        invalid("'Storage' must be 'single', 'f16' (or 'half') or 'bf16'; got '" + name + "'");
    }
}

uint64_t bytes_option(const mxArray* value, const std::string& role) {
    return static_cast<uint64_t>(whole_number(value, role, 0, max_bytes));
}

using Setter = std::function<void(const mxArray*)>;

// Walks Name, Value pairs through `setters` (keyed by lower-case name; `names` lists them for messages).
void parse_pairs(const mxArray* const* args, int count, const std::map<std::string, Setter>& setters,
                 const std::string& names) {
    if (count % 2 != 0) invalid("options come in Name, Value pairs; the last name has no value");
    for (int i = 0; i < count; i += 2) {
        if (!mxIsChar(args[i])) invalid("an option name must be a character vector; got " + describe(args[i]));
        const std::string name = text(args[i], "an option name");
        const auto setter = setters.find(lowercase(name));
        if (setter == setters.end()) invalid("unknown option '" + name + "' (options: " + names + ")");
        setter->second(args[i + 1]);
    }
}

}  // namespace

ConvOptions parse_conv_options(const mxArray* const* args, int count) {
    ConvOptions o;
    const std::map<std::string, Setter> setters{
        {"stride", [&](const mxArray* v) { o.stride = pair_option(v, "'Stride'", 1); }},
        {"dilationfactor", [&](const mxArray* v) { o.dilation = pair_option(v, "'DilationFactor'", 1); }},
        {"padding", [&](const mxArray* v) { padding_option(v, o); }},
        {"storage", [&](const mxArray* v) { o.storage = storage_option(v); }},
        {"algorithm", [&](const mxArray* v) { o.algorithm = parse_algorithm(text(v, "'Algorithm'")); }},
        {"workspacelimit", [&](const mxArray* v) { o.workspace_limit = bytes_option(v, "'WorkspaceLimit'"); }},
    };
    parse_pairs(args, count, setters, "Stride, DilationFactor, Padding, Storage, Algorithm, WorkspaceLimit");
    return o;
}

ConvOptions parse_bias_options(const mxArray* const* args, int count) {
    ConvOptions o;
    const std::map<std::string, Setter> setters{
        {"storage", [&](const mxArray* v) { o.storage = storage_option(v); }},
        {"workspacelimit", [&](const mxArray* v) { o.workspace_limit = bytes_option(v, "'WorkspaceLimit'"); }},
    };
    parse_pairs(args, count, setters, "Storage, WorkspaceLimit");
    return o;
}

LayerOptions parse_layer_options(const mxArray* const* args, int count) {
    LayerOptions o;
    const std::map<std::string, Setter> setters{
        {"storage", [&](const mxArray* v) { o.storage = storage_option(v); }},
        {"workspacebudget", [&](const mxArray* v) { o.workspace_budget = bytes_option(v, "'WorkspaceBudget'"); }},
    };
    parse_pairs(args, count, setters, "Storage, WorkspaceBudget");
    return o;
}

ContextOptions parse_device_options(const mxArray* const* args, int count) {
    ContextOptions o;
    o.device = mxIsNumeric(args[0]) ? std::to_string(whole_number(args[0], "the device index", 0, 1 << 30))
                                    : text(args[0], "the device selector (an index or part of a name)");
    const std::map<std::string, Setter> setters{
        {"memorylimit",
         [&](const mxArray* v) { o.device_memory_limit = whole_number(v, "'MemoryLimit'", 0, max_bytes); }},
        {"devicelimits", [&](const mxArray* v) { o.device_limits = text(v, "'DeviceLimits'"); }},
        {"pipelinecache", [&](const mxArray* v) { o.pipeline_cache_path = text(v, "'PipelineCache'"); }},
    };
    parse_pairs(args + 1, count - 1, setters, "MemoryLimit, DeviceLimits, PipelineCache");
    return o;
}

ConvProblem to_problem(const MatlabConv& conv, const ConvOptions& options, bool bias) {
    const std::vector<int64_t>& x = conv.data;
    const std::vector<int64_t>& w = conv.weights;
    if (x[2] != w[2] * w[4])
        invalid("the data has " + std::to_string(x[2]) + " channels, but the weights take " + std::to_string(w[2]) +
                " channels per group x " + std::to_string(w[4]) + " groups = " + std::to_string(w[2] * w[4]));
    const char* axis[2] = {"height", "width"};
    for (int a = 0; a < 2; ++a) {
        const int64_t reach = options.dilation[a] * (w[a] - 1) + 1;
        const int64_t padded = x[a] + (options.same ? reach - 1 : options.pad[2 * a] + options.pad[2 * a + 1]);
        if (reach > padded)
            invalid(std::string("the dilated filter's ") + axis[a] + " (" + std::to_string(reach) +
                    ") exceeds the padded data's (" + std::to_string(padded) + ")");
    }
    ConvProblem p;  // MATLAB's vertical axis is vkconv's W (columns), its horizontal axis vkconv's H
    p.N = x[3], p.C = x[2], p.H = x[1], p.W = x[0];
    p.K = w[3] * w[4], p.R = w[1], p.S = w[0], p.groups = w[4];
    p.stride_h = options.stride[1], p.stride_w = options.stride[0];
    p.dilation_h = options.dilation[1], p.dilation_w = options.dilation[0];
    if (options.same)
        p.set_auto_padding(AutoPad::SameUpper);  // symmetric in the two axes: the odd pad at the end of each
    else
        p.set_padding(options.pad[2], options.pad[3], options.pad[0], options.pad[1]);
    p.has_bias = bias;
    p.data_type = options.storage;
    p.fp32_weight_gradients = true;  // dW and db come back as single: no reason to round them to 16 bits first
    p.validate();
    return p;
}

std::vector<int64_t> output_extents(const ConvProblem& problem) {
    return {problem.Q(), problem.P(), problem.K, problem.N};
}

PassOptions pass_options(const ConvOptions& options) {
    PassOptions pass;
    pass.workspace_limit = options.workspace_limit;
    return pass;
}

}  // namespace vkconv::mex
