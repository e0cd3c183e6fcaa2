// Autotuning (vkconv/plan.hpp): every GEMM and implicit-GEMM configuration is checked before it is timed,
// winners are kept in the tuning file and read back by the next context, a stored choice is the one that
// runs, and a corrupt or foreign file is ignored with a warning.
#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "conv/implicit/implicit.hpp"
#include "conv_cases.hpp"
#include "gemm/gemm_config.hpp"
#include "gpu.hpp"
#include "planted_fault.hpp"
#include "test_util.hpp"

namespace {

// A context on tuning file `file` whose warnings are collected in `warnings` (validation errors still count).
std::unique_ptr<vkconv::Context> context_on(const std::filesystem::path& file, std::vector<std::string>& warnings) {
    auto options = vkt::test_options();
    const auto forward = options.on_message;
    options.tuning_path = file.string();
    options.on_message = [&warnings, forward](vkconv::MessageSeverity severity, std::string_view text) {
        if (severity == vkconv::MessageSeverity::Warning) warnings.emplace_back(text);
        forward(severity, text);
    };
    return vkt::fresh_context(options);
}

std::string read_text(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void write_text(const std::filesystem::path& file, const std::string& text) {
    std::ofstream(file, std::ios::trunc) << text;
}

bool mentions(const std::vector<std::string>& warnings, const std::string& text) {
    for (const auto& w : warnings)
        if (w.find(text) != std::string::npos) return true;
    return false;
}

// The configuration the public GEMM runs on a batches x M x K by K x N product.
std::string gemm_runs(vkconv::Context& context, const vkconv::GemmShape& s) {
    const auto av = vkt::random_values(size_t(s.batches) * s.M * s.K, 1), bv = vkt::random_values(size_t(s.batches) * s.K * s.N, 2);
    auto a = vkconv::Tensor::from_host(context, {int64_t(s.batches), int64_t(s.M), int64_t(s.K)}, av);
    auto b = vkconv::Tensor::from_host(context, {int64_t(s.batches), int64_t(s.K), int64_t(s.N)}, bv);
    vkconv::Tensor c(context, {int64_t(s.batches), int64_t(s.M), int64_t(s.N)});
    return vkconv::gemm(context, a, b, c).variant;
}

// Checks a tune result whose candidates are `configs` in order: those that run `broken` (a shader) are refused
// as outside the bound, every other one passes, and the winner is one of those. Where the first candidate runs
// another shader (lavapipe and SwiftShader, but for implicit GEMM's forward on SwiftShader, whose candidates all
// run one kernel), a broken one runs after a correct one, whose output it would find in place had tune not
// poisoned it.
void check_broken_refused(const vkconv::TuneResult& result, const std::vector<const vkconv::detail::GemmConfig*>& configs,
                          const std::function<std::string(const vkconv::detail::GemmConfig&)>& shader_of,
                          const std::string& broken) {
    REQUIRE(result.candidates.size() == configs.size());
    if (std::all_of(configs.begin(), configs.end(), [&](auto* c) { return shader_of(*c) == broken; })) {
        for (const auto& candidate : result.candidates) CHECK_FALSE(candidate.ok);
        CHECK(result.best.empty());
        return;
    }
    for (size_t i = 0; i < configs.size(); ++i) {
        const auto& candidate = result.candidates[i];
        INFO(candidate.configuration << " (" << shader_of(*configs[i]) << "): " << candidate.problem);
        CHECK(candidate.configuration == configs[i]->name);
        const bool hit = shader_of(*configs[i]) == broken;
        CHECK(candidate.ok == !hit);
        if (hit) CHECK_THAT(candidate.problem, Catch::Contains("outside the fp32 bound"));
    }
    const auto best = std::find_if(configs.begin(), configs.end(), [&](auto* c) { return c->name == result.best; });
    REQUIRE(best != configs.end());
    CHECK(shader_of(**best) != broken);
}

using Kind = vkt::PlantedFault::Kind;

// The last GEMM configuration's shader goes wrong, repeatably: scrambled (the first half of what each dispatch
// writes copied over its last half), or skipped (C keeps what was there: NaN, if tune poisons it, else the
// previous configuration's correct product). tune_gemm must refuse exactly the configurations that run it.
void check_gemm_faults_refused(vkconv::Context& context, const vkconv::GemmShape& shape) {
    std::vector<const vkconv::detail::GemmConfig*> configs;
    for (const auto& c : vkconv::detail::gemm_configs(vkconv::detail::impl_of(context)).all) configs.push_back(&c);
    const auto shader_of = [](const vkconv::detail::GemmConfig& c) { return c.shader(); };
    // The last configuration's shader; another one's where the last one runs the first one's shader too.
    std::string broken = configs.back()->shader();
    for (auto it = configs.rbegin(); it != configs.rend() && broken == configs.front()->shader(); ++it)
        broken = (*it)->shader();
    for (Kind kind : {Kind::Scramble, Kind::Skip}) {
        INFO("gemm, " << broken << " " << vkt::name_of(kind));
        const vkt::PlantedFault fault(context, broken, kind);
        check_broken_refused(vkconv::tune_gemm(context, shape, 1), configs, shader_of, broken);
    }
}

// The same for implicit GEMM's candidates for `pass` of `p`.
void check_implicit_faults_refused(vkconv::Context& context, const vkconv::ConvProblem& p, vkconv::Pass pass) {
    auto& impl = vkconv::detail::impl_of(context);
    std::vector<const vkconv::detail::GemmConfig*> candidates;
    for (const auto& c : vkconv::detail::gemm_configs(impl).all)
        if (vkconv::detail::implicit_candidate(impl, pass, c, p)) candidates.push_back(&c);
    REQUIRE_FALSE(candidates.empty());
    const auto shader_of = [&](const vkconv::detail::GemmConfig& c) { return vkconv::detail::implicit_shader(impl, c); };
    // The last candidate's shader; another candidate's where the last one runs the first one's shader too.
    std::string broken = shader_of(*candidates.back());
    for (auto it = candidates.rbegin(); it != candidates.rend() && broken == shader_of(*candidates.front()); ++it)
        broken = shader_of(**it);
    for (Kind kind : {Kind::Scramble, Kind::Skip}) {
        INFO("implicit-gemm " << vkconv::to_string(pass) << ", " << broken << " " << vkt::name_of(kind));
        const vkt::PlantedFault fault(context, broken, kind);
        check_broken_refused(vkconv::tune_implicit_gemm(context, p, pass, 1), candidates, shader_of, broken);
    }
}

}  // namespace

TEST_CASE("tune checks and times every GEMM configuration, refuses a wrong one, and the stored winner is the one "
          "that runs",
          "[tune][gpu]") {
    vkt::TempDir dir("vkconv tuning");
    const auto file = dir.path / "winners.tuning";
    std::vector<std::string> warnings;
    const vkconv::GemmShape shape{40, 72, 96, 2};
    std::string stored;
    {
        auto context = context_on(file, warnings);
        if (!context) return;
        CHECK(vkconv::tuning_path(*context) == file.string());
        CHECK(vkconv::tuned_entries(*context) == 0);
        const std::string own_choice = gemm_runs(*context, shape);
        const auto result = vkconv::tune_gemm(*context, shape, 1);
        // Every configuration of the device ran and passed its check (they are all correct).
        CHECK(result.candidates.size() == vkconv::gemm_configurations(*context).size());
        for (const auto& c : result.candidates) {
            INFO(c.configuration << ": " << c.problem);
            CHECK(c.ok);
            CHECK(c.gpu_ms > 0);
        }
        CHECK(result.before == own_choice);
        REQUIRE_FALSE(result.best.empty());
        CHECK(gemm_runs(*context, shape) == result.best);
        vkconv::save_tuning(*context);
        stored = result.best;
        // After the file is saved (the winners these runs store are not kept).
        check_gemm_faults_refused(*context, shape);
    }
    // The next context reads the winner back; then a stored choice other than the GEMM's own runs.
    const std::string text = read_text(file);
    REQUIRE(text.find("gemm 40 72 96 2\t" + stored) != std::string::npos);
    std::string other;
    {
        auto context = context_on(file, warnings);
        REQUIRE(context);
        CHECK(vkconv::tuned_entries(*context) == 1);
        CHECK(gemm_runs(*context, shape) == stored);
        for (const auto& name : vkconv::gemm_configurations(*context))
            if (name != stored && name.find("ssbo") != std::string::npos) other = name;
    }
    REQUIRE_FALSE(other.empty());
    std::string edited = text;
    edited.replace(edited.find("\t" + stored), stored.size() + 1, "\t" + other);
    write_text(file, edited);
    {
        auto context = context_on(file, warnings);
        REQUIRE(context);
        CHECK(gemm_runs(*context, shape) == other);
        CHECK(gemm_runs(*context, {40, 72, 97, 2}) != "");  // another shape: the GEMM's own choice
    }
    CHECK(warnings.empty());
}

TEST_CASE("a corrupt, foreign or outdated tuning file is ignored with a warning", "[tune][gpu]") {
    vkt::TempDir dir("vkconv tuning");
    const auto file = dir.path / "winners.tuning";
    std::vector<std::string> warnings;
    std::string good;
    const vkconv::GemmShape shape{24, 8, 64, 1};
    std::string own_choice;
    {
        auto context = context_on(file, warnings);
        if (!context) return;
        own_choice = gemm_runs(*context, shape);
        vkconv::tune_gemm(*context, shape, 1);
        vkconv::save_tuning(*context);
        good = read_text(file);
    }
    const std::string device_line = good.substr(good.find('\n') + 1, good.find('\n', good.find('\n') + 1) - good.find('\n') - 1);
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"garbage\x01\x02", "does not start with"},
        {"vkconv-tuning 2\n" + good.substr(good.find('\n') + 1), "does not start with"},
        {"vkconv-tuning 1\ndevice\tSome Other GPU [10de:2330 driver 1 range 1 texels 1] 00\n", "another device"},
        {"vkconv-tuning 1\n" + device_line + "\ngemm 24 8 64 1 no tab here\n", "line 3"},
        {"vkconv-tuning 1\n", "names no device"},
    };
    for (const auto& [text, why] : cases) {
        INFO(why);
        warnings.clear();
        write_text(file, text);
        auto context = context_on(file, warnings);
        REQUIRE(context);
        CHECK(mentions(warnings, "tuning file " + file.string() + " ignored: "));
        CHECK(mentions(warnings, why));
        CHECK(vkconv::tuned_entries(*context) == 0);
        CHECK(gemm_runs(*context, shape) == own_choice);
        // Tuning and saving replace the file with a good one.
        vkconv::tune_gemm(*context, shape, 1);
        vkconv::save_tuning(*context);
        CHECK(read_text(file).find("gemm 24 8 64 1\t") != std::string::npos);
    }
}

