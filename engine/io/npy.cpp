// .npy reading and writing (float32 only).
//
// The header is a Python dict literal. Rather than match numpy's exact spelling, a small parser for the
// subset of Python literals a header can hold is used, so files from other writers (other quoting,
// spacing, key order, Python 2 "3L" integers) still load, while anything that is not a C-order
// little-endian float32 array is refused with a message saying what was found.
// The writer reproduces np.save byte for byte, so files round-trip through numpy unchanged and a diff
// against a numpy-written file is meaningful.
#include "vkconv/npy.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#ifdef _WIN32
#include <process.h>
#else
#include <unistd.h>
#endif

#include "core/half.hpp"
#include "io/npy_parse.hpp"
#include "vkconv/error.hpp"

// Data is copied between the file and float arrays without byte swapping.
static_assert(std::endian::native == std::endian::little, "vkconv's .npy I/O assumes a little-endian host");
static_assert(sizeof(float) == 4 && std::numeric_limits<float>::is_iec559, "float must be IEEE binary32");

namespace vkconv {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

// float16 values, widened exactly.
void widen_halves(const std::vector<uint16_t>& halves, std::vector<float>& out) {
    detail::floats_from_fp16(halves, out);
}
constexpr size_t kMagicLen = 6;
constexpr size_t kArrayAlign = 64;           // numpy's ARRAY_ALIGN
constexpr size_t kGrowthAxisMaxDigits = 21;  // numpy's GROWTH_AXIS_MAX_DIGITS
constexpr int kMaxNesting = 32;              // bounds parser recursion on hostile headers

[[noreturn]] void fail(const std::string& message) {
    throw Error(ErrorCategory::InvalidArgument, message);
}

std::string quoted(const std::string& path) {
    return "'" + path + "'";
}

// Local rather than shape_string() so this file does not depend on problem.cpp.
std::string dims_text(const Shape& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) text += ", ";
        text += std::to_string(shape[i]);
    }
    return text + "]";
}

// Element count, or nullopt on a negative dimension or int64 overflow. A zero dimension wins over any
// overflow in the others, as in numpy: (2**40, 2**40, 0) is a valid empty array.
std::optional<int64_t> element_count(const Shape& shape) {
    for (int64_t d : shape)
        if (d < 0) return std::nullopt;
    for (int64_t d : shape)
        if (d == 0) return 0;
    int64_t n = 1;
    for (int64_t d : shape) {
        if (n > std::numeric_limits<int64_t>::max() / d) return std::nullopt;
        n *= d;
    }
    return n;
}

// Non-printable bytes are escaped so a binary file's garbage cannot corrupt a terminal or log line.
std::string printable(std::string_view text, size_t limit = 60) {
    std::string out;
    for (size_t i = 0; i < text.size() && i < limit; ++i) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        }
    }
    if (text.size() > limit) out += "...";
    return out;
}

// --- header parsing ---------------------------------------------------------------------------------

struct Value {
    enum class Kind { String, Bool, None, Int, Sequence } kind = Kind::None;
    std::string str;
    bool boolean = false;
    int64_t integer = 0;
    bool int_overflow = false;  // Python ints are unbounded; remember rather than fail while parsing
    bool is_tuple = false;      // for Sequence: tuple vs list
    std::vector<Value> items;
    std::string_view raw;  // the literal's source text, for messages
};

class HeaderParser {
public:
    HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

