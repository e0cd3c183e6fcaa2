// `vkconv bench`: per-layer timings in 16-bit types beside f32 (--dtype), each result checked against its type's
// bound before it is timed, with the 16-bit time and peak over f32's; an algorithm that does not take the type
// yet is reported as unsupported, naming why, and the run goes on.
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_support.hpp"

using namespace vkt::cli;

namespace {

// The JSON rows of one kind ("forward", "backward-data", ...), algorithm and type.
std::vector<nlohmann::json> rows_of(const nlohmann::json& doc, const std::string& kind, const std::string& algorithm,
                                    const std::string& type) {
    std::vector<nlohmann::json> rows;
    for (const auto& row : doc["results"])
        if (row["kind"] == kind && row["algorithm"] == algorithm && row["data_type"] == type) rows.push_back(row);
    return rows;
}

}  // namespace

TEST_CASE("cli: bench --dtype times each layer in bf16 beside f32, forward and backward", "[cli][gpu][types]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    // A small depthwise layer (7 MFLOP), one timed run: direct runs it in every type; depthwise runs it in f32,
    // and in bf16 once the library takes bf16 there (until then a line says why not).
    const auto r =
        run_cli(dir, {"bench", "--layers-only", "--layer", "mobilenet_dw_112", "--repeat", "1", "--algo", "direct",
                      "--algo", "depthwise", "--dtype", "bf16,f32", "--backward", "--json", dir.file("bench.json")});
    check_success(r);
    INFO(r.describe());
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("t/f32") && Catch::Contains("bf16"));
    const auto doc = nlohmann::json::parse(vkt::read_bytes(dir.file("bench.json")));
    for (const char* kind : {"forward", "backward-data", "backward-filter"}) {
        INFO(kind);
        const auto f32 = rows_of(doc, kind, "direct", "f32"), bf16 = rows_of(doc, kind, "direct", "bf16");
        REQUIRE(f32.size() == 1);
        REQUIRE(bf16.size() == 1);
        CHECK(bf16[0]["problem"]["data_type"] == "bf16");
        CHECK(bf16[0]["check_error_over_bound"].get<double>() <= 1.0);
        CHECK(bf16[0]["gpu_ms_over_f32"].get<double>() ==
              Approx(bf16[0]["gpu_ms"].get<double>() / f32[0]["gpu_ms"].get<double>()).epsilon(1e-4));
        // Direct has no workspace: the peak is the tensors, half as large in bf16 (the pool's alignment aside).
        CHECK(bf16[0]["peak_bytes_over_f32"].get<double>() == Approx(0.5).epsilon(0.01));
        CHECK_FALSE(f32[0].contains("gpu_ms_over_f32"));
        const bool depthwise_bf16 = !rows_of(doc, kind, "depthwise", "bf16").empty();
        CHECK((depthwise_bf16 ||
               r.out.find("depthwise does not run " + std::string(kind) + " on bf16") != std::string::npos));
    }

    const auto bad = run_cli(dir, {"bench", "--dtype", "f32,f64"});
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--dtype") && Catch::Contains("'f64'"));
}
