// The vkconv command-line tool, run as a child process (posix_spawn, no shell): usage and exit codes,
// `devices`, `forward` round trips against the CPU reference, --stats, bad input (exit 2, message on stderr,
// no output written or clobbered) and `demo`. Every child runs with VKCONV_VALIDATION=1, and a successful
// run must not print a validation error.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "conv_cases.hpp"
#include "gpu.hpp"
#include "test_util.hpp"

extern char** environ;

namespace {

// The tool under test: the one built beside this binary, or $VKCONV_CLI (for a copied build run elsewhere).
std::string cli_path() {
    const char* overridden = std::getenv("VKCONV_CLI");
    return overridden && *overridden ? overridden : VKCONV_CLI_PATH;
}

namespace fs = std::filesystem;
using Args = std::vector<std::string>;

// A fresh directory (its name holds a space, so the CLI must cope with one) removed at scope exit.
struct TempDir : vkt::TempDir {
    TempDir() : vkt::TempDir("vkconv cli test") {}
};

struct Result {
    int code = -1;
    std::string out, err, command;
    std::string describe() const {
        return "command: " + command + "\nexit code: " + std::to_string(code) + "\n--- stdout ---\n" + out +
               "--- stderr ---\n" + err;
    }
};

// Runs the CLI with `args`; stdout and stderr go to files under dir/capture and are read back.
Result run_cli(const TempDir& dir, const Args& args) {
    ::setenv("VKCONV_VALIDATION", vkt::validation_opted_out() ? "0" : "1", 1);
    const fs::path capture = dir.path / "capture", out_path = capture / "stdout", err_path = capture / "stderr";
    fs::create_directories(capture);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    Args all = {cli_path()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    Result result;
    for (auto& a : all) {
        argv.push_back(a.data());
        result.command += (result.command.empty() ? "'" : " '") + a + "'";
    }
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = ::posix_spawn(&pid, cli_path().c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    INFO(result.command);
    REQUIRE(spawned == 0);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) REQUIRE(errno == EINTR);
    result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    result.out = vkt::read_bytes(out_path);
    result.err = vkt::read_bytes(err_path);
    return result;
}

void check_success(const Result& r) {
    INFO(r.describe());
    CHECK(r.code == 0);
    CHECK_THAT(r.err, !Catch::Contains("validation error", Catch::CaseSensitive::No));
    // The child asked for validation (VKCONV_VALIDATION=1): it must have run with it.
    if (!vkt::validation_opted_out())
        CHECK_THAT(r.err, !Catch::Contains("VK_LAYER_KHRONOS_validation is not installed"));
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// A version 1.0 .npy file around the header dict `dict` and `data_bytes` zero bytes, padded like numpy.
std::string npy_bytes(const std::string& dict, size_t data_bytes) {
    std::string header = dict;
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    return bytes + header + std::string(data_bytes, '\0');
}

// The unsigned integer after "key": in a flat JSON text.
std::optional<uint64_t> json_uint(const std::string& json, const std::string& key) {
    const std::string needle = "\"" + key + "\": ";
    const auto at = json.find(needle);
    if (at == std::string::npos) return std::nullopt;
    uint64_t value = 0;
    const char* begin = json.data() + at + needle.size();
    const auto [end, ec] = std::from_chars(begin, json.data() + json.size(), value);
    if (ec != std::errc() || end == begin) return std::nullopt;
    return value;
}

// ----------------------------------------------------------------------------------------------------
// Forward runs: write the operands, run the CLI, compare its output with the reference.

struct Operands {
    std::vector<float> x, w, b;
};

Operands write_operands(const TempDir& dir, const vkconv::ConvProblem& p, uint32_t seed) {
    Operands o;
    o.x = vkt::random_values(p.input_elements(), seed);
    o.w = vkt::random_values(p.filter_elements(), seed + 1);
    vkconv::write_npy(dir.file("x.npy"), p.input_shape(), o.x);
    vkconv::write_npy(dir.file("w.npy"), p.filter_shape(), o.w);
    if (p.has_bias) {
        o.b = vkt::random_values(p.K, seed + 2);
        vkconv::write_npy(dir.file("b.npy"), p.bias_shape(), o.b);
    }
    return o;
}

Args forward_args(const TempDir& dir, const vkconv::ConvProblem& p) {
    Args args = {"forward", "--input", dir.file("x.npy"), "--weight", dir.file("w.npy"), "--output", dir.file("y.npy")};
    if (p.has_bias) args.insert(args.end(), {"--bias", dir.file("b.npy")});
    return args;
}

void check_output(const TempDir& dir, const vkconv::ConvProblem& p, const Operands& o, const std::string& what) {
    const auto y = vkconv::read_npy(dir.file("y.npy"));
    REQUIRE(y.shape == p.output_shape());
    const auto expected = vkconv::reference::forward(p, o.x, o.w, o.b);
    auto abs_of = [](std::vector<float> v) {
        for (float& f : v) f = std::fabs(f);
        return v;
    };
    const auto magnitude = vkconv::reference::forward(p, abs_of(o.x), abs_of(o.w), abs_of(o.b));
    vkt::check_close(y.data, expected, magnitude, p.channels_per_group() * p.R * p.S, what + ": " + p.str());
}

struct ForwardCase {
    std::string name;
    vkconv::ConvProblem problem;
    Args options;  // beyond --input/--weight/--bias/--output; must describe `problem`
};

std::vector<ForwardCase> forward_cases() {
    std::vector<ForwardCase> cases;
    const vkconv::ConvProblem plain = vkt::problem().batch(2).channels(3).image(7, 6).filters(4).kernel(3, 3).pad(1);
    cases.push_back({"nchw without bias", plain, {"--padding", "1"}});
    auto nhwc = plain;
    nhwc.layout = vkconv::Layout::NHWC;
    nhwc.has_bias = true;
    cases.push_back({"nhwc with bias", nhwc, {"--layout", "nhwc", "--padding", "1"}});
    const vkconv::ConvProblem odd = vkt::problem()
                                        .batch(2)
                                        .channels(4)
                                        .image(11, 9)
                                        .filters(6)
                                        .kernel(3, 3)
                                        .pad(1, 2)
                                        .stride(2, 1)
                                        .dilation(2)
                                        .groups(2)
                                        .bias();
    cases.push_back({"stride, padding, dilation, groups",
                     odd,
                     {"--stride", "2,1", "--padding", "1,2", "--dilation", "2", "--groups", "2"}});
    const vkconv::ConvProblem simple = vkt::problem().batch(1).channels(5).image(8, 8).filters(3).kernel(3, 3).bias();
    cases.push_back({"--algo direct", simple, {"--algo", "direct"}});
    cases.push_back({"--algo auto", simple, {"--algo", "auto"}});
    cases.push_back({"--algo im2col",
                     odd,
                     {"--stride", "2,1", "--padding", "1,2", "--dilation", "2", "--groups", "2", "--algo", "im2col"}});
    cases.push_back({"--algo mec",
                     odd,
                     {"--stride", "2,1", "--padding", "1,2", "--dilation", "2", "--groups", "2", "--algo", "MEC"}});
    cases.push_back({"--algo mec --mec-schedule a",
                     nhwc,
                     {"--layout", "nhwc", "--padding", "1", "--algo", "mec", "--mec-schedule", "a"}});
    cases.push_back({"--algo mec --mec-schedule b", plain, {"--padding", "1", "--algo", "mec", "--mec-schedule", "B"}});
    cases.push_back({"--device 0", simple, {"--device", "0"}});
    // Four pads, and TensorFlow's SAME at stride 2 on an even image (pads 0,1,0,1).
    const vkconv::ConvProblem asymmetric =
        vkt::problem().batch(1).channels(3).image(9, 8).filters(4).kernel(3, 3).pads(2, 0, 1, 3).bias();
    cases.push_back({"--padding top,bottom,left,right", asymmetric, {"--padding", "2,0,1,3"}});
    const vkconv::ConvProblem same =
        vkt::problem().batch(2).channels(3).image(10, 8).filters(4).kernel(3, 3).pads(0, 1, 0, 1).stride(2);
    cases.push_back({"--auto-pad same-upper", same, {"--stride", "2", "--auto-pad", "same-upper", "--algo", "im2col"}});
    auto same_lower = same;
    same_lower.set_padding(1, 0, 1, 0);
    same_lower.layout = vkconv::Layout::NHWC;
    cases.push_back({"--auto-pad SAME_LOWER, nhwc, mec",
                     same_lower,
                     {"--stride", "2", "--auto-pad", "SAME_LOWER", "--layout", "nhwc", "--algo", "mec"}});
    // The largest stride a problem allows (one output pixel): every algorithm runs it, measured or named.
    const vkconv::ConvProblem far = vkt::problem().batch(1).channels(2).image(5, 5).filters(3).kernel(3, 3).stride(2147483647);
    cases.push_back({"--stride 2^31-1 --measure", far, {"--stride", "2147483647", "--measure"}});
    cases.push_back({"--stride 2^31-1 --algo mec", far, {"--stride", "2147483647", "--algo", "mec"}});
    cases.push_back({"--padding 5 beyond a 3x3", vkt::problem().batch(1).channels(2).image(4, 5).filters(3).kernel(3, 3).pad(5).bias(),
                     {"--padding", "5"}});
    return cases;
}

// ----------------------------------------------------------------------------------------------------
// Bad input: each case writes its files into `dir` and returns the arguments; the run must fail with
// exit code 2 and a message holding every keyword, and leave the output alone.

constexpr const char* kValidInputDict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4, 6, 6), }";
constexpr size_t kValidInputBytes = 4 * 144;

struct BadCase {
    std::string name;
    std::vector<std::string> keywords;
    std::function<Args(const TempDir&)> prepare;
    bool output_dir_exists = true;  // false: --output points into a missing directory
};

// Valid files for a 1x4x6x6 input and 2x4x3x3 filter; the arguments of a run that would succeed.
Args valid_setup(const TempDir& dir) {
    const vkconv::ConvProblem p = vkt::problem().batch(1).channels(4).image(6, 6).filters(2).kernel(3, 3).bias(false);
    write_operands(dir, p, 1);
    return forward_args(dir, p);
}

Args with(Args args, const Args& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

// Replaces the input file by raw bytes.
std::function<Args(const TempDir&)> raw_input(std::string bytes) {
    return [bytes](const TempDir& dir) {
        auto args = valid_setup(dir);
        vkt::write_bytes(dir.file("x.npy"), bytes);
        return args;
    };
}

std::function<Args(const TempDir&)> extra(Args more) {
    return [more](const TempDir& dir) { return with(valid_setup(dir), more); };
}

std::vector<BadCase> bad_cases() {
    const std::string valid = npy_bytes(kValidInputDict, kValidInputBytes);
    return {
        {"missing input file",
         {"cannot open", "x.npy"},
         [](const TempDir& dir) {
             auto args = valid_setup(dir);
             fs::remove(dir.path / "x.npy");
             return args;
         }},
        {"dtype <f8",
         {"dtype", "<f8"},
         raw_input(npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 4, 6, 6), }", 8 * 144))},
        {"big-endian >f4",
         {"big-endian"},
         raw_input(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1, 4, 6, 6), }", kValidInputBytes))},
        {"fortran_order True",
         {"Fortran"},
         raw_input(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 4, 6, 6), }", kValidInputBytes))},
        {"truncated header", {"truncated header"}, raw_input(valid.substr(0, 40))},
        {"truncated data", {"truncated data"}, raw_input(valid.substr(0, valid.size() - 4))},
        {"malformed header dict",
         {"malformed header"},
         raw_input(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4, 6, 6) ", kValidInputBytes))},
        {"3-D input",
         {"--input", "[4, 6, 6]", "4-D"},
         [](const TempDir& dir) {
             auto args = valid_setup(dir);
             vkconv::write_npy(dir.file("x.npy"), {4, 6, 6}, std::vector<float>(144, 1.0f));
             return args;
         }},
        {"weight channels do not match C/groups",
         {"--weight", "has 3 input channels", "--input", "C = 4"},
         [](const TempDir& dir) {
             auto args = valid_setup(dir);
             vkconv::write_npy(dir.file("w.npy"), {2, 3, 3, 3}, std::vector<float>(54, 1.0f));
             return args;
         }},
        {"C not divisible by --groups", {"C (=4)", "not divisible", "groups (=3)"}, extra({"--groups", "3"})},
        {"bias of wrong length",
         {"--bias", "[3]", "expected [2]"},
         [](const TempDir& dir) {
             auto args = valid_setup(dir);
             vkconv::write_npy(dir.file("b.npy"), {3}, std::vector<float>(3, 1.0f));
             return with(args, {"--bias", dir.file("b.npy")});
         }},
        {"kernel larger than padded input",
         {"larger than the padded input"},
         [](const TempDir& dir) {
             auto args = valid_setup(dir);
             vkconv::write_npy(dir.file("w.npy"), {2, 4, 7, 7}, std::vector<float>(392, 1.0f));
             return args;
         }},
        {"--stride a,b", {"--stride", "a,b"}, extra({"--stride", "a,b"})},
        {"--dilation past int64", {"--dilation", "99999999999999999999"}, extra({"--dilation", "1,99999999999999999999"})},
        {"--stride 0", {"--stride expects", "at least 1", "'0'"}, extra({"--stride", "0"})},
        {"--padding -1", {"--padding expects", "at least 0", "'-1'"}, extra({"--padding", "-1"})},
        {"--padding with 3 values", {"--padding", "1, 2 or 4 values", "'1,2,3'"}, extra({"--padding", "1,2,3"})},
        {"--padding end pad -1", {"--padding expects", "'0,0,0,-1'"}, extra({"--padding", "0,0,0,-1"})},
        {"--auto-pad with --padding", {"--auto-pad", "--padding", "cannot be combined"},
         extra({"--auto-pad", "same-upper", "--padding", "1"})},
        {"unknown --auto-pad", {"--auto-pad", "same"}, extra({"--auto-pad", "same"})},
        {"unknown --algo", {"algorithm", "winograd"}, extra({"--algo", "winograd"})},
        {"unknown --mec-schedule", {"--mec-schedule"}, extra({"--mec-schedule", "c"})},
        {"unknown --layout", {"--layout", "nchwc"}, extra({"--layout", "nchwc"})},
        {"unknown --activation", {"--activation", "gelu"}, extra({"--activation", "gelu"})},
        {"--alpha nan", {"--alpha", "finite"}, extra({"--alpha", "nan"})},
        {"--negative-slope inf", {"--negative-slope", "finite"}, extra({"--negative-slope", "inf"})},
        {"--beta without --residual", {"--beta 0.5", "--residual"}, extra({"--beta", "0.5"})},
        {"--residual without --beta",
         {"--residual", "--beta"},
         [](const TempDir& dir) {
             auto args = valid_setup(dir);
             vkconv::write_npy(dir.file("z.npy"), {1, 2, 4, 4}, std::vector<float>(32, 1.0f));
             return with(args, {"--residual", dir.file("z.npy")});
         }},
        {"--residual of the wrong shape",
         {"--residual", "[1, 2, 4, 5]", "[1, 2, 4, 4]"},
         [](const TempDir& dir) {
             auto args = valid_setup(dir);
             vkconv::write_npy(dir.file("z.npy"), {1, 2, 4, 5}, std::vector<float>(40, 1.0f));
             return with(args, {"--residual", dir.file("z.npy"), "--beta", "1"});
         }},
        {"--output in a missing directory",
         {"--output", "does not exist"},
         [](const TempDir& dir) {
             auto args = valid_setup(dir);
             args[6] = dir.file("no such dir/y.npy");
             return args;
         },
         false},
    };
}

std::vector<std::string> top_level_files(const TempDir& dir) {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir.path))
        if (!entry.is_directory()) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// Runs the case twice: without an output file (none may appear) and over an existing one (left as it was).
void check_refused(const BadCase& c) {
    INFO("case: " << c.name);
    for (bool existing : {false, true}) {
        if (existing && !c.output_dir_exists) continue;
        TempDir dir;
        const Args args = c.prepare(dir);
        const std::string output = args[6];
        REQUIRE(args[5] == "--output");
        const std::string sentinel = "not an npy file: must survive a refused run\n";
        if (existing) vkt::write_bytes(output, sentinel);
        const auto before = top_level_files(dir);
        const auto r = run_cli(dir, args);
        INFO(r.describe());
        CHECK(r.code == 2);
        CHECK_FALSE(r.err.empty());
        CHECK(r.out.empty());
        for (const auto& keyword : c.keywords) CHECK_THAT(r.err, Catch::Contains(keyword));
        if (existing)
            CHECK(vkt::read_bytes(output) == sentinel);
        else
            CHECK_FALSE(fs::exists(output));
        CHECK(top_level_files(dir) == before);  // no temporary left beside the output either
    }
}

}  // namespace

TEST_CASE("cli: --help of the tool and of each subcommand prints usage and exits 0", "[cli]") {
    TempDir dir;
    const std::vector<std::pair<Args, std::string>> cases = {{{"--help"}, "forward"},
                                                             {{"devices", "--help"}, "devices"},
                                                             {{"forward", "--help"}, "--input"},
                                                             {{"demo", "--help"}, "--layers"},
                                                             {{"memory", "--help"}, "--svg"},
                                                             {{"find", "--help"}, "--find-cache"},
                                                             {{"forward", "--help"}, "--heuristic"}};
    for (const auto& [args, mention] : cases) {
        const auto r = run_cli(dir, args);
        INFO(r.describe());
        CHECK(r.code == 0);
        CHECK_THAT(r.out, Catch::Contains("Usage"));
        CHECK_THAT(r.out, Catch::Contains(mention));
    }
}

TEST_CASE("cli: bad usage exits 2 with a message on stderr", "[cli]") {
    TempDir dir;
    const auto x = dir.file("x.npy"), w = dir.file("w.npy"), y = dir.file("y.npy");
    const std::vector<std::pair<Args, std::string>> cases = {
        {{}, "subcommand"},
        {{"frobnicate"}, "frobnicate"},
        {{"--bogus"}, "--bogus"},
        {{"devices", "--bogus"}, "--bogus"},
        {{"forward", "--input", x, "--weight", w, "--output", y, "--bogus"}, "--bogus"},
        {{"forward", "--weight", w, "--output", y}, "--input"},
        {{"forward", "--input", x, "--output", y}, "--weight"},
        {{"forward", "--input", x, "--weight", w}, "--output"},
        {{"demo", "--bogus"}, "--bogus"},
        {{"demo", "--batch", "0"}, "--batch: expects a positive integer, got '0'"},
        {{"demo", "--batch", "-4"}, "--batch"},
        // A typo is named with the nearest option, even where a required option is then missing.
        {{"forward", "--inptu", x, "--weight", w, "--output", y}, "unknown option --inptu for forward (did you mean --input?)"},
        {{"forward", "--input", x, "--weight", w, "--output", y, "--paddng", "1"}, "did you mean --padding?"},
        // Values are refused in the option's own name, not a field's.
        {{"forward", "--input", x, "--weight", w, "--output", y, "--padding", "-1"}, "--padding expects"},
        {{"forward", "--input", x, "--weight", w, "--output", y, "--stride", "0"}, "--stride expects"},
        {{"forward", "--input", x, "--weight", w, "--output", y, "--dilation", "1,0"}, "--dilation expects"},
        {{"bench", "--gemm-shape", "0,4,4"}, "'0,4,4'"},
        {{"bench", "--gemm-shape", "64x64"}, "'64x64'"},
        {{"bench", "--first-call", "--layer", "nope"}, "'nope'"},
        {{"devices", "--json", "extra"}, "extra"},
    };
    for (const auto& [args, mention] : cases) {
        const auto r = run_cli(dir, args);
        INFO(r.describe());
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains(mention));
        CHECK_FALSE(fs::exists(y));
    }
}