    std::vector<std::pair<std::string, Value>> parse_dict() {
        skip_space();
        expect('{', "the header to start with '{'");
        std::vector<std::pair<std::string, Value>> entries;
        skip_space();
        while (peek() != '}') {
            Value key = parse_value(0);
            if (key.kind != Value::Kind::String) error("dict keys must be strings, found " + std::string(key.raw));
            skip_space();
            expect(':', "':' after key '" + key.str + "'");
            skip_space();
            Value value = parse_value(0);
            entries.emplace_back(key.str, std::move(value));
            skip_space();
            if (peek() == ',') {
                ++pos_;
                skip_space();
            } else if (peek() != '}') {
                error("expected ',' or '}'");
            }
        }
        ++pos_;
        skip_space();
        // numpy pads with spaces and a newline; some writers pad with NULs.
        while (pos_ < text_.size() && text_[pos_] == '\0') ++pos_;
        if (pos_ != text_.size()) error("unexpected text after the closing '}'");
        return entries;
    }

private:
    [[noreturn]] void error(const std::string& what) const {
        std::string near =
            pos_ < text_.size() ? " near '" + printable(text_.substr(pos_), 20) + "'" : " at the end of the header";
        fail(quoted(path_) + ": malformed header: " + what + near);
    }

    char peek() const {
        if (pos_ >= text_.size()) error("unexpected end of header");
        return text_[pos_];
    }

    void expect(char c, const std::string& what) {
        if (peek() != c) error("expected " + what);
        ++pos_;
    }

