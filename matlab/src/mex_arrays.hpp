// MATLAB arrays in and out of vkconv tensors, and the checks every argument goes through.
//
// MATLAB stores arrays column-major: an H x W x C x N array is, byte for byte, the row-major N x C x W x H
// array vkconv's NCHW layout reads, so single data uploads straight from the array's memory and downloads
// straight into a new array's (the one copy is the staging buffer any device upload needs). Double data is
// converted to single on the way in and back on the way out, which costs one host copy each way.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <vkconv/vkconv.hpp>

#include "mex.h"

namespace vkconv::mex {

// An mxArray the MEX owns until it hands it to MATLAB (release()); destroyed if an error comes first.
struct ArrayDeleter {
    void operator()(mxArray* array) const { mxDestroyArray(array); }
};
using OwnedArray = std::unique_ptr<mxArray, ArrayDeleter>;

// "a 2x3 int8 array", "a complex single array", "a sparse double matrix", "a char array", ...: what the user
// passed, for error messages.
std::string describe(const mxArray* array);

// Error(InvalidArgument) naming `role` unless `array` is a real, full, non-empty single or double array.
void require_float_array(const mxArray* array, const std::string& role);

// The array's size as `rank` extents, trailing ones added (MATLAB drops trailing singleton dimensions);
// Error(InvalidArgument) naming `role` when it has more non-singleton dimensions than `rank`.
std::vector<int64_t> extents(const mxArray* array, size_t rank, const std::string& role);

// True when every array is double: results are then double, as MATLAB's own arithmetic gives single
// whenever one operand is single.
bool all_double(std::initializer_list<const mxArray*> arrays);

// A device tensor of `shape` holding the array's values (its element count must match), narrowed to
// `type` when that is 16-bit.
Tensor upload(Context& context, const mxArray* array, const Shape& shape, DataType type);

// A new, uninitialised single (or double) array of size `dims`, for a command's result: made before the
// command's device work, so that MATLAB, which ends a MEX at once when an array cannot be made, never
// does so while vkconv holds device memory.
OwnedArray result_array(const std::vector<int64_t>& dims, bool as_double);
// The tensor's values (widened to fp32 if 16-bit) into a result array of as many elements.
void download(const Tensor& tensor, mxArray* result);

// The largest size, stride, dilation or pad the MEX takes, so that no product of two of them overflows int64
// (vkconv's ConvProblem then checks the products that remain).
constexpr int64_t max_extent = (int64_t{1} << 31) - 1;
// The largest byte count an option takes: 2^53, the largest whole number a double holds exactly.
constexpr int64_t max_bytes = int64_t{1} << 53;

// A scalar or vector of whole numbers from a real numeric array: Error(InvalidArgument) naming `role` for
// anything else (complex, sparse, non-numeric, fractional, not finite, below `minimum`, above `maximum`).
std::vector<int64_t> whole_numbers(const mxArray* array, const std::string& role, int64_t minimum,
                                   int64_t maximum = max_extent);
// One whole number (a scalar), as whole_numbers checks it.
int64_t whole_number(const mxArray* array, const std::string& role, int64_t minimum, int64_t maximum);

// A character row vector's text, or Error(InvalidArgument) naming `role`.
std::string text(const mxArray* array, const std::string& role);
// The text in lower case: commands and option names match whatever their case, as MATLAB's do.
std::string lowercase(std::string text);

// A struct's field values from names and mxArrays it takes ownership of.
OwnedArray make_struct(const std::vector<std::pair<const char*, mxArray*>>& fields);
mxArray* scalar(double value);
mxArray* char_array(const std::string& value);

}  // namespace vkconv::mex
