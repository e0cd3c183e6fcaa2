// `vkconv devices`: every device listed, as text and --json, with the default one marked as a plain Context
// picks it; and `vkconv --version`.
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_support.hpp"

using namespace vkt::cli;

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
