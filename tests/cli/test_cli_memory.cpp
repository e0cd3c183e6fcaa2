// `vkconv memory`: every algorithm's workspace and peak as a table, JSON and SVG, equal to the library's own
// workspace queries, for built-in layers and a --layers table with pads that differ between the sides, and in
// 16-bit types beside f32 (--dtype).
#include <string>

#include <nlohmann/json.hpp>

#include "cli_test_support.hpp"

using namespace vkt::cli;

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

TEST_CASE("cli: memory --dtype reports each type and the 16-bit peaks over f32's, exact to the byte",
          "[cli][gpu][types]") {
    VKT_REQUIRE_CONTEXT(context);
    TempDir dir;
    vkt::write_bytes(dir.file("layers.csv"), "small,1,8,16,16,32,3,3,1,1,1,1,1,1,1,test\n");
    // Repeated and as a list: f16 named twice is reported once, after f32.
    const auto r = run_cli(dir, {"memory", "--layers", dir.file("layers.csv"), "--batch", "2", "--dtype", "f16,f32",
                                 "--dtype", "f16", "--json", dir.file("memory.json")});
    check_success(r);
    INFO(r.describe());
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("dtype") && Catch::Contains("f16/f32") && Catch::Contains("0.500x"));
    const auto json = nlohmann::json::parse(vkt::read_bytes(dir.file("memory.json")));
    CHECK(json["data_types"] == nlohmann::json({"f32", "f16"}));
    // Direct runs every pass on f16 tensors: each peak is the pass's own tensors as the pool holds them plus its
    // workspace, the figures the pass itself reports, and half of f32's here (no workspace, and every tensor a
    // multiple of 512 bytes in f16, so the pool's alignment rounds neither type).
    vkconv::ConvProblem p = vkt::problem().batch(2).channels(8).image(16, 16).filters(32).kernel(3, 3).pad(1);
    p.data_type = vkconv::DataType::F16;
    vkconv::Tensor x(*context, p.input_shape(), p.data_type), w(*context, p.filter_shape(), p.data_type);
    vkconv::Tensor y(*context, p.output_shape(), p.data_type);
    const vkconv::RunStats forward = vkconv::forward(*context, p, x, w, nullptr, y, vkconv::Algorithm::Direct);
    const vkconv::RunStats data = vkconv::backward_data(*context, p, y, w, x, vkconv::Algorithm::Direct);
    const vkconv::RunStats filter = vkconv::backward_filter(*context, p, x, y, w, nullptr, vkconv::Algorithm::Direct);
    size_t f16_rows = 0;
    for (const auto& row : json["rows"]) {
        if (row["data_type"] != "f16" || row["algorithm"] != "direct") continue;
        ++f16_rows;
        CHECK(row["forward_peak_bytes"] == forward.operand_bytes + forward.workspace_bytes);
        CHECK(row["backward_data_peak_bytes"] == data.operand_bytes + data.workspace_bytes);
        CHECK(row["backward_filter_peak_bytes"] == filter.operand_bytes + filter.workspace_bytes);
        for (const char* key : {"forward_peak_over_f32", "backward_data_peak_over_f32", "backward_filter_peak_over_f32",
                                "layer_backward_peak_over_f32"})
            CHECK(row[key].get<double>() == Approx(0.5));
    }
    CHECK(f16_rows == 1);

    const auto bad = run_cli(dir, {"memory", "--dtype", "f64"});
    CHECK(bad.code == 2);
    CHECK_THAT(bad.err, Catch::Contains("--dtype") && Catch::Contains("'f64'"));
}