TEST_CASE("tune checks implicit GEMM's configurations on every pass, refuses a wrong one, and keeps the winner",
          "[tune][gpu]") {
    vkt::TempDir dir("vkconv tuning");
    const auto file = dir.path / "winners.tuning";
    std::vector<std::string> warnings;
    auto context = context_on(file, warnings);
    if (!context) return;
    const vkconv::ConvProblem p =
        vkt::problem().batch(2).channels(6).image(9, 7).filters(10).kernel(3, 2).pad(1).stride(2, 1).groups(2);
    for (vkconv::Layout layout : {vkconv::Layout::NCHW, vkconv::Layout::NHWC})
        for (vkconv::Pass pass : {vkconv::Pass::Forward, vkconv::Pass::BackwardData, vkconv::Pass::BackwardFilter}) {
            vkconv::ConvProblem q = p;
            q.layout = layout;
            INFO(vkconv::to_string(pass) << " " << q.str());
            const auto result = vkconv::tune_implicit_gemm(*context, q, pass, 1);
            REQUIRE_FALSE(result.candidates.empty());
            for (const auto& c : result.candidates) {
                INFO(c.configuration << ": " << c.problem);
                CHECK(c.ok);
            }
            CHECK_FALSE(result.best.empty());
            // The pass with the winner stored still matches the reference.
            if (pass == vkconv::Pass::Forward) vkt::check_forward(*context, q, vkconv::Algorithm::ImplicitGemm, 7);
        }
    CHECK(vkconv::tuned_entries(*context) == 6);
    // A problem with a bias keeps its winner under its own name: tuned again, the winner is what ran before.
    vkconv::ConvProblem biased = p;
    biased.has_bias = true;
    const auto first = vkconv::tune_implicit_gemm(*context, biased, vkconv::Pass::BackwardFilter, 1);
    const auto again = vkconv::tune_implicit_gemm(*context, biased, vkconv::Pass::BackwardFilter, 1);
    CHECK(again.before == first.best);
    CHECK(vkconv::tuned_entries(*context) == 7);
    vkconv::save_tuning(*context);
    CHECK(read_text(file).find("implicit backward-filter ") != std::string::npos);
    for (vkconv::Pass pass : {vkconv::Pass::Forward, vkconv::Pass::BackwardData, vkconv::Pass::BackwardFilter})
        check_implicit_faults_refused(*context, p, pass);
}

