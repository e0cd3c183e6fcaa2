// Reading and writing NumPy .npy files of float32 and float16, the exchange format of the CLI and the tests.
//
// Accepted: format versions 1.0, 2.0 and 3.0, dtype '<f4' or '<f2' exactly (what numpy writes for float32
// and float16 on every platform; '=f4', 'f4' and '|f4' are never written by numpy and are refused),
// fortran_order False,
// any rank (shape () is a scalar of one element). Everything else is refused with Error(InvalidArgument)
// naming the file and the problem: other dtypes, big-endian, Fortran order, a truncated or malformed
// header, a data section shorter or longer than the shape says.
// Files are written exactly as np.save writes a C-contiguous float32 (or float16) array (same header, same
// padding).
#pragma once

#include <string>
#include <vector>

#include "vkconv/export.hpp"
#include "vkconv/problem.hpp"

namespace vkconv {
VKCONV_API_BEGIN

struct NpyArray {
    Shape shape;
    std::vector<float> data;  // C order; float16 files widened (exactly)
    DataType type = DataType::F32;  // what the file holds: F32 ('<f4') or F16 ('<f2')
};

NpyArray read_npy(const std::string& path);

// Writes atomically: the data goes to a temporary file beside `path`, renamed over it only once
// complete, so a failure never leaves a half-written or clobbered file. Throws on I/O errors.
// `type` F16 writes '<f2', each value rounded to nearest even; BF16, which NumPy has no dtype for, is refused
// (Error(InvalidArgument)): write bf16 values as float32, which holds them exactly.
void write_npy(const std::string& path, const Shape& shape, const std::vector<float>& data,
               DataType type = DataType::F32);

VKCONV_API_END
}  // namespace vkconv