TEST_CASE("cli: devices lists every device and marks the default one", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    const auto r = run_cli(dir, {"devices"});
    check_success(r);
    INFO(r.describe());
    const auto lines = lines_of(r.out);
    REQUIRE_FALSE(lines.empty());
    int starred = 0;
    for (const auto& line : lines) {
        starred += line.rfind("*", 0) == 0 ? 1 : 0;
        CHECK_THAT(line, Catch::Contains("subgroup") && Catch::Contains("maxStorageBufferRange"));
    }
    CHECK(starred == 1);
    // The mark agrees with the device a plain Context picks (the shared test context is one).
    CHECK_THAT(r.out, Catch::Contains("* [" + std::to_string(context->device().index) + "] "));
    // --json: the same devices, one object each, the default one marked (the GPU report reads it).
    const auto j = run_cli(dir, {"devices", "--json"});
    check_success(j);
    const auto listed = nlohmann::json::parse(j.out);
    REQUIRE(listed.size() == lines.size());
    int defaults = 0;
    for (const auto& d : listed) {
        CHECK(d.at("summary").get<std::string>().find(d.at("name").get<std::string>()) != std::string::npos);
        CHECK(d.at("subgroup_size").get<int>() > 0);
        if (d.at("default").get<bool>()) {
            ++defaults;
            CHECK(d.at("index").get<uint32_t>() == context->device().index);
            CHECK(d.at("compute_units").get<uint32_t>() == context->device().compute_units);
            CHECK(d.at("max_buffer_bytes").get<uint64_t>() == context->device().max_buffer_bytes);
        }
    }
    CHECK(defaults == 1);
    const auto v = run_cli(dir, {"--version"});
    check_success(v);
    CHECK_THAT(v.out, Catch::StartsWith("vkconv "));
}