    void skip_space() {
        while (pos_ < text_.size() &&
               (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
            ++pos_;
    }

    bool consume_word(std::string_view word) {
        if (text_.substr(pos_, word.size()) != word) return false;
        size_t end = pos_ + word.size();
        if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
            return false;
        pos_ = end;
        return true;
    }

    Value parse_value(int depth) {
        if (depth > kMaxNesting) error("nesting too deep");
        size_t start = pos_;
        Value v;
        char c = peek();
        if (c == '\'' || c == '"') {
            v.kind = Value::Kind::String;
            v.str = parse_string();
        } else if (c == '(' || c == '[') {
            v.kind = Value::Kind::Sequence;
            v.is_tuple = c == '(';
            bool saw_comma = parse_sequence(v, depth);
            // In Python "(3)" is just the integer 3, not a tuple; numpy rejects it as a shape, so do we.
            if (v.is_tuple && v.items.size() == 1 && !saw_comma) v = Value(std::move(v.items[0]));
        } else if (c == '-' || c == '+' || (c >= '0' && c <= '9')) {
            v.kind = Value::Kind::Int;
            parse_int(v);
        } else if (consume_word("True")) {
            v.kind = Value::Kind::Bool;
            v.boolean = true;
        } else if (consume_word("False")) {
            v.kind = Value::Kind::Bool;
        } else if (consume_word("None")) {
            v.kind = Value::Kind::None;
        } else {
            error("expected a value");
        }
        v.raw = text_.substr(start, pos_ - start);
        return v;
    }

    std::string parse_string() {
        char quote = text_[pos_++];
        std::string out;
        for (;;) {
            char c = peek();
            ++pos_;
            if (c == quote) return out;
            if (c == '\n') error("unterminated string");
            if (c == '\\') {
                c = peek();  // descr strings never need real escapes; keep the escaped character
                ++pos_;
            }
            out += c;
        }
    }

    bool parse_sequence(Value& v, int depth) {
        char close = text_[pos_++] == '(' ? ')' : ']';
        bool saw_comma = false;
        skip_space();
        while (peek() != close) {
            v.items.push_back(parse_value(depth + 1));
            skip_space();
            if (peek() == ',') {
                ++pos_;
                saw_comma = true;
                skip_space();
            } else if (peek() != close) {
                error(std::string("expected ',' or '") + close + "'");
            }
        }
        ++pos_;
        return saw_comma;
    }

    void parse_int(Value& v) {
        bool negative = false;
        if (text_[pos_] == '-' || text_[pos_] == '+') negative = text_[pos_++] == '-';
        skip_space();
        if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') error("expected digits");
        // Accumulate as a negative number so INT64_MIN is representable; overflow is recorded, not fatal.
        int64_t n = 0;
        constexpr int64_t lo = std::numeric_limits<int64_t>::min();
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
            int digit = text_[pos_++] - '0';
            if (n < (lo + digit) / 10)
                v.int_overflow = true;
            else
                n = n * 10 - digit;
        }
        // Python 2 numpy wrote long integers as "3L"; numpy still reads such files.
        if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;
        if (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.'))
            error("expected an integer");
        if (!negative) {
            if (n == lo)
                v.int_overflow = true;
            else
                n = -n;
        }
        v.integer = n;
    }

    std::string_view text_;
    const std::string& path_;
    size_t pos_ = 0;
};

struct Header {
    std::string descr;  // empty when descr is not a string (structured dtypes)
    std::string descr_raw;
    bool fortran_order = false;
    Shape shape;
};

Header interpret_header(std::string_view text, const std::string& path) {
    auto entries = HeaderParser(text, path).parse_dict();
    const std::string where = quoted(path) + ": malformed header: ";
    const Value* descr = nullptr;
    const Value* fortran = nullptr;
    const Value* shape = nullptr;
    for (const auto& [key, value] : entries) {
        const Value** slot = nullptr;
        if (key == "descr")
            slot = &descr;
        else if (key == "fortran_order")
            slot = &fortran;
        else if (key == "shape")
            slot = &shape;
        else
            fail(where + "unexpected key '" + printable(key) + "'");
        if (*slot) fail(where + "duplicate key '" + key + "'");
        *slot = &value;
    }
    if (!descr) fail(where + "missing key 'descr'");
    if (!fortran) fail(where + "missing key 'fortran_order'");
    if (!shape) fail(where + "missing key 'shape'");

    Header h;
    h.descr_raw = std::string(descr->raw);
    if (descr->kind == Value::Kind::String) h.descr = descr->str;

    if (fortran->kind != Value::Kind::Bool)
        fail(where + "'fortran_order' must be True or False, found " + printable(fortran->raw));
    h.fortran_order = fortran->boolean;

    bool valid_shape = shape->kind == Value::Kind::Sequence && shape->is_tuple;
    for (const Value& dim : shape->items) valid_shape = valid_shape && dim.kind == Value::Kind::Int;
    if (!valid_shape) fail(where + "'shape' must be a tuple of integers, found " + printable(shape->raw));
    for (const Value& dim : shape->items) {
        if (dim.int_overflow) fail(where + "dimension " + printable(dim.raw) + " in 'shape' is too large");
        if (dim.integer < 0) fail(where + "negative dimension " + std::to_string(dim.integer) + " in 'shape'");
        h.shape.push_back(dim.integer);
    }
    return h;
}

// --- file helpers -----------------------------------------------------------------------------------

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

uint32_t little_endian(const unsigned char* bytes, size_t count) {
    uint32_t v = 0;
    for (size_t i = count; i-- > 0;) v = (v << 8) | bytes[i];
    return v;
}

std::string header_for(const Shape& shape, DataType type) {
    std::string dict = std::string("{'descr': '") + (type == DataType::F16 ? "<f2" : "<f4") +
                       "', 'fortran_order': False, 'shape': (";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) dict += ", ";
        dict += std::to_string(shape[i]);
    }
    dict += shape.size() == 1 ? ",), }" : "), }";
    // numpy leaves room to rewrite the first dimension in place when appending to a file.
    if (!shape.empty()) dict.append(kGrowthAxisMaxDigits - std::to_string(shape[0]).size(), ' ');

    // Same padding rule as numpy's _wrap_header, including its full 64-byte pad when already aligned.
    auto wrap = [&](unsigned char major, size_t length_bytes) {
        size_t hlen = dict.size() + 1;
        size_t padlen = kArrayAlign - ((kMagicLen + 2 + length_bytes + hlen) % kArrayAlign);
        size_t total = hlen + padlen;
        std::string out(kMagic, kMagicLen);
        out += static_cast<char>(major);
        out += '\0';
        for (size_t i = 0; i < length_bytes; ++i) out += static_cast<char>((total >> (8 * i)) & 0xff);
        out += dict;
        out.append(padlen, ' ');
        out += '\n';
        return out;
    };
    std::string v1 = wrap(1, 2);
    // Like numpy, fall back to version 2.0 only when the header does not fit 1.0's 16-bit length.
    return v1.size() - (kMagicLen + 4) <= 0xffff ? v1 : wrap(2, 4);
}

