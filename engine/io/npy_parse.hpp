// The .npy reader's parsing of bytes, apart from the file I/O (engine/io/npy.cpp): read_npy reads a file
// through these, and the fuzz target tests/fuzz/fuzz_npy.cpp feeds them arbitrary bytes. Every refusal is
// Error(InvalidArgument) whose message starts with the quoted `name` (read_npy passes the path).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "vkconv/npy.hpp"

namespace vkconv::detail {

// How many of a file's first bytes npy_data_offset needs: the magic, the version and the header length.
constexpr size_t kNpyPrefixLen = 12;

// Where the data of a file of `file_size` bytes starts, from its first min(file_size, kNpyPrefixLen) bytes
// (or more) in `head`: checks the magic, the version and that the header it announces fits the file.
uint64_t npy_data_offset(std::string_view head, uint64_t file_size, const std::string& name);

struct NpyLayout {
    Shape shape;
    uint64_t data_offset = 0;  // where the data starts
    int64_t elements = 0;      // values in the data, which is exactly elements * element_bytes(type) long
    DataType type = DataType::F32;  // F32 ('<f4') or F16 ('<f2')
};

// The shape and where the data lies, from the file's bytes up to the data (at least npy_data_offset's
// worth) in `head`: also checks the header (float32, C order, a valid shape) and that the data section,
// file_size - data_offset bytes, is exactly as long as the shape says.
NpyLayout parse_npy_header(std::string_view head, uint64_t file_size, const std::string& name);

// A whole .npy file's bytes as read_npy would read them.
NpyArray parse_npy(std::string_view bytes, const std::string& name);

}  // namespace vkconv::detail