TEST_CASE("cli: forward writes the reference result", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 300;
    for (const auto& c : forward_cases()) {
        INFO("case: " << c.name);
        TempDir dir;
        const auto operands = write_operands(dir, c.problem, seed += 10);
        const auto r = run_cli(dir, with(forward_args(dir, c.problem), c.options));
        check_success(r);
        INFO(r.describe());
        CHECK(r.out.empty());  // no --stats: nothing on stdout
        REQUIRE(r.code == 0);
        check_output(dir, c.problem, operands, c.name);
    }
}

TEST_CASE("cli: forward applies --activation, --alpha and --beta with --residual", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const vkconv::ConvProblem p = vkt::problem().batch(2).channels(3).image(7, 6).filters(4).kernel(3, 3).pad(1).bias();
    struct Case {
        std::string activation;
        float alpha, beta, slope;
        const char* algorithm;
    };
    uint32_t seed = 900;
    for (const Case& c : {Case{"relu", 1.5f, 0.5f, 0.01f, "direct"}, Case{"leaky-relu", -0.75f, 2.0f, 0.2f, "im2col"},
                          Case{"relu6", 4.0f, 0.0f, 0.01f, "mec"}, Case{"none", 2.0f, -1.0f, 0.01f, "auto"}}) {
        INFO(c.activation << " alpha " << c.alpha << " beta " << c.beta << " " << c.algorithm);
        TempDir dir;
        const auto o = write_operands(dir, p, seed += 10);
        const auto z = vkt::random_values(p.output_elements(), seed + 5);
        vkconv::write_npy(dir.file("z.npy"), p.output_shape(), z);
        Args args = with(forward_args(dir, p),
                         {"--padding", "1", "--algo", c.algorithm, "--activation", c.activation, "--alpha",
                          std::to_string(c.alpha), "--negative-slope", std::to_string(c.slope)});
        if (c.beta != 0) args = with(args, {"--beta", std::to_string(c.beta), "--residual", dir.file("z.npy")});
        const auto r = run_cli(dir, args);
        check_success(r);
        INFO(r.describe());
        REQUIRE(r.code == 0);
        // The reference with the epilogue applied in double (NCHW: channel k of value i is i / (P*Q) % K).
        auto abs_of = [](std::vector<float> v) {
            for (float& f : v) f = std::fabs(f);
            return v;
        };
        auto plain = p;
        plain.has_bias = false;
        const auto conv = vkconv::reference::forward(plain, o.x, o.w);
        const auto magnitude = vkconv::reference::forward(plain, abs_of(o.x), abs_of(o.w));
        const auto activation = vkconv::parse_activation(c.activation);
        std::vector<double> expected(conv.size()), bound(conv.size());
        for (size_t i = 0; i < conv.size(); ++i) {
            const double bias = o.b[i / size_t(p.P() * p.Q()) % size_t(p.K)];
            const double residual = c.beta != 0 ? double(c.beta) * z[i] : 0.0;
            double v = double(c.alpha) * conv[i] + bias + residual;
            if (activation == vkconv::Activation::ReLU) v = std::max(v, 0.0);
            if (activation == vkconv::Activation::ReLU6) v = std::min(std::max(v, 0.0), 6.0);
            if (activation == vkconv::Activation::LeakyReLU && v < 0) v *= double(c.slope);
            expected[i] = v;
            bound[i] = std::fabs(double(c.alpha)) * magnitude[i] + std::fabs(bias) + std::fabs(residual);
        }
        const auto y = vkconv::read_npy(dir.file("y.npy"));
        vkt::check_close(y.data, expected, bound, p.channels_per_group() * p.R * p.S + 3, "forward with an epilogue");
    }
}