std::string temp_path_for(const std::string& path) {
    static std::atomic<unsigned> counter{0};
#ifdef _WIN32
    long pid = _getpid();
#else
    long pid = static_cast<long>(getpid());
#endif
    return path + ".tmp." + std::to_string(pid) + "." + std::to_string(counter++);
}

// --- reading ---------------------------------------------------------------------------------------

constexpr size_t kPreambleLen = 8;  // the magic, then the major and minor version

File open_for_reading(const std::string& path) {
    errno = 0;
    File file(std::fopen(path.c_str(), "rb"));
    if (!file) fail("cannot open " + quoted(path) + ": " + std::strerror(errno));
    return file;
}

uintmax_t regular_file_size(const std::string& path) {
    // fopen succeeds on directories on POSIX, and the size check below needs a regular file.
    std::error_code ec;
    auto status = std::filesystem::status(path, ec);
    if (ec) fail("cannot open " + quoted(path) + ": " + ec.message());
    if (std::filesystem::is_directory(status)) fail("cannot open " + quoted(path) + ": " + std::strerror(EISDIR));
    if (!std::filesystem::is_regular_file(status)) fail("cannot open " + quoted(path) + ": not a regular file");
    const uintmax_t file_size = std::filesystem::file_size(path, ec);
    if (ec) fail("cannot open " + quoted(path) + ": " + ec.message());
    return file_size;
}

// Reads exactly `bytes` bytes, or fails: with the system's reason on a read error, else with `where` + `what`.
struct ExactReader {
    std::FILE* file;
    const std::string& path;
    const std::string& where;

    void operator()(void* dst, size_t bytes, const std::string& what) const {
        if (bytes == 0) return;
        if (std::fread(dst, 1, bytes, file) != bytes) {
            if (std::ferror(file)) fail("cannot read " + quoted(path) + ": " + std::strerror(errno));
            fail(where + what);
        }
    }
};

// The magic string and the format version from the first min(file_size, 8) bytes; returns the major version.
unsigned parse_preamble(std::string_view head, uint64_t file_size, const std::string& where) {
    if (file_size == 0) fail(where + "not an npy file (the file is empty)");
    const size_t have = static_cast<size_t>(std::min<uint64_t>(file_size, kPreambleLen));
    if (head.size() < have) fail(where + "truncated header");
    const std::string_view start = head.substr(0, std::min(have, kMagicLen));
    if (start != std::string_view(kMagic, start.size())) {
        if (start.starts_with("PK\x03\x04"))
            fail(where +
                 "not an npy file (bad magic: it looks like a zip or .npz archive; extract arrays with np.load)");
        fail(where + "not an npy file (bad magic: starts with '" + printable(start) + "')");
    }
    if (have < kPreambleLen) fail(where + "truncated header: the file is only " + std::to_string(have) + " bytes");

    const unsigned major = static_cast<unsigned char>(head[6]), minor = static_cast<unsigned char>(head[7]);
    if ((major != 1 && major != 2 && major != 3) || minor != 0)
        fail(where + "unsupported npy format version " + std::to_string(major) + "." + std::to_string(minor) +
             " (supported: 1.0, 2.0, 3.0)");
    return major;
}

// The header length field of format version `major` after the preamble; returns where the data starts.
uint64_t parse_header_length(std::string_view head, uint64_t file_size, unsigned major, const std::string& where) {
    const size_t length_bytes = major == 1 ? 2 : 4;
    if (file_size < kPreambleLen + length_bytes) fail(where + "truncated header: no header length");
    if (head.size() < kPreambleLen + length_bytes) fail(where + "truncated header");
    const uint64_t header_len =
        little_endian(reinterpret_cast<const unsigned char*>(head.data()) + kPreambleLen, length_bytes);
    const uint64_t data_offset = kPreambleLen + length_bytes + header_len;
    if (data_offset > file_size)
        fail(where + "truncated header: it claims " + std::to_string(header_len) + " bytes, the file has " +
             std::to_string(file_size - kPreambleLen - length_bytes) + " after the header length");
    return data_offset;
}

