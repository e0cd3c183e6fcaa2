// vkconv::Algorithm's names and summaries, from the table's rows (vkconv/algorithm.hpp).
#include <cctype>
#include <iterator>
#include <string>

#include "vkconv/algorithm.hpp"
#include "vkconv/error.hpp"

namespace vkconv {
namespace {

struct AlgorithmName {
    Algorithm algorithm;
    const char* name;
    const char* summary;
};

#define VKCONV_NAME_ROW(enumerator, name, entry, summary) AlgorithmName{Algorithm::enumerator, name, summary},
constexpr AlgorithmName kNames[] = {VKCONV_ALGORITHMS(VKCONV_NAME_ROW)};
#undef VKCONV_NAME_ROW

#define VKCONV_ENUMERATOR(enumerator, name, entry, summary) Algorithm::enumerator,
constexpr Algorithm kAlgorithms[] = {VKCONV_ALGORITHMS(VKCONV_ENUMERATOR)};
#undef VKCONV_ENUMERATOR

const AlgorithmName* row_of(Algorithm algorithm) noexcept {
    for (const AlgorithmName& row : kNames)
        if (row.algorithm == algorithm) return &row;
    return nullptr;
}

}  // namespace

const char* to_string(Algorithm algorithm) noexcept {
    if (algorithm == Algorithm::Auto) return "auto";
    const AlgorithmName* row = row_of(algorithm);
    return row ? row->name : "unknown";
}

const char* algorithm_summary(Algorithm algorithm) noexcept {
    if (algorithm == Algorithm::Auto) return "chooses one of the others (measured or by the heuristic)";
    const AlgorithmName* row = row_of(algorithm);
    return row ? row->summary : "unknown";
}

std::span<const Algorithm> all_algorithms() noexcept { return kAlgorithms; }

Algorithm parse_algorithm(std::string_view text) {
    std::string name(text);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == "auto") return Algorithm::Auto;
    std::string expected = "auto";
    for (const AlgorithmName& row : kNames) {
        if (name == row.name) return row.algorithm;
        expected += std::string(&row == &kNames[std::size(kNames) - 1] ? " or " : ", ") + row.name;
    }
    throw Error(ErrorCategory::InvalidArgument,
                "unknown algorithm '" + std::string(text) + "' (expected " + expected + ")");
}

}  // namespace vkconv