TEST_CASE("cli: demo checks its forward rows with an epilogue and a random residual", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    const auto r = run_cli(dir, {"demo", "--layer", "cv12", "--repeat", "1", "--algo", "im2col", "--activation",
                                 "leaky-relu", "--negative-slope", "0.1", "--alpha", "0.5", "--beta", "2"});
    check_success(r);
    INFO(r.describe());
    const auto lines = lines_of(r.out);
    const auto row =
        std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("cv12 ", 0) == 0; });
    REQUIRE(row != lines.end());
    CHECK_THAT(*row, Catch::Contains(" ok "));
    const auto bad = run_cli(dir, {"demo", "--layer", "cv12", "--alpha", "inf"});
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--alpha") && Catch::Contains("finite"));
}

TEST_CASE("cli: forward --stats prints one JSON object with exact memory", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    const vkconv::ConvProblem p =
        vkt::problem().batch(2).channels(6).image(9, 10).filters(5).kernel(3, 3).pad(1).bias();
    const auto operands = write_operands(dir, p, 77);
    const auto r = run_cli(dir, with(forward_args(dir, p), {"--padding", "1", "--algo", "direct", "--stats"}));
    check_success(r);
    INFO(r.describe());
    REQUIRE(r.code == 0);
    check_output(dir, p, operands, "--stats run");

    REQUIRE(r.out.size() >= 3);
    CHECK(r.out.find('\n') == r.out.size() - 1);  // exactly one line
    const std::string json = r.out.substr(0, r.out.size() - 1);
    CHECK(json.front() == '{');
    CHECK(json.back() == '}');
    for (const char* key : {"\"pass\": \"forward\"", "\"algorithm\": \"direct\"",
                            "\"device\": ", "\"gpu_ms\": ", "\"workspace_bytes\": ", "\"peak_bytes\": "})
        CHECK_THAT(json, Catch::Contains(key));
    CHECK_THAT(json, Catch::Contains("\"device\": \"" + context->device().name + "\""));

    vkconv::PoolStats pool;
    pool.alignment = context->pool_stats().alignment;
    REQUIRE(pool.alignment > 0);
    auto bytes = [](const vkconv::Shape& shape) { return static_cast<uint64_t>(vkconv::shape_elements(shape)) * 4; };
    const uint64_t operand_bytes = pool.rounded(bytes(p.input_shape())) + pool.rounded(bytes(p.filter_shape())) +
                                   pool.rounded(bytes(p.bias_shape())) + pool.rounded(bytes(p.output_shape()));
    CHECK(json_uint(json, "workspace_bytes") == std::optional<uint64_t>(0));
    CHECK(json_uint(json, "peak_bytes") == std::optional<uint64_t>(operand_bytes));
    CHECK(json_uint(json, "operand_bytes") == std::optional<uint64_t>(operand_bytes));
    CHECK(json_uint(json, "peak_reserved_bytes") >= std::optional<uint64_t>(operand_bytes));
    CHECK(json_uint(json, "driver_allocations").has_value());

    // A lowered algorithm: the peak is the operands plus exactly the workspace the library reports.
    for (const char* algorithm : {"im2col", "mec"}) {
        const auto lowered =
            run_cli(dir, with(forward_args(dir, p), {"--padding", "1", "--algo", algorithm, "--stats"}));
        check_success(lowered);
        INFO(lowered.describe());
        REQUIRE(lowered.code == 0);
        const std::string stats = lowered.out.substr(0, lowered.out.size() - 1);
        CHECK_THAT(stats, Catch::Contains(std::string("\"algorithm\": \"") + algorithm + "\""));
        const uint64_t workspace = vkconv::forward_workspace_bytes(*context, p, vkconv::parse_algorithm(algorithm));
        CHECK(workspace > 0);
        CHECK(json_uint(stats, "workspace_bytes") == std::optional<uint64_t>(workspace));
        CHECK(json_uint(stats, "peak_bytes") == std::optional<uint64_t>(operand_bytes + workspace));
    }
}

TEST_CASE("cli: forward refuses bad input with exit 2 and writes nothing", "[cli]") {
    for (const auto& c : bad_cases()) check_refused(c);
}

TEST_CASE("cli: forward refuses an unknown --device, or a named algorithm that cannot run, with exit 2", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    check_refused({"--device no-such-device", {"no-such-device"}, extra({"--device", "no-such-device"})});
    // An algorithm named that cannot run the problem is the user's choice to change: exit 2, the option named.
    check_refused({"--algo depthwise on a dense problem", {"--algo depthwise cannot run this problem", "not depthwise"},
                   extra({"--algo", "depthwise"})});
    check_refused({"--device out of range", {"device index 99"}, extra({"--device", "99"})});
}

TEST_CASE("cli: demo runs a built-in layer and checks it", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    const auto r = run_cli(dir, {"demo", "--layer", "cv12", "--repeat", "1"});
    check_success(r);
    INFO(r.describe());
    bool found = false;
    for (const auto& line : lines_of(r.out))
        if (line.rfind("cv12 ", 0) == 0) {
            found = true;
            CHECK_THAT(line, Catch::Contains(" ok "));
        }
    CHECK(found);
    CHECK_THAT(r.out, Catch::Contains("1 layers"));
}

TEST_CASE("cli: demo runs the layers of a custom --layers file", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    vkt::write_bytes(dir.file("my layers.csv"),
                     "# name,N,C,H,W,K,R,S,sh,sw,ph,pw,dh,dw,groups,source\n"
                     "tiny,1,2,5,5,3,3,3,1,1,1,1,1,1,1,a test layer\n");
    const auto r = run_cli(dir, {"demo", "--layers", dir.file("my layers.csv"), "--repeat", "1"});
    check_success(r);
    INFO(r.describe());
    CHECK_THAT(r.out, Catch::Contains("tiny ") && Catch::Contains(" ok "));
    CHECK_THAT(r.out, Catch::Contains("1 layers"));
}

TEST_CASE("cli: demo's summary claims only the layers it checked", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    // "large": 604 million multiply-adds a pass, above the demo's check limit (4e8), so left unchecked.
    vkt::write_bytes(dir.file("layers.csv"),
                     "tiny,1,2,5,5,3,3,3,1,1,1,1,1,1,1,checked\n"
                     "large,1,128,64,64,128,3,3,1,1,1,1,1,1,1,above the check limit\n");
    const auto r = run_cli(dir, {"demo", "--layers", dir.file("layers.csv"), "--repeat", "1", "--algo", "im2col"});
    check_success(r);
    INFO(r.describe());
    CHECK_THAT(r.out, Catch::Contains("2 layers") && Catch::Contains("1 of 2 checked, all within fp32 rounding bounds"));
    CHECK_THAT(r.out, !Catch::Contains("all checked results"));
}

