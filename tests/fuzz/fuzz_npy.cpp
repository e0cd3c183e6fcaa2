// Fuzz target: the .npy reader's parsing (detail::parse_npy, what read_npy runs on a file's bytes) on
// arbitrary bytes. Every input must either give an array whose data matches its shape, or be refused with
// Error(InvalidArgument) naming the file; anything else (a crash, another exception, a sanitizer report,
// an allocation the bytes cannot justify) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "io/npy_parse.hpp"
#include "vkconv/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    try {
        const vkconv::NpyArray array = vkconv::detail::parse_npy(bytes, "fuzz.npy");
        // The data must be exactly the shape's elements (a rank-0 shape holds one).
        if (static_cast<uint64_t>(vkconv::shape_elements(array.shape)) != array.data.size()) std::abort();
    } catch (const vkconv::Error& e) {
        if (e.category() != vkconv::ErrorCategory::InvalidArgument) std::abort();
        if (!std::string_view(e.what()).starts_with("'fuzz.npy': ")) std::abort();
    }
    return 0;
}
