// The vkconv tool's command line as a whole: --help of the tool and of each subcommand (exit 0, usage on
// stdout), and bad usage of any subcommand (exit 2, a message on stderr, nothing written). Every child runs
// with VKCONV_VALIDATION=1 (cli_test_support.hpp).
#include <string>
#include <utility>
#include <vector>

#include "cli_test_support.hpp"

using namespace vkt::cli;

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
