// `vkconv find`: a layer's algorithms measured and verified, the choice kept in --find-cache, and bad usage
// refused with exit 2.
#include <string>

#include "cli_test_support.hpp"

using namespace vkt::cli;

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
