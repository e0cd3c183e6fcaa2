// Fuzz target: the find-cache file reader (detail::parse_find_cache, what FindCache runs on the file's
// text) on arbitrary text, for a fixed device key that the seed corpus's lines use. Every input must either
// parse, or be refused with Error(InvalidArgument) naming the file and the line. What parses must survive
// the writer: format_find_cache's text parses back to the same choices and the same other devices' lines,
// as FindCache rewrites its file after every measurement.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "select/find_cache.hpp"
#include "vkconv/error.hpp"

namespace {

// The key device_key_of() gives lavapipe: name, PCI ids, driver, binding limits, pipeline-cache UUID.
const std::string kDeviceKey =
    "llvmpipe (LLVM 15.0.6, 256 bits) [10005:0000 driver 1 range 134217728 texels 134217728] "
    "32332e32e3dd2a2a2ba4e6a0a5a4bc26";

bool same_time(double a, double b) {
    if (std::isinf(a) || std::isinf(b)) return a == b;
    return std::fabs(a - b) <= 1e-5 * std::fabs(a);  // written to 6 significant digits
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace vkconv::detail;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    FindCacheContents contents;
    try {
        contents = parse_find_cache(text, kDeviceKey, "fuzz.txt");
    } catch (const vkconv::Error& e) {
        if (e.category() != vkconv::ErrorCategory::InvalidArgument) std::abort();
        if (!std::string_view(e.what()).starts_with("find cache fuzz.txt line ")) std::abort();
        return 0;
    }
    // Written back and read again (a refusal here is a crash too: the writer wrote a file its reader refuses).
    const FindCacheContents again = parse_find_cache(format_find_cache(kDeviceKey, contents), kDeviceKey, "fuzz.txt");
    if (again.other_devices != contents.other_devices || again.entries.size() != contents.entries.size()) std::abort();
    for (const auto& [key, choice] : contents.entries) {
        const auto found = again.entries.find(key);
        if (found == again.entries.end() || found->second.algorithm != choice.algorithm ||
            found->second.variant != choice.variant || !same_time(found->second.ms, choice.ms))
            std::abort();
    }
    return 0;
}
