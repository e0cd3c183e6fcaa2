// `vkconv demo`: built-in and custom --layers tables run and checked against the CPU reference, an epilogue
// with a random residual, a summary that claims only the layers it checked, and bad layers or layer files
// refused with exit 2.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_support.hpp"

using namespace vkt::cli;

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