TEST_CASE("cli: demo refuses unknown layers and bad layer files with exit 2", "[cli]") {
    TempDir dir;
    vkt::write_bytes(dir.file("bad layers.csv"),
                     "# a comment\n"
                     "tiny,1,2,5,5,3,3,3,1,1,1,1,1,1,1,fine\n"
                     "broken,1,two,5,5,3,3,3,1,1,1,1,1,1,1,not fine\n");
    const std::vector<std::pair<Args, std::vector<std::string>>> cases = {
        {{"demo", "--layer", "nope"}, {"nope"}},
        {{"demo", "--layers", "/nonexistent.csv"}, {"/nonexistent.csv"}},
        {{"demo", "--layers", dir.file("bad layers.csv")}, {dir.file("bad layers.csv") + ":3:", "'two'", "integer"}},
        {{"demo", "--layer", "cv12", "--repeat", "0"}, {"--repeat"}},
    };
    for (const auto& [args, keywords] : cases) {
        const auto r = run_cli(dir, args);
        INFO(r.describe());
        CHECK(r.code == 2);
        for (const auto& keyword : keywords) CHECK_THAT(r.err, Catch::Contains(keyword));
    }
}

// ----------------------------------------------------------------------------------------------------
// Backward passes through the tool.

namespace {

std::string shape_arg(const vkconv::Shape& shape) {
    std::string text;
    for (size_t i = 0; i < shape.size(); ++i) text += (i ? "," : "") + std::to_string(shape[i]);
    return text;
}

using vkt::absolute;

}  // namespace

TEST_CASE("cli: backward-data and backward-filter write the reference gradients", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    struct Case {
        std::string name;
        vkconv::ConvProblem problem;
        Args options;
    };
    // stride 2 on 10 rows: the last input row is never read
    const vkconv::ConvProblem strided =
        vkt::problem().batch(2).channels(4).image(10, 9).filters(6).kernel(3, 3).pad(0, 1).stride(2).groups(2);
    const vkconv::ConvProblem nhwc =
        vkt::problem().batch(1).channels(3).image(7, 6).filters(5).kernel(3, 2).pad(1, 0).dilation(2, 1).layout(
            vkconv::Layout::NHWC);
    const std::vector<Case> cases = {
        {"nchw, stride 2, groups 2", strided, {"--stride", "2", "--padding", "0,1", "--groups", "2"}},
        {"nhwc, dilation 2,1", nhwc, {"--layout", "nhwc", "--dilation", "2,1", "--padding", "1,0"}},
        {"nchw, stride 2, groups 2, mec",
         strided,
         {"--stride", "2", "--padding", "0,1", "--groups", "2", "--algo", "mec"}},
        {"nhwc, dilation 2,1, mec",
         nhwc,
         {"--layout", "nhwc", "--dilation", "2,1", "--padding", "1,0", "--algo", "mec"}}};
    uint32_t seed = 70;
    for (const auto& c : cases) {
        INFO("case: " << c.name);
        const auto& p = c.problem;
        TempDir dir;
        const auto x = vkt::random_values(p.input_elements(), seed++);
        const auto w = vkt::random_values(p.filter_elements(), seed++);
        const auto dy = vkt::random_values(p.output_elements(), seed++);
        vkconv::write_npy(dir.file("x.npy"), p.input_shape(), x);
        vkconv::write_npy(dir.file("w.npy"), p.filter_shape(), w);
        vkconv::write_npy(dir.file("dy.npy"), p.output_shape(), dy);

        auto r =
            run_cli(dir, with({"backward-data", "--grad-output", dir.file("dy.npy"), "--weight", dir.file("w.npy"),
                               "--input-shape", shape_arg(p.input_shape()), "--output", dir.file("dx.npy"), "--stats"},
                              c.options));
        check_success(r);
        REQUIRE(r.code == 0);
        CHECK_THAT(r.out, Catch::Contains("\"pass\": \"backward_data\""));
        if (c.name.find("mec") != std::string::npos) CHECK_THAT(r.out, Catch::Contains("\"algorithm\": \"mec\""));
        const auto dx = vkconv::read_npy(dir.file("dx.npy"));
        CHECK(dx.shape == p.input_shape());
        vkt::check_close(dx.data, vkconv::reference::backward_data(p, dy, w),
                         vkconv::reference::backward_data(p, absolute(dy), absolute(w)),
                         p.filters_per_group() * p.R * p.S, "cli backward-data " + c.name);

        r = run_cli(dir, with({"backward-filter", "--input", dir.file("x.npy"), "--grad-output", dir.file("dy.npy"),
                               "--weight-shape", shape_arg(p.filter_shape()), "--output", dir.file("dw.npy"),
                               "--grad-bias", dir.file("db.npy")},
                              c.options));
        check_success(r);
        REQUIRE(r.code == 0);
        const auto dw = vkconv::read_npy(dir.file("dw.npy"));
        const auto db = vkconv::read_npy(dir.file("db.npy"));
        CHECK(dw.shape == p.filter_shape());
        CHECK(db.shape == p.bias_shape());
        const int64_t reduction = p.N * p.P() * p.Q();
        vkt::check_close(dw.data, vkconv::reference::backward_filter(p, x, dy),
                         vkconv::reference::backward_filter(p, absolute(x), absolute(dy)), reduction,
                         "cli backward-filter " + c.name);
        vkt::check_close(db.data, vkconv::reference::backward_bias(p, dy),
                         vkconv::reference::backward_bias(p, absolute(dy)), reduction,
                         "cli backward-filter bias " + c.name);
    }
}

TEST_CASE("cli: backward commands refuse bad input with exit 2 and write nothing", "[cli]") {
    TempDir dir;
    const vkconv::ConvProblem p = vkt::problem().batch(1).channels(3).image(5, 5).filters(2).kernel(3, 3);
    vkconv::write_npy(dir.file("x.npy"), p.input_shape(), vkt::random_values(p.input_elements(), 1));
    vkconv::write_npy(dir.file("w.npy"), p.filter_shape(), vkt::random_values(p.filter_elements(), 2));
    vkconv::write_npy(dir.file("dy.npy"), p.output_shape(), vkt::random_values(p.output_elements(), 3));
    const std::string out = dir.file("out.npy");
    auto data = [&](const std::string& shape) {
        return Args{"backward-data", "--grad-output", dir.file("dy.npy"), "--weight", dir.file("w.npy"),
                    "--input-shape", shape,           "--output",         out};
    };
    auto filter = [&](const std::string& shape) {
        return Args{"backward-filter",
                    "--input",
                    dir.file("x.npy"),
                    "--grad-output",
                    dir.file("dy.npy"),
                    "--weight-shape",
                    shape,
                    "--output",
                    out};
    };
    const std::vector<std::pair<Args, std::vector<std::string>>> cases = {
        {data("1,3,6,5"), {"--grad-output", "[1, 2, 3, 3]", "--input-shape", "[1, 3, 6, 5]"}},
        {data("1,3,5"), {"--input-shape", "four"}},
        {data("1,3,x,5"), {"--input-shape"}},
        {data("1,3,0,5"), {"--input-shape"}},
        {data("1,4,5,5"), {"input channels per group", "C = 4"}},
        {with(data("1,3,5,5"), {"--stride", "0"}), {"stride"}},
        {filter("2,3,3"), {"--weight-shape"}},
        {filter("2,3,4,4"), {"--grad-output", "[1, 2, 2, 2]"}},
        {with(filter("2,3,3,3"), {"--grad-bias", dir.file("missing/db.npy")}), {"--grad-bias", "does not exist"}},
        {{"backward-data", "--weight", dir.file("w.npy"), "--input-shape", "1,3,5,5", "--output", out},
         {"--grad-output"}},
    };
    for (const auto& [args, needles] : cases) {
        const auto r = run_cli(dir, args);
        INFO(r.describe());
        CHECK(r.code == 2);
        for (const auto& needle : needles) CHECK_THAT(r.err, Catch::Contains(needle));
        CHECK_FALSE(fs::exists(out));
    }
}