TEST_CASE("tune refuses bad arguments, and saving needs a tuning file", "[tune][gpu]") {
    auto* context = vkt::shared_context();
    if (!context) return;
    CHECK_THROWS_AS(vkconv::tune_gemm(*context, {0, 4, 4, 1}), vkconv::Error);
    CHECK_THROWS_AS(vkconv::tune_gemm(*context, {4, 4, 4, 1}, 0), vkconv::Error);
    const vkconv::ConvProblem p = vkt::problem().batch(1).channels(2).image(5, 5).filters(2).kernel(3, 3);
    CHECK_THROWS_AS(vkconv::tune_implicit_gemm(*context, p, vkconv::Pass::BackwardBias), vkconv::Error);
    vkconv::ConvProblem bad = p;
    bad.stride_h = 0;
    CHECK_THROWS_AS(vkconv::tune_implicit_gemm(*context, bad, vkconv::Pass::Forward), vkconv::Error);
    if (vkconv::tuning_path(*context).empty()) {
        try {
            vkconv::save_tuning(*context);
            FAIL("saved without a file");
        } catch (const vkconv::Error& e) {
            CHECK(e.category() == vkconv::ErrorCategory::InvalidArgument);
            CHECK_THAT(e.what(), Catch::Contains("no tuning file"));
        }
    }
}
