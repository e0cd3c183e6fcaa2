// Reading and writing NumPy .npy files of float32, the exchange format of the CLI and the tests.
//
// Accepted: format versions 1.0, 2.0 and 3.0, dtype '<f4' (or '=f4'/'f4' meaning little-endian float32
// on the little-endian hosts vkconv runs on), fortran_order False, any rank. Everything else is refused
// with Error(InvalidArgument) naming the file and the problem: other dtypes, big-endian, Fortran order,
// a truncated or malformed header, a data section shorter or longer than the shape says.
#pragma once

#include <string>
#include <vector>

#include "vkconv/problem.hpp"

namespace vkconv {

struct NpyArray {
    Shape shape;
    std::vector<float> data;  // C order
};

NpyArray read_npy(const std::string& path);

// Writes atomically: the data goes to a temporary file beside `path`, renamed over it only once
// complete, so a failure never leaves a half-written or clobbered file. Throws on I/O errors.
void write_npy(const std::string& path, const Shape& shape, const std::vector<float>& data);

}  // namespace vkconv