TEST_CASE("cli: conv-transpose writes ONNX ConvTranspose's result", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    struct Case {
        std::string name;
        vkconv::ConvTransposeProblem problem;
        Args options;
    };
    vkconv::ConvTransposeProblem strided;
    strided.N = 2, strided.C = 4, strided.H = 5, strided.W = 4, strided.K = 6, strided.R = 3, strided.S = 3;
    strided.stride_h = 3, strided.stride_w = 2, strided.groups = 2, strided.has_bias = true;
    strided.pad_top = 1, strided.pad_bottom = 0, strided.pad_left = 2, strided.pad_right = 1;
    strided.output_padding_h = 1;
    auto shaped = strided;
    shaped.pad_top = shaped.pad_bottom = shaped.pad_left = shaped.pad_right = 0, shaped.output_padding_h = 0;
    shaped.output_size = std::array<int64_t, 2>{16, 10};  // one row and one column past the full result
    auto beyond = shaped;
    beyond.output_size = std::array<int64_t, 2>{19, 12};  // 2 rows and 1 column before the full result
    auto same = shaped;
    same.output_size.reset(), same.auto_pad = vkconv::AutoPad::SameUpper, same.layout = vkconv::Layout::NHWC;
    same.has_bias = false;
    const std::vector<Case> cases = {
        {"pads, output padding, groups, bias", strided,
         {"--stride", "3,2", "--groups", "2", "--padding", "1,0,2,1", "--output-padding", "1,0"}},
        {"--output-shape", shaped, {"--stride", "3,2", "--groups", "2", "--output-shape", "16,10", "--algo", "mec"}},
        {"--output-shape past the full result at both ends", beyond,
         {"--stride", "3,2", "--groups", "2", "--output-shape", "19,12"}},
        {"--auto-pad same-upper, nhwc", same,
         {"--stride", "3,2", "--groups", "2", "--auto-pad", "same-upper", "--layout", "nhwc", "--stats"}}};
    uint32_t seed = 610;
    for (const auto& c : cases) {
        INFO("case: " << c.name);
        const auto& p = c.problem;
        const auto q = p.convolution();
        TempDir dir;
        const auto x = vkt::random_values(size_t(vkconv::shape_elements(p.input_shape())), seed++);
        const auto w = vkt::random_values(size_t(vkconv::shape_elements(p.filter_shape())), seed++);
        const auto b = vkt::random_values(size_t(p.K), seed++);
        vkconv::write_npy(dir.file("x.npy"), p.input_shape(), x);
        vkconv::write_npy(dir.file("w.npy"), p.filter_shape(), w);
        Args args{"conv-transpose", "--input", dir.file("x.npy"), "--weight", dir.file("w.npy"), "--output",
                  dir.file("y.npy")};
        if (p.has_bias) {
            vkconv::write_npy(dir.file("b.npy"), p.bias_shape(), b);
            args = with(args, {"--bias", dir.file("b.npy")});
        }
        const auto r = run_cli(dir, with(args, c.options));
        check_success(r);
        INFO(r.describe());
        REQUIRE(r.code == 0);
        if (c.name.find("--stats") != std::string::npos || c.name.find("nhwc") != std::string::npos)
            CHECK_THAT(r.out, Catch::Contains("\"pass\": \"conv_transpose\"") &&
                                  Catch::Contains("\"output_h\": " + std::to_string(p.P())));
        const auto y = vkconv::read_npy(dir.file("y.npy"));
        REQUIRE(y.shape == p.output_shape());
        // Its convolution's backward-data (the mapping test_transpose.cpp checks against ONNX's definition),
        // placed where it sits in the output, plus the bias.
        const auto dx = vkconv::reference::backward_data(q, x, w);
        const auto dx_magnitude = vkconv::reference::backward_data(q, vkt::absolute(x), vkt::absolute(w));
        std::vector<double> expected(size_t(p.N * p.K * p.P() * p.Q()), 0.0), magnitude(expected.size(), 0.0);
        const auto origin = p.convolution_origin();
        const bool nhwc = p.layout == vkconv::Layout::NHWC;
        for (int64_t n = 0; n < p.N; ++n)
            for (int64_t k = 0; k < p.K; ++k)
                for (int64_t h = 0; h < q.H; ++h)
                    for (int64_t v = 0; v < q.W; ++v) {
                        const int64_t oh = h + origin[0], ow = v + origin[1];
                        const size_t from = size_t(nhwc ? ((n * q.H + h) * q.W + v) * p.K + k : ((n * p.K + k) * q.H + h) * q.W + v);
                        const size_t to = size_t(nhwc ? ((n * p.P() + oh) * p.Q() + ow) * p.K + k
                                                      : ((n * p.K + k) * p.P() + oh) * p.Q() + ow);
                        expected[to] = dx[from], magnitude[to] = dx_magnitude[from];
                    }
        if (p.has_bias)
            for (size_t i = 0; i < expected.size(); ++i) {
                const size_t k = p.layout == vkconv::Layout::NHWC ? i % size_t(p.K)
                                                                  : (i / size_t(p.P() * p.Q())) % size_t(p.K);
                expected[i] += b[k], magnitude[i] += std::fabs(b[k]);
            }
        vkt::check_close(y.data, expected, magnitude, p.C / p.groups * p.R * p.S + 1, "cli conv-transpose " + c.name);
    }
}

TEST_CASE("cli: conv-transpose refuses bad input with exit 2 and writes nothing", "[cli]") {
    TempDir dir;
    vkconv::write_npy(dir.file("x.npy"), {1, 2, 4, 4}, vkt::random_values(32, 1));
    vkconv::write_npy(dir.file("w.npy"), {2, 3, 3, 3}, vkt::random_values(54, 2));
    vkconv::write_npy(dir.file("b.npy"), {2}, vkt::random_values(2, 3));
    const std::string out = dir.file("out.npy");
    const Args base{"conv-transpose", "--input", dir.file("x.npy"), "--weight", dir.file("w.npy"), "--output", out};
    const std::vector<std::pair<Args, std::vector<std::string>>> cases = {
        {with(base, {"--padding", "1", "--auto-pad", "same-upper"}), {"--auto-pad", "--padding", "cannot be combined"}},
        {with(base, {"--padding", "1", "--output-shape", "8,8"}), {"--output-shape", "--padding", "cannot be combined"}},
        {with(base, {"--padding", "0,0,0,-1"}), {"--padding expects", "'0,0,0,-1'"}},
        {with(base, {"--stride", "2", "--output-padding", "2"}), {"output_padding_h (=2)", "less than the stride"}},
        {with(base, {"--output-shape", "8,x"}), {"--output-shape"}},
        {with(base, {"--bias", dir.file("b.npy")}), {"--bias", "[2]", "expected [3]"}},
        {with(base, {"--groups", "3"}), {"C (=2) is not divisible by groups (=3)"}},
    };
    for (const auto& [args, needles] : cases) {
        const auto r = run_cli(dir, args);
        INFO(r.describe());
        CHECK(r.code == 2);
        for (const auto& needle : needles) CHECK_THAT(r.err, Catch::Contains(needle));
        CHECK_FALSE(fs::exists(out));
    }
}