// The header's element type: float32 or float16, little-endian, in C order; anything else refused.
DataType require_float_c_order(const Header& header, const std::string& where) {
    if (header.descr == ">f4" || header.descr == ">f2")
        fail(where + "big-endian '" + header.descr + "' is not supported; convert with arr.astype('<" +
             header.descr.substr(1) + "')");
    if (header.descr != "<f4" && header.descr != "<f2") {
        std::string shown = header.descr.empty() ? printable(header.descr_raw) : "'" + printable(header.descr) + "'";
        fail(where + "dtype " + shown + " is not supported (expected float32 '<f4' or float16 '<f2')");
    }
    if (header.fortran_order) fail(where + "Fortran order is not supported; save with np.ascontiguousarray");
    return header.descr == "<f2" ? DataType::F16 : DataType::F32;
}

// The elements of the header's shape, whose bytes must be exactly the `found` bytes after the header.
int64_t elements_matching_data(const Header& header, const std::string& where, uint64_t found, DataType type) {
    const auto elements = element_count(header.shape);
    if (!elements || *elements > std::numeric_limits<int64_t>::max() / 4)
        fail(where + "malformed header: shape " + dims_text(header.shape) + " has too many elements");
    const uint64_t expected = static_cast<uint64_t>(*elements) * element_bytes(type);
    if (found < expected)
        fail(where + "truncated data: expected " + std::to_string(expected) + " bytes for shape " +
             dims_text(header.shape) + ", found " + std::to_string(found));
    if (found > expected)
        fail(where + "trailing data: expected " + std::to_string(expected) + " bytes for shape " +
             dims_text(header.shape) + ", found " + std::to_string(found));
    return *elements;
}

}  // namespace

namespace detail {

uint64_t npy_data_offset(std::string_view head, uint64_t file_size, const std::string& name) {
    const std::string where = quoted(name) + ": ";
    const unsigned major = parse_preamble(head, file_size, where);
    return parse_header_length(head, file_size, major, where);
}

NpyLayout parse_npy_header(std::string_view head, uint64_t file_size, const std::string& name) {
    const std::string where = quoted(name) + ": ";
    const uint64_t data_offset = npy_data_offset(head, file_size, name);
    if (head.size() < data_offset) fail(where + "truncated header");
    const size_t text_start = kPreambleLen + (head[6] == 1 ? 2 : 4);  // after the header length field
    const Header header = interpret_header(head.substr(text_start, data_offset - text_start), name);
    const DataType type = require_float_c_order(header, where);
    const int64_t elements = elements_matching_data(header, where, file_size - data_offset, type);
    return {header.shape, data_offset, elements, type};
}

NpyArray parse_npy(std::string_view bytes, const std::string& name) {
    NpyLayout layout = parse_npy_header(bytes, bytes.size(), name);
    NpyArray array;
    array.shape = std::move(layout.shape);
    array.type = layout.type;
    array.data.resize(static_cast<size_t>(layout.elements));
    if (layout.elements > 0 && layout.type == DataType::F16) {
        std::vector<uint16_t> halves(static_cast<size_t>(layout.elements));
        std::memcpy(halves.data(), bytes.data() + layout.data_offset, halves.size() * 2);
        widen_halves(halves, array.data);
    } else if (layout.elements > 0) {
        std::memcpy(array.data.data(), bytes.data() + layout.data_offset, static_cast<size_t>(layout.elements) * 4);
    }
    return array;
}

}  // namespace detail

