// The algorithm table as the one list of algorithms: names, parsing, applicability, the planner's refusal of
// an algorithm that does not apply, and find measuring exactly the algorithms that apply.
#include <set>
#include <string>

#include "conv_cases.hpp"
#include "gpu.hpp"
#include "test_util.hpp"

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Pass;

TEST_CASE("every algorithm of the table has one name, which parses back to it", "[algorithms]") {
    const auto algorithms = vkconv::all_algorithms();
    REQUIRE(!algorithms.empty());
    std::set<std::string> names;
    for (Algorithm algorithm : algorithms) {
        const std::string name = vkconv::to_string(algorithm);
        INFO(name);
        CHECK(algorithm != Algorithm::Auto);
        CHECK(name != "unknown");
        CHECK(names.insert(name).second);
        CHECK(vkconv::parse_algorithm(name) == algorithm);
        std::string upper = name;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        CHECK(vkconv::parse_algorithm(upper) == algorithm);
        CHECK(std::string(vkconv::algorithm_summary(algorithm)).size() > 10);
    }
    CHECK(vkconv::parse_algorithm("auto") == Algorithm::Auto);
    // An unknown name is refused with every name the table has.
    try {
        vkconv::parse_algorithm("winograd-ish");
        FAIL("an unknown algorithm name was accepted");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == vkconv::ErrorCategory::InvalidArgument);
        for (const std::string& name : names) CHECK_THAT(e.what(), Catch::Contains(name));
    }
}

TEST_CASE("an algorithm applies to the shapes its row says, and the planner refuses the others", "[algorithms][gpu]") {
    ConvProblem dense;
    dense.N = 1, dense.C = 4, dense.H = 7, dense.W = 6, dense.K = 6, dense.R = dense.S = 3, dense.pad_h = dense.pad_w = 1;
    ConvProblem depthwise = dense;
    depthwise.groups = 4, depthwise.K = 8;
    for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter}) {
        CHECK(vkconv::algorithm_applies(Algorithm::Depthwise, depthwise, pass));
        CHECK_FALSE(vkconv::algorithm_applies(Algorithm::Depthwise, dense, pass));
        CHECK(vkconv::algorithm_applies(Algorithm::Auto, dense, pass));
        for (Algorithm a : {Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec, Algorithm::ImplicitGemm})
            CHECK(vkconv::algorithm_applies(a, dense, pass));
    }
    VKT_REQUIRE_CONTEXT(context);
    try {
        vkconv::forward_workspace_bytes(*context, dense, Algorithm::Depthwise);
        FAIL("depthwise was planned for a dense problem");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == vkconv::ErrorCategory::Unsupported);
        CHECK_THAT(e.what(), Catch::Contains("depthwise") && Catch::Contains("one input channel per group"));
    }
}

TEST_CASE("the tests' algorithm lists are the table's", "[algorithms]") {
    for (const auto& [name, problem] : vkt::odd_problems()) {
        INFO(name << ": " << problem.str());
        std::set<Algorithm> expected;
        for (Algorithm a : vkconv::all_algorithms())
            if (vkconv::algorithm_applies(a, problem, Pass::Forward) &&
                vkconv::algorithm_applies(a, problem, Pass::BackwardData) &&
                vkconv::algorithm_applies(a, problem, Pass::BackwardFilter))
                expected.insert(a);
        const auto listed = vkt::algorithms_for(problem);
        CHECK(std::set<Algorithm>(listed.begin(), listed.end()) == expected);
        CHECK(listed.size() == expected.size());
    }
}