TEST_CASE("cli: memory reports every algorithm's workspace and peak as table, JSON and SVG", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    const auto r = run_cli(dir, {"memory", "--layer", "cv5", "--batch", "2", "--layout", "nhwc", "--json",
                                 dir.file("memory.json"), "--svg", dir.file("memory.svg")});
    check_success(r);
    INFO(r.describe());
    REQUIRE(r.code == 0);
    // The MEC paper's lowered-buffer ratio for cv5, from the library's exact workspaces.
    CHECK_THAT(r.out, Catch::Contains("cv5") && Catch::Contains("= 4.17x"));
    const std::string json = vkt::read_bytes(dir.file("memory.json"));
    const vkconv::ConvProblem p =
        vkt::problem().batch(2).channels(96).image(24, 24).filters(256).kernel(5, 5).layout(vkconv::Layout::NHWC);
    const uint64_t im2col = vkconv::forward_workspace_bytes(*context, p, vkconv::Algorithm::Im2col);
    CHECK_THAT(json,
               Catch::Contains("\"algorithm\": \"im2col\", \"forward_workspace_bytes\": " + std::to_string(im2col)));
    const std::string svg = vkt::read_bytes(dir.file("memory.svg"));
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK_THAT(svg, Catch::Contains("</svg>") && Catch::Contains("cv5"));

    const auto bad = run_cli(dir, {"memory", "--layer", "nope"});
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("nope"));
}

TEST_CASE("cli: memory takes a --layers table whose pads differ between the sides", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    // TensorFlow's SAME at stride 2 on an even image: one more row and column of padding at the end.
    vkt::write_bytes(dir.file("layers.csv"), "# name,N,C,H,W,K,R,S,stride_h,stride_w,pad_h,pad_w,dilation_h,"
                                             "dilation_w,groups,source\nsame_s2,1,8,16,14,12,3,3,2,2,0:1,0:1,1,1,1,"
                                             "test\n");
    const auto r = run_cli(dir, {"memory", "--layers", dir.file("layers.csv"), "--batch", "3", "--json",
                                 dir.file("memory.json")});
    check_success(r);
    INFO(r.describe());
    REQUIRE(r.code == 0);
    vkconv::ConvProblem p = vkt::problem().batch(3).channels(8).image(16, 14).filters(12).kernel(3, 3).stride(2);
    p.set_padding(0, 1, 0, 1);
    REQUIRE(p.P() == 8);
    REQUIRE(p.Q() == 7);
    const std::string json = vkt::read_bytes(dir.file("memory.json"));
    for (auto algorithm : {vkconv::Algorithm::Im2col, vkconv::Algorithm::Mec}) {
        const uint64_t bytes = vkconv::forward_workspace_bytes(*context, p, algorithm);
        CHECK_THAT(json, Catch::Contains("\"algorithm\": \"" + std::string(vkconv::to_string(algorithm)) +
                                         "\", \"forward_workspace_bytes\": " + std::to_string(bytes)));
    }
    // A pad column that is neither a number nor BEGIN:END is refused, naming the field.
    vkt::write_bytes(dir.file("bad.csv"), "bad,1,8,16,14,12,3,3,2,2,0:x,0,1,1,1,test\n");
    const auto refused = run_cli(dir, {"memory", "--layers", dir.file("bad.csv")});
    CHECK(refused.code == 2);
    CHECK_THAT(refused.err, Catch::Contains("bad.csv:1") && Catch::Contains("field 11"));
}

TEST_CASE("cli: --workspace-limit runs a lowered algorithm in chunks that fit", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    const vkconv::ConvProblem p =
        vkt::problem().batch(2).channels(6).image(9, 10).filters(5).kernel(3, 3).pad(1).bias();
    const auto operands = write_operands(dir, p, 78);
    const uint64_t full = vkconv::forward_workspace_bytes(*context, p, vkconv::Algorithm::Im2col);
    const uint64_t limit = full / 2;
    const auto r = run_cli(dir, with(forward_args(dir, p), {"--padding", "1", "--algo", "im2col", "--stats",
                                                            "--workspace-limit", std::to_string(limit)}));
    check_success(r);
    INFO(r.describe());
    REQUIRE(r.code == 0);
    check_output(dir, p, operands, "--workspace-limit run");
    const auto workspace = json_uint(r.out, "workspace_bytes");
    REQUIRE(workspace.has_value());
    CHECK(*workspace <= limit);
    CHECK(json_uint(r.out, "chunks") > std::optional<uint64_t>(1));
}

TEST_CASE("cli: --workspace-limit auto derives a limit from the heap budget and a bad value is refused", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const uint64_t limit = context->auto_workspace_limit();
    CHECK(limit > 0);
    TempDir dir;
    const vkconv::ConvProblem p = vkt::problem().batch(1).channels(3).image(8, 8).filters(4).kernel(3, 3);
    const auto operands = write_operands(dir, p, 79);
    const auto r = run_cli(dir, with(forward_args(dir, p), {"--algo", "mec", "--workspace-limit", "auto", "--stats"}));
    check_success(r);
    INFO(r.describe());
    REQUIRE(r.code == 0);
    check_output(dir, p, operands, "--workspace-limit auto");
    const auto bad = run_cli(dir, with(forward_args(dir, p), {"--workspace-limit", "lots"}));
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--workspace-limit") && Catch::Contains("lots"));
}

TEST_CASE("cli: find measures a layer's algorithms and keeps the choice in --find-cache", "[cli][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    const auto cache = dir.file("find cache.txt");
    const auto r = run_cli(dir, {"find", "--layer", "cv12", "--batch", "1", "--pass", "backward-data", "--repeats", "1",
                                 "--json", dir.file("find.json"), "--find-cache", cache});
    check_success(r);
    INFO(r.describe());
    REQUIRE(r.code == 0);
    for (const char* algo : {" im2col ", " mec ", " direct "}) CHECK_THAT(r.out, Catch::Contains(algo));
    const std::string json = vkt::read_bytes(dir.file("find.json"));
    CHECK_THAT(json, Catch::Contains("\"pass\": \"backward-data\"") && Catch::Contains("\"verified\": true") &&
                         Catch::Contains("\"deterministic\": true"));
    // The fastest is the first row; the cache names it for this layer's problem.
    const std::string text = vkt::read_bytes(cache);
    CHECK(text.rfind("vkconv-find-cache 1\n", 0) == 0);
    CHECK_THAT(text, Catch::Contains("backward-data") && Catch::Contains("N=1 C=512 H=7 W=7"));

    // Bad usage: no layer, an unknown pass, a cache in a folder that does not exist.
    const auto none = run_cli(dir, {"find"});
    CHECK(none.code == 2);
    CHECK_THAT(none.err, Catch::Contains("--layer"));
    const auto pass = run_cli(dir, {"find", "--layer", "cv12", "--pass", "sideways"});
    CHECK(pass.code == 2);
    CHECK_THAT(pass.err, Catch::Contains("sideways"));
    const auto unknown = run_cli(dir, {"find", "--layer", "cv99"});
    CHECK(unknown.code == 2);
    CHECK_THAT(unknown.err, Catch::Contains("cv99"));
    const auto unwritable = run_cli(dir, {"find", "--layer", "cv12", "--batch", "1", "--pass", "forward", "--repeats",
                                          "1", "--find-cache", dir.file("no such folder") + "/cache.txt"});
    CHECK(unwritable.code == 2);
    CHECK_THAT(unwritable.err, Catch::Contains("does not exist or is not writable"));
}

