// `vkconv tune`: the candidates checked and timed, the winners kept in the tuning file and the JSON, and bad
// input refused with exit 2.
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_support.hpp"

using namespace vkt::cli;

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
