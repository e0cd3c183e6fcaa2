// `vkconv backward-data` and `vkconv backward-filter`: the gradients they write against the CPU reference
// (NCHW and NHWC, strides, groups, dilations, MEC), and bad input refused with exit 2 and nothing written.
#include <string>
#include <utility>
#include <vector>

#include "cli_test_support.hpp"

using namespace vkt::cli;

using vkt::absolute;

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

TEST_CASE("cli: backward-filter --fp32-grads writes float32 dw and db from float16 files", "[cli][gpu][types]") {
    VKT_REQUIRE_CONTEXT(context);
    vkconv::ConvProblem p = vkt::problem().batch(2).channels(3).image(7, 6).filters(4).kernel(3, 3).pad(1);
    TempDir dir;
    vkconv::write_npy(dir.file("x.npy"), p.input_shape(), vkt::random_values(p.input_elements(), 40),
                      vkconv::DataType::F16);
    vkconv::write_npy(dir.file("dy.npy"), p.output_shape(), vkt::random_values(p.output_elements(), 41),
                      vkconv::DataType::F16);
    const auto x = vkconv::read_npy(dir.file("x.npy")).data, dy = vkconv::read_npy(dir.file("dy.npy")).data;
    const auto r = run_cli(dir, {"backward-filter", "--input", dir.file("x.npy"), "--grad-output", dir.file("dy.npy"),
                                 "--weight-shape", shape_arg(p.filter_shape()), "--output", dir.file("dw.npy"),
                                 "--grad-bias", dir.file("db.npy"), "--padding", "1", "--fp32-grads"});
    check_success(r);
    REQUIRE(r.code == 0);
    const auto dw = vkconv::read_npy(dir.file("dw.npy")), db = vkconv::read_npy(dir.file("db.npy"));
    CHECK(dw.type == vkconv::DataType::F32);
    CHECK(db.type == vkconv::DataType::F32);
    // The fp32 sums as they are: fp32's bound on the values the f16 files hold.
    const int64_t reduction = p.N * p.P() * p.Q();
    p.has_bias = true;
    vkt::check_close(dw.data, vkconv::reference::backward_filter(p, x, dy),
                     vkconv::reference::backward_filter(p, absolute(x), absolute(dy)), reduction, "fp32 dw");
    vkt::check_close(db.data, vkconv::reference::backward_bias(p, dy), vkconv::reference::backward_bias(p, absolute(dy)),
                     reduction, "fp32 db");
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
