#include "mex_arrays.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <span>

namespace vkconv::mex {

namespace {

[[noreturn]] void invalid(const std::string& message) {
    throw Error(ErrorCategory::InvalidArgument, message);
}

std::string size_text(const mxArray* array) {
    const mwSize rank = mxGetNumberOfDimensions(array);
    const mwSize* dims = mxGetDimensions(array);
    std::string text;
    for (mwSize d = 0; d < rank; ++d) text += (d ? "x" : "") + std::to_string(dims[d]);
    return text;
}

// Element i of a real numeric array, as a double.
double element(const mxArray* array, size_t i) {
    const void* data = mxGetData(array);
    switch (mxGetClassID(array)) {
        case mxDOUBLE_CLASS:
            return static_cast<const double*>(data)[i];
        case mxSINGLE_CLASS:
            return static_cast<const float*>(data)[i];
        case mxINT8_CLASS:
            return static_cast<const int8_t*>(data)[i];
        case mxUINT8_CLASS:
            return static_cast<const uint8_t*>(data)[i];
        case mxINT16_CLASS:
            return static_cast<const int16_t*>(data)[i];
        case mxUINT16_CLASS:
            return static_cast<const uint16_t*>(data)[i];
        case mxINT32_CLASS:
            return static_cast<const int32_t*>(data)[i];
        case mxUINT32_CLASS:
            return static_cast<const uint32_t*>(data)[i];
        case mxINT64_CLASS:
            return static_cast<double>(static_cast<const int64_t*>(data)[i]);
        case mxUINT64_CLASS:
            return static_cast<double>(static_cast<const uint64_t*>(data)[i]);
        default:
            return NAN;
    }
}

std::string number_text(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    return text;
}

// A double as single, as MATLAB's single() rounds it: beyond single's range, an infinity of its sign.
float to_single(double value) {
    if (std::isfinite(value) && std::fabs(value) > double(std::numeric_limits<float>::max()))
        return value > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
    return static_cast<float>(value);
}

}  // namespace

std::string describe(const mxArray* array) {
    if (!array) return "nothing";
    std::string kind = mxGetClassName(array);
    if (mxIsCell(array)) kind = "cell";
    if (mxIsStruct(array)) kind = "struct";
    if (mxIsNumeric(array) && mxIsComplex(array)) kind = "complex " + kind;
    if (mxIsSparse(array)) kind = "sparse " + kind;
    return "a " + size_text(array) + " " + kind + " array";
}

void require_float_array(const mxArray* array, const std::string& role) {
    const bool real_float =
        array && (mxIsSingle(array) || mxIsDouble(array)) && !mxIsComplex(array) && !mxIsSparse(array);
    if (!real_float) invalid(role + " must be a real, full single or double array; got " + describe(array));
    if (mxIsEmpty(array)) invalid(role + " is empty (" + describe(array) + ")");
}

std::vector<int64_t> extents(const mxArray* array, size_t rank, const std::string& role) {
    const mwSize count = mxGetNumberOfDimensions(array);
    const mwSize* dims = mxGetDimensions(array);
    std::vector<int64_t> result(rank, 1);
    for (mwSize d = 0; d < count; ++d) {
        if (static_cast<size_t>(d) < rank)
            result[d] = static_cast<int64_t>(dims[d]);
        else if (dims[d] != 1)
            invalid(role + " must have at most " + std::to_string(rank) + " dimensions; got " + describe(array));
    }
    return result;
}

bool all_double(std::initializer_list<const mxArray*> arrays) {
    for (const mxArray* a : arrays)
        if (a && !mxIsDouble(a)) return false;
    return true;
}

Tensor upload(Context& context, const mxArray* array, const Shape& shape, DataType type) {
    const size_t count = mxGetNumberOfElements(array);
    if (static_cast<int64_t>(count) != shape_elements(shape))
        invalid("an array of " + std::to_string(count) + " elements where " + std::to_string(shape_elements(shape)) +
                " were expected");
    if (mxIsSingle(array))
        return Tensor::from_host(context, shape,
                                 std::span<const float>(static_cast<const float*>(mxGetData(array)), count), type);
    const double* values = static_cast<const double*>(mxGetData(array));
    std::vector<float> converted(count);  // double to single: the one host copy
    for (size_t i = 0; i < count; ++i) converted[i] = to_single(values[i]);
    return Tensor::from_host(context, shape, converted, type);
}

OwnedArray result_array(const std::vector<int64_t>& dims, bool as_double) {
    std::vector<mwSize> size(dims.begin(), dims.end());
    OwnedArray array(
        mxCreateUninitNumericArray(size.size(), size.data(), as_double ? mxDOUBLE_CLASS : mxSINGLE_CLASS, mxREAL));
    if (!array) throw std::bad_alloc();  // Octave's way; MATLAB ends the MEX itself
    return array;
}

void download(const Tensor& tensor, mxArray* result) {
    const size_t count = mxGetNumberOfElements(result);
    if (mxIsSingle(result)) {
        tensor.download(std::span<float>(static_cast<float*>(mxGetData(result)), count));
        return;
    }
    std::vector<float> values(count);
    tensor.download(values);
    double* out = static_cast<double*>(mxGetData(result));
    for (size_t i = 0; i < count; ++i) out[i] = values[i];
}

std::vector<int64_t> whole_numbers(const mxArray* array, const std::string& role, int64_t minimum, int64_t maximum) {
    const bool real_numeric = array && mxIsNumeric(array) && !mxIsComplex(array) && !mxIsSparse(array);
    if (!real_numeric || mxIsEmpty(array))
        invalid(role + " must be a real numeric scalar or vector of whole numbers; got " + describe(array));
    std::vector<int64_t> result;
    for (size_t i = 0; i < mxGetNumberOfElements(array); ++i) {
        const double value = element(array, i);
        if (!std::isfinite(value) || value != std::floor(value) || value < double(minimum) || value > double(maximum))
            invalid(role + " must hold whole numbers from " + std::to_string(minimum) + " to " +
                    std::to_string(maximum) + "; got " + describe(array) + " with the value " + number_text(value));
        result.push_back(static_cast<int64_t>(value));
    }
    return result;
}

int64_t whole_number(const mxArray* array, const std::string& role, int64_t minimum, int64_t maximum) {
    const std::vector<int64_t> v = whole_numbers(array, role, minimum, maximum);
    if (v.size() != 1) invalid(role + " must be a scalar; got " + describe(array));
    return v[0];
}

std::string text(const mxArray* array, const std::string& role) {
    if (!array || !mxIsChar(array) || mxGetM(array) > 1)
        invalid(role + " must be a character vector; got " + describe(array));
    char* chars = mxArrayToString(array);
    if (!chars) throw std::bad_alloc();
    std::string result(chars);
    mxFree(chars);
    return result;
}

std::string lowercase(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

OwnedArray make_struct(const std::vector<std::pair<const char*, mxArray*>>& fields) {
    std::vector<const char*> names;
    for (const auto& field : fields) names.push_back(field.first);
    OwnedArray result(mxCreateStructMatrix(1, 1, static_cast<int>(names.size()), names.data()));
    for (size_t i = 0; i < fields.size(); ++i)
        mxSetFieldByNumber(result.get(), 0, static_cast<int>(i), fields[i].second);
    return result;
}

mxArray* scalar(double value) {
    return mxCreateDoubleScalar(value);
}

mxArray* char_array(const std::string& value) {
    return mxCreateString(value.c_str());
}

}  // namespace vkconv::mex
