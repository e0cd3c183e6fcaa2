// `vkconv forward`: round trips against the CPU reference (layouts, strides, pads, dilations, groups, every
// algorithm, --auto-pad), the epilogue (--activation, --alpha, --beta with --residual), --stats with exact
// memory, --workspace-limit, tensors larger than the device's largest buffer (and backward-data's), and every
// bad-input case refused with exit 2, no file written and an existing output untouched.
#include <algorithm>
#include <bit>
#include <tuple>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli_test_support.hpp"

using namespace vkt::cli;

namespace {

using vkt::absolute;

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
    cases.push_back({"--algo mec --variant a",
                     nhwc,
                     {"--layout", "nhwc", "--padding", "1", "--algo", "mec", "--variant", "a"}});
    cases.push_back({"--algo mec --variant b", plain, {"--padding", "1", "--algo", "mec", "--variant", "B"}});
    cases.push_back({"--algo winograd --variant F(2x2,3x3)",
                     plain,
                     {"--padding", "1", "--algo", "winograd", "--variant", "F(2x2,3x3)"}});
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

// Operand files that cannot be read (missing, wrong dtype or byte order, truncated) or do not fit together.
std::vector<BadCase> file_bad_cases() {
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
    };
}

// Options out of range, unparsable or refused together, and an output in a missing folder.
std::vector<BadCase> option_bad_cases() {
    return {
        {"--stride a,b", {"--stride", "a,b"}, extra({"--stride", "a,b"})},
        {"--dilation past int64", {"--dilation", "99999999999999999999"}, extra({"--dilation", "1,99999999999999999999"})},
        {"--stride 0", {"--stride expects", "at least 1", "'0'"}, extra({"--stride", "0"})},
        {"--padding -1", {"--padding expects", "at least 0", "'-1'"}, extra({"--padding", "-1"})},
        {"--padding with 3 values", {"--padding", "1, 2 or 4 values", "'1,2,3'"}, extra({"--padding", "1,2,3"})},
        {"--padding end pad -1", {"--padding expects", "'0,0,0,-1'"}, extra({"--padding", "0,0,0,-1"})},
        {"--auto-pad with --padding", {"--auto-pad", "--padding", "cannot be combined"},
         extra({"--auto-pad", "same-upper", "--padding", "1"})},
        {"unknown --auto-pad", {"--auto-pad", "same"}, extra({"--auto-pad", "same"})},
        {"unknown --algo", {"algorithm", "fft"}, extra({"--algo", "fft"})},
        {"unknown --variant", {"variant", "'c'", "forms: A (mec), B (mec)"}, extra({"--variant", "c"})},
        {"unknown --dtype", {"--dtype", "f8"}, extra({"--dtype", "f8"})},
        {"--variant of another algorithm", {"variant", "'A'", "winograd"}, extra({"--algo", "winograd", "--variant", "A"})},
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

std::vector<BadCase> bad_cases() {
    auto cases = file_bad_cases();
    const auto options = option_bad_cases();
    cases.insert(cases.end(), options.begin(), options.end());
    return cases;
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

TEST_CASE("cli: forward runs float16 files in f16 and --dtype bf16, within the 16-bit bound", "[cli][gpu][types]") {
    VKT_REQUIRE_CONTEXT(context);
    vkconv::ConvProblem p = vkt::problem().batch(2).channels(3).image(7, 6).filters(4).kernel(3, 3).pad(1).bias();
    for (vkconv::DataType type : {vkconv::DataType::F16, vkconv::DataType::BF16}) {
        INFO(vkconv::to_string(type));
        TempDir dir;
        Operands o = write_operands(dir, p, 90);
        Args args = with(forward_args(dir, p), {"--padding", "1"});
        if (type == vkconv::DataType::F16) {
            // float16 files: the problem runs in f16 without --dtype, and y is written as float16.
            for (auto [name, shape, values] : {std::tuple{"x.npy", p.input_shape(), &o.x},
                                               {"w.npy", p.filter_shape(), &o.w}, {"b.npy", p.bias_shape(), &o.b}}) {
                vkconv::write_npy(dir.file(name), shape, *values, vkconv::DataType::F16);
                *values = vkconv::read_npy(dir.file(name)).data;  // the values the pass reads
            }
        } else {
            args.insert(args.end(), {"--dtype", "bf16", "--stats"});
            for (auto* values : {&o.x, &o.w, &o.b})  // narrowed on upload, as the tensors hold them
                for (float& v : *values) v = std::bit_cast<float>((std::bit_cast<uint32_t>(v) + 0x7fffu +
                                                                  ((std::bit_cast<uint32_t>(v) >> 16) & 1u)) &
                                                                 0xffff0000u);
        }
        const auto r = run_cli(dir, args);
        check_success(r);
        INFO(r.describe());
        REQUIRE(r.code == 0);
        if (type == vkconv::DataType::BF16) CHECK_THAT(r.out, Catch::Contains("\"data_type\": \"bf16\""));
        const auto y = vkconv::read_npy(dir.file("y.npy"));
        REQUIRE(y.shape == p.output_shape());
        CHECK(y.type == (type == vkconv::DataType::F16 ? vkconv::DataType::F16 : vkconv::DataType::F32));
        const auto exact = vkconv::reference::forward(p, o.x, o.w, o.b);
        const auto magnitude = vkconv::reference::forward(p, absolute(o.x), absolute(o.w), absolute(o.b));
        const double ut = std::ldexp(1.0, type == vkconv::DataType::F16 ? -11 : -8);
        const double eta = type == vkconv::DataType::F16 ? std::ldexp(1.0, -25) : 0.0;
        for (size_t i = 0; i < exact.size(); ++i) {
            const double e = double(p.channels_per_group() * p.R * p.S + 3) * std::ldexp(1.0, -24) * magnitude[i];
            CHECK(std::fabs(y.data[i] - exact[i]) <= (1 + ut) * e + ut * std::fabs(exact[i]) + eta);
            if (type == vkconv::DataType::BF16) CHECK((std::bit_cast<uint32_t>(y.data[i]) & 0xffffu) == 0);
        }
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
    check_refused({"--algo depthwise on a dense problem", {"--algo depthwise cannot run this problem", "one input channel per group"},
                   extra({"--algo", "depthwise"})});
    check_refused({"--device out of range", {"device index 99"}, extra({"--device", "99"})});
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