TEST_CASE("cli: plan prints an H100's plan without a device, as text and JSON", "[cli]") {
    TempDir dir;
    // A described device needs no Vulkan: the tool must not even look for one.
    ::setenv("VK_DRIVER_FILES", "/nonexistent/icd.json", 1);
    auto r = run_cli(dir, {"plan", "--layer", "separable_dw_256", "--batch", "32", "--pass", "backward-filter",
                           "--layout", "nhwc", "--device-profile", "nvidia-h100", "--json"});
    ::unsetenv("VK_DRIVER_FILES");
    INFO(r.describe());
    REQUIRE(r.code == 0);
    for (const char* field : {"\"device\": \"NVIDIA H100 80GB HBM3\"", "\"compute_units\": 132", "\"algorithm\": \"depthwise\"",
                              "\"workspace_bytes\": ", "\"dispatches\": [", "\"workgroups\": ",
                              "\"invocations_per_workgroup\": ", "\"serial_macs_per_invocation\": ", "\"flops\": "})
        CHECK_THAT(r.out, Catch::Contains(field));
    r = run_cli(dir, {"plan", "--gemm", "49,512,4608", "--device-profile", "nvidia-h100"});
    INFO(r.describe());
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("splitk_reduce"));  // 32 tiles cannot fill 132 SMs: split along K
    // A problem by shape, as forward takes it, for a profile file of one's own.
    const std::string profile = dir.file("my device.json");
    std::ofstream(profile) << R"({"capabilities": {"device": {"properties": {"VkPhysicalDeviceProperties":
        {"deviceName": "My GPU", "deviceType": "VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU",
         "limits": {"maxPerStageDescriptorStorageBuffers": 16}}}}},
        "vkconv": {"compute_units": 40, "compute_units_source": "data sheet"}})";
    r = run_cli(dir, {"plan", "--input-shape", "8,16,20,20", "--filter-shape", "32,16,3,3", "--padding", "1",
                      "--pass", "forward", "--algo", "implicit-gemm", "--device-profile", profile});
    INFO(r.describe());
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("My GPU, 40 compute units (profile: data sheet)"));
    CHECK_THAT(r.out, Catch::Contains("implicit_gemm"));
    // Without the descriptor count, the profile's device has the specification's 4 storage buffers per
    // stage: implicit GEMM plans its 4-binding kernel.
    std::ofstream(profile) << R"({"capabilities": {"device": {"properties": {"VkPhysicalDeviceProperties":
        {"deviceName": "My GPU", "deviceType": "VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU"}}}}})";
    r = run_cli(dir, {"plan", "--input-shape", "8,16,20,20", "--filter-shape", "32,16,3,3", "--padding", "1",
                      "--pass", "forward", "--algo", "implicit-gemm", "--device-profile", profile});
    INFO(r.describe());
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("implicit_gemm_4_t"));
}

TEST_CASE("cli: plan refuses bad input with exit 2", "[cli]") {
    TempDir dir;
    const std::vector<std::pair<Args, std::string>> cases = {
        {{"plan", "--device-profile", "nvidia-h100"}, "exactly one of"},
        {{"plan", "--layer", "cv1", "--gemm", "1,2,3", "--device-profile", "nvidia-h100"}, "exactly one of"},
        {{"plan", "--layer", "no_such_layer", "--device-profile", "nvidia-h100"}, "no_such_layer"},
        {{"plan", "--layer", "cv1", "--device-profile", "no-such-gpu"}, "no-such-gpu"},
        {{"plan", "--gemm", "1,2", "--device-profile", "nvidia-h100"}, "--gemm"},
        {{"plan", "--gemm", "1,x,3", "--device-profile", "nvidia-h100"}, "--gemm"},
        {{"plan", "--input-shape", "1,3,8,8", "--device-profile", "nvidia-h100"}, "--filter-shape"},
        {{"plan", "--input-shape", "1,3,8,8", "--filter-shape", "4,2,3,3", "--device-profile", "nvidia-h100"}, "filter"},
        {{"plan", "--layer", "cv1", "--pass", "sideways"}, "--pass"},
        {{"plan", "--layer", "cv1", "--workspace-limit", "auto", "--device-profile", "nvidia-h100"},
         "--workspace-limit auto"},
    };
    for (const auto& [args, mention] : cases) {
        const auto r = run_cli(dir, args);
        INFO(r.describe());
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains(mention));
    }
    // An algorithm named that cannot run the problem: the pass's own refusal, as bad input naming the option.
    const auto r = run_cli(dir, {"plan", "--layer", "cv1", "--algo", "depthwise", "--device-profile", "nvidia-h100"});
    INFO(r.describe());
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains("--algo depthwise cannot run this problem"));
    CHECK_THAT(r.err, Catch::Contains("not depthwise"));
}

TEST_CASE("cli: tune checks and times the candidates and keeps the winners in the tuning file", "[cli][gpu]") {
    if (!vkt::shared_context()) return;
    TempDir dir;
    const std::string layers = dir.file("tiny layers.csv"), tuning = dir.file("winners.tuning"),
                      json = dir.file("tune.json");
    std::ofstream(layers) << "tiny,1,4,7,6,6,3,2,1,1,1,0,1,1,2,a grouped layer\n";
    const auto r = run_cli(dir, {"tune", "--layers", layers, "--pass", "forward", "--gemm", "33,17,300,2", "--repeat",
                                 "1", "--tuning-file", tuning, "--json", json});
    INFO(r.describe());
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("gemm 33x17x300x2"));
    CHECK_THAT(r.out, Catch::Contains("implicit-gemm forward"));
    CHECK_THAT(r.out, Catch::Contains("winners in " + tuning));
    std::stringstream text;
    text << std::ifstream(tuning).rdbuf();
    CHECK(text.str().rfind("vkconv-tuning 1\ndevice\t", 0) == 0);
    CHECK_THAT(text.str(), Catch::Contains("gemm 33 17 300 2\t"));
    CHECK_THAT(text.str(), Catch::Contains("implicit forward N=1 C=4 H=7 W=6 K=6"));
    std::stringstream rows;
    rows << std::ifstream(json).rdbuf();
    CHECK_THAT(rows.str(), Catch::Contains("\"candidates\": ["));
    CHECK_THAT(rows.str(), Catch::Contains("\"ok\": true"));
}

TEST_CASE("cli: tune refuses bad input with exit 2", "[cli]") {
    TempDir dir;
    const std::vector<std::pair<Args, std::string>> cases = {
        {{"tune", "--gemm", "1,2"}, "--gemm"},
        {{"tune", "--gemm", "0,2,3"}, "--gemm"},
        {{"tune", "--repeat", "0"}, "--repeat"},
        {{"tune", "--pass", "sideways"}, "--pass"},
        {{"tune", "--layer", "no_such_layer", "--tuning-file", dir.file("t.tuning")}, "no_such_layer"},
    };
    for (const auto& [args, mention] : cases) {
        const auto r = run_cli(dir, args);
        INFO(r.describe());
        CHECK(r.code == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains(mention));
    }
}

TEST_CASE("cli: forward and backward-data read and write .npy tensors larger than the device's largest buffer",
          "[cli][gpu][paging]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    // Buffers of 64 KiB (VKCONV_DEVICE_LIMITS): x, dx, y and dy span two or more each.
    const std::string profile = vkt::small_buffer_profile(dir, 65536);
    const vkt::ScopedEnv limits("VKCONV_DEVICE_LIMITS", profile.c_str());
    const vkconv::ConvProblem p = vkt::problem().batch(7).channels(3).image(37, 37).filters(5).kernel(3, 3).pad(1);
    REQUIRE(uint64_t(p.input_elements()) * 4 > 65536);
    const auto operands = write_operands(dir, p, 91);
    for (const char* algorithm : {"im2col", "direct"}) {
        auto r = run_cli(dir, with(forward_args(dir, p), {"--padding", "1", "--algo", algorithm}));
        check_success(r);
        REQUIRE(r.code == 0);
        check_output(dir, p, operands, std::string("forward in pages, ") + algorithm);
    }
    const auto dy = vkt::random_values(p.output_elements(), 92);
    vkconv::write_npy(dir.file("dy.npy"), p.output_shape(), dy);
    auto r = run_cli(dir, {"backward-data", "--grad-output", dir.file("dy.npy"), "--weight", dir.file("w.npy"),
                           "--input-shape", shape_arg(p.input_shape()), "--output", dir.file("dx.npy"), "--padding",
                           "1"});
    check_success(r);
    REQUIRE(r.code == 0);
    const auto dx = vkconv::read_npy(dir.file("dx.npy"));
    REQUIRE(dx.shape == p.input_shape());
    vkt::check_close(dx.data, vkconv::reference::backward_data(p, dy, operands.w),
                     vkconv::reference::backward_data(p, absolute(dy), absolute(operands.w)),
                     p.filters_per_group() * p.R * p.S, "backward-data in pages");
}