NpyArray read_npy(const std::string& path) {
    const std::string where = quoted(path) + ": ";
    File file = open_for_reading(path);
    const uintmax_t file_size = regular_file_size(path);
    const ExactReader read_exact{file.get(), path, where};

    // The preamble and the header length first, then the header they announce, then the data straight
    // into the array: a large file that is not a valid .npy is refused before its data is read.
    std::string head(static_cast<size_t>(std::min<uintmax_t>(file_size, detail::kNpyPrefixLen)), '\0');
    read_exact(head.data(), head.size(), "truncated header");
    const uint64_t data_offset = detail::npy_data_offset(head, file_size, path);
    // A header shorter than the prefix (an empty one) leaves `head` longer than needed: parsing ignores the rest.
    if (const size_t have = head.size(); data_offset > have) {
        head.resize(static_cast<size_t>(data_offset));
        read_exact(head.data() + have, head.size() - have, "truncated header");
    }
    detail::NpyLayout layout = detail::parse_npy_header(head, file_size, path);
    const uint64_t expected = static_cast<uint64_t>(layout.elements) * element_bytes(layout.type);

    NpyArray array;
    array.shape = std::move(layout.shape);
    array.type = layout.type;
    array.data.resize(static_cast<size_t>(layout.elements));
    // The first read may have taken bytes past a short header; the file may have shrunk since its size was taken.
    if (std::fseek(file.get(), static_cast<long>(layout.data_offset), SEEK_SET) != 0)
        fail("cannot read " + quoted(path) + ": " + std::strerror(errno));
    const std::string truncated = "truncated data: expected " + std::to_string(expected) + " bytes";
    if (layout.type == DataType::F16) {
        std::vector<uint16_t> halves(array.data.size());
        read_exact(halves.data(), static_cast<size_t>(expected), truncated);
        widen_halves(halves, array.data);
    } else {
        read_exact(array.data.data(), static_cast<size_t>(expected), truncated);
    }
    return array;
}

void write_npy(const std::string& path, const Shape& shape, const std::vector<float>& data, DataType type) {
    if (type != DataType::F32 && type != DataType::F16)
        fail(quoted(path) + ": cannot write " + to_string(type) +
             ": NumPy has no dtype for it (write its values as float32, which holds them exactly)");
    for (int64_t d : shape)
        if (d < 0) fail(quoted(path) + ": cannot write shape " + dims_text(shape) + ": negative dimension");
    const auto elements = element_count(shape);
    if (!elements || *elements > std::numeric_limits<int64_t>::max() / 4)
        fail(quoted(path) + ": cannot write shape " + dims_text(shape) + ": too many elements");
    if (static_cast<uint64_t>(*elements) != data.size())
        fail(quoted(path) + ": shape " + dims_text(shape) + " has " + std::to_string(*elements) +
             " elements but the data has " + std::to_string(data.size()));

    const std::string header = header_for(shape, type);
    std::vector<uint16_t> halves(type == DataType::F16 ? data.size() : 0);
    if (type == DataType::F16) detail::fp16_from_floats(data, halves);
    const std::string temp = temp_path_for(path);
    auto io_error = [&](int err) {
        std::error_code ignored;
        std::filesystem::remove(temp, ignored);
        fail("cannot write " + quoted(path) + ": " + std::strerror(err));
    };

    errno = 0;
    std::FILE* f = std::fopen(temp.c_str(), "wb");
    if (!f) fail("cannot write " + quoted(path) + ": " + std::strerror(errno));
    bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
    if (ok && !data.empty())
        ok = type == DataType::F16 ? std::fwrite(halves.data(), 2, halves.size(), f) == halves.size()
                                   : std::fwrite(data.data(), sizeof(float), data.size(), f) == data.size();
    if (ok) ok = std::fflush(f) == 0;
    int err = errno;
    // fclose can be the first to report a failure (ENOSPC, EDQUOT on network file systems).
    if (std::fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) io_error(err ? err : EIO);

    // std::filesystem::rename replaces an existing target on every platform, unlike std::rename on Windows.
    std::error_code ec;
    std::filesystem::rename(temp, path, ec);
    if (ec) {
        std::error_code ignored;
        std::filesystem::remove(temp, ignored);
        fail("cannot write " + quoted(path) + ": " + ec.message());
    }
}

}  // namespace vkconv
