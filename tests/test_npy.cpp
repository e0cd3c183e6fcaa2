// Tests of read_npy / write_npy against byte strings numpy itself would produce or accept, and against
// every way a file can be wrong. numpy is not needed to run them: the reference bytes are written out.
#include <catch2/catch.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "vkconv/error.hpp"
#include "vkconv/npy.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using vkconv::ErrorCategory;
using vkconv::NpyArray;
using vkconv::Shape;
using vkt::read_bytes;
using vkt::write_bytes;

namespace {

// One directory per test case, so tests can check that nothing but the expected files is left behind.
struct TempDir : vkt::TempDir {
    TempDir() : vkt::TempDir("vkconv npy test") {}
};

std::string float_bytes(const std::vector<float>& values) {
    std::string bytes(values.size() * 4, '\0');
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// A file with the given header text taken verbatim (no padding added), so tests control every byte.
std::string npy_file(const std::string& header, const std::string& data, int major = 1) {
    std::string out("\x93NUMPY", 6);
    out += static_cast<char>(major);
    out += '\0';
    const size_t length_bytes = major == 1 ? 2 : 4;
    for (size_t i = 0; i < length_bytes; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return out + header + data;
}

std::string dict_header(const std::string& descr, const std::string& fortran, const std::string& shape) {
    return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
}

std::vector<float> iota(size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
    return v;
}

void check_bits_equal(const std::vector<float>& got, const std::vector<float>& expected) {
    REQUIRE(got.size() == expected.size());
    size_t mismatch = 0;
    while (mismatch < got.size() && bits(got[mismatch]) == bits(expected[mismatch])) ++mismatch;
    INFO("first mismatch at element " << mismatch);
    CHECK(mismatch == got.size());
}

// read_npy must throw InvalidArgument whose message starts with `prefix` and mentions every needle.
void check_read_rejected(const std::string& path, const std::vector<std::string>& needles,
                         const std::string& prefix = "") {
    try {
        (void)vkconv::read_npy(path);
        FAIL("read_npy accepted a file it should refuse");
    } catch (const vkconv::Error& e) {
        const std::string message = e.what();
        INFO("message: " << message);
        CHECK(e.category() == ErrorCategory::InvalidArgument);
        CHECK_THAT(message, StartsWith(prefix.empty() ? "'" + path + "'" : prefix));
        for (const auto& needle : needles) CHECK_THAT(message, Contains(needle));
    }
}

void check_header_rejected(const TempDir& dir, const std::string& header, const std::string& data,
                           const std::vector<std::string>& needles, int major = 1) {
    const std::string path = dir.file("bad.npy");
    write_bytes(path, npy_file(header, data, major));
    check_read_rejected(path, needles);
}

// np.arange(6, dtype='<f4').reshape(2, 3) as written by np.save (numpy >= 1.24: the dict, 21 - len("2")
// spaces of growth room, then spaces and '\n' up to a 64-byte boundary; header length 118 = 0x76).
std::string numpy_arange_2x3() {
    std::string bytes("\x93NUMPY\x01\x00\x76\x00", 10);
    bytes += "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    bytes += std::string(20 + 38, ' ');
    bytes += '\n';
    bytes += std::string(
        "\x00\x00\x00\x00"
        "\x00\x00\x80\x3f"
        "\x00\x00\x00\x40"
        "\x00\x00\x40\x40"
        "\x00\x00\x80\x40"
        "\x00\x00\xa0\x40",
        24);
    return bytes;
}

}  // namespace

TEST_CASE("npy round trip for ranks 0 to 4 and odd shapes", "[npy]") {
    TempDir dir;
    const std::vector<Shape> shapes = {
        {},     {1},       {7},       {0},          {1, 1},         {2, 3},       {3, 1},
        {0, 5}, {5, 1, 3}, {3, 0, 2}, {2, 3, 5, 7}, {1, 13, 1, 17}, {1, 1, 1, 1}, {1234567},
    };
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1e6f, 1e6f);
    for (const Shape& shape : shapes) {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        std::vector<float> data(static_cast<size_t>(n));
        for (float& v : data) v = dist(rng);
        INFO("shape of rank " << shape.size() << ", " << n << " elements");

        const std::string path = dir.file("a.npy");
        vkconv::write_npy(path, shape, data);
        const NpyArray back = vkconv::read_npy(path);
        CHECK(back.shape == shape);
        check_bits_equal(back.data, data);

        // Data starts on a 64-byte boundary, as numpy writes it.
        const std::string bytes = read_bytes(path);
        const size_t header_end =
            10 + static_cast<unsigned char>(bytes[8]) + 256u * static_cast<unsigned char>(bytes[9]);
        CHECK(header_end % 64 == 0);
        CHECK(bytes[header_end - 1] == '\n');
        CHECK(bytes.size() == header_end + data.size() * 4);
    }
    CHECK(dir.entries() == std::vector<std::string>{"a.npy"});
}

TEST_CASE("npy keeps NaN, infinities, negative zero and denormals bit-exact", "[npy]") {
    TempDir dir;
    const std::vector<float> data = {
        std::numeric_limits<float>::quiet_NaN(),
        from_bits(0x7fc12345u),  // NaN with payload
        from_bits(0xffc00001u),  // negative NaN with payload
        from_bits(0x7f800001u),  // signaling NaN
        std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity(),
        -0.0f,
        0.0f,
        std::numeric_limits<float>::denorm_min(),
        -std::numeric_limits<float>::denorm_min(),
        std::numeric_limits<float>::max(),
        std::numeric_limits<float>::lowest(),
        std::numeric_limits<float>::min(),
        1.0f / 3.0f,
    };
    const std::string path = dir.file("special.npy");
    vkconv::write_npy(path, {2, 7}, data);
    const NpyArray back = vkconv::read_npy(path);
    CHECK(back.shape == Shape{2, 7});
    check_bits_equal(back.data, data);
    CHECK(std::signbit(back.data[6]));
}

TEST_CASE("npy reads and writes exactly what numpy writes", "[npy]") {
    TempDir dir;

    SECTION("np.arange(6, dtype='<f4').reshape(2, 3)") {
        const std::string path = dir.file("numpy.npy");
        write_bytes(path, numpy_arange_2x3());
        const NpyArray a = vkconv::read_npy(path);
        CHECK(a.shape == Shape{2, 3});
        CHECK(a.data == std::vector<float>{0, 1, 2, 3, 4, 5});

        const std::string ours = dir.file("ours.npy");
        vkconv::write_npy(ours, {2, 3}, iota(6));
        CHECK(read_bytes(ours) == numpy_arange_2x3());
    }

    SECTION("rank 1: np.arange(3, dtype='<f4')") {
        std::string expected("\x93NUMPY\x01\x00\x76\x00", 10);
        expected += "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
        expected += std::string(20 + 40, ' ') + "\n";
        expected += float_bytes({0, 1, 2});
        const std::string path = dir.file("r1.npy");
        vkconv::write_npy(path, {3}, iota(3));
        CHECK(read_bytes(path) == expected);
        CHECK(vkconv::read_npy(path).shape == Shape{3});
    }

    SECTION("rank 0: np.array(1.5, dtype='<f4'), no growth room for a scalar") {
        std::string expected("\x93NUMPY\x01\x00\x76\x00", 10);
        expected += "{'descr': '<f4', 'fortran_order': False, 'shape': (), }";
        expected += std::string(62, ' ') + "\n";
        expected += float_bytes({1.5f});
        const std::string path = dir.file("r0.npy");
        vkconv::write_npy(path, {}, {1.5f});
        CHECK(read_bytes(path) == expected);
        const NpyArray a = vkconv::read_npy(path);
        CHECK(a.shape.empty());
        CHECK(a.data == std::vector<float>{1.5f});
    }

    SECTION("numpy before 1.14 aligned the header to 16 bytes") {
        std::string bytes("\x93NUMPY\x01\x00\x46\x00", 10);
        bytes += "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        bytes += std::string(10, ' ') + "\n";
        bytes += float_bytes(iota(6));
        const std::string path = dir.file("old.npy");
        write_bytes(path, bytes);
        const NpyArray a = vkconv::read_npy(path);
        CHECK(a.shape == Shape{2, 3});
        CHECK(a.data == iota(6));
    }
}

TEST_CASE("npy format versions 2.0 and 3.0", "[npy]") {
    TempDir dir;
    const std::string path = dir.file("v.npy");
    const int major = GENERATE(2, 3);
    INFO("version " << major << ".0");
    write_bytes(path, npy_file(dict_header("'<f4'", "False", "(2, 2)"), float_bytes({1, 2, 3, 4}), major));
    const NpyArray a = vkconv::read_npy(path);
    CHECK(a.shape == Shape{2, 2});
    CHECK(a.data == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE("npy writes version 2.0 when the header outgrows 1.0's 16-bit length", "[npy]") {
    TempDir dir;
    const std::string path = dir.file("wide.npy");
    const Shape shape(25000, 1);  // "1, " per dimension: a header of about 75 KB
    vkconv::write_npy(path, shape, {42.0f});
    const std::string bytes = read_bytes(path);
    CHECK(bytes[6] == '\x02');
    const NpyArray a = vkconv::read_npy(path);
    CHECK(a.shape == shape);
    CHECK(a.data == std::vector<float>{42.0f});
}

TEST_CASE("npy header parsing tolerates other writers' spelling", "[npy]") {
    TempDir dir;
    const std::string path = dir.file("h.npy");
    const std::string data = float_bytes(iota(6));
    std::string header;

    SECTION("double quotes") {
        header = "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}";
    }
    SECTION("extra whitespace, tabs and newlines") {
        header = "  {  'descr'  :\t'<f4' ,\n 'fortran_order' :False,'shape':(  2 ,3 ) ,  }   \n";
    }
    SECTION("keys in another order, no trailing comma, no padding") {
        header = "{'shape': (2, 3), 'descr': '<f4', 'fortran_order': False}";
    }
    SECTION("trailing comma inside a rank-2 shape") {
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3,), }\n";
    }
    SECTION("Python 2 long integers") {
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }\n";
    }
    SECTION("NUL padding") {
        header = dict_header("'<f4'", "False", "(2, 3)") + std::string(5, '\0');
    }
    write_bytes(path, npy_file(header, data));
    const NpyArray a = vkconv::read_npy(path);
    CHECK(a.shape == Shape{2, 3});
    CHECK(a.data == iota(6));
}

TEST_CASE("npy shape () is a scalar and (3,) is rank 1", "[npy]") {
    TempDir dir;
    const std::string path = dir.file("s.npy");

    write_bytes(path, npy_file(dict_header("'<f4'", "False", "()"), float_bytes({7.0f})));
    NpyArray a = vkconv::read_npy(path);
    CHECK(a.shape.empty());
    CHECK(a.data == std::vector<float>{7.0f});

    write_bytes(path, npy_file(dict_header("'<f4'", "False", "(3,)"), float_bytes({1, 2, 3})));
    a = vkconv::read_npy(path);
    CHECK(a.shape == Shape{3});

    write_bytes(path, npy_file(dict_header("'<f4'", "False", "(0, 4)"), ""));
    a = vkconv::read_npy(path);
    CHECK(a.shape == Shape{0, 4});
    CHECK(a.data.empty());
}

// Found by the fuzz target fuzz_npy (tests/fuzz/regressions/npy/): an empty array whose other extents
// overflow int64 together is valid, and shape_elements must say 0, not overflow multiplying them first.
TEST_CASE("npy empty array with huge other extents has zero elements", "[npy]") {
    TempDir dir;
    const std::string path = dir.file("empty.npy");
    write_bytes(path, npy_file(dict_header("'<f4'", "False", "(1099511627776, 1099511627776, 0)"), ""));
    const NpyArray a = vkconv::read_npy(path);
    CHECK(a.shape == Shape{int64_t(1) << 40, int64_t(1) << 40, 0});
    CHECK(a.data.empty());
    CHECK(vkconv::shape_elements(a.shape) == 0);
}

TEST_CASE("npy refuses files that are not npy or not complete", "[npy]") {
    TempDir dir;
    const std::string path = dir.file("bad.npy");

    SECTION("bad magic") {
        write_bytes(path, "this is a text file, not an array\n");
        check_read_rejected(path, {"not an npy file", "bad magic"});
    }
    SECTION("an .npz archive") {
        write_bytes(path, std::string("PK\x03\x04\x14\x00\x00\x00", 8) + std::string(100, '\0'));
        check_read_rejected(path, {"not an npy file", ".npz"});
    }
    SECTION("empty file") {
        write_bytes(path, "");
        check_read_rejected(path, {"not an npy file", "empty"});
    }
    SECTION("unsupported versions") {
        std::string file = npy_file(dict_header("'<f4'", "False", "(1,)"), float_bytes({1}));
        file[6] = '\x04';
        write_bytes(path, file);
        check_read_rejected(path, {"unsupported npy format version 4.0"});
        file[6] = '\x01';
        file[7] = '\x01';
        write_bytes(path, file);
        check_read_rejected(path, {"unsupported npy format version 1.1"});
    }
    SECTION("truncated inside the magic") {
        write_bytes(path, std::string("\x93NUM", 4));
        check_read_rejected(path, {"truncated header"});
    }
    SECTION("truncated before the header length") {
        write_bytes(path, std::string("\x93NUMPY\x01\x00\x10", 9));
        check_read_rejected(path, {"truncated header"});
        write_bytes(path, std::string("\x93NUMPY\x02\x00\x10\x00\x00", 11));
        check_read_rejected(path, {"truncated header"});
    }
    SECTION("header shorter than its length field says") {
        std::string file = npy_file(dict_header("'<f4'", "False", "(1,)"), "");
        file[8] = '\xff';  // claims 255+ bytes, has ~60
        write_bytes(path, file);
        check_read_rejected(path, {"truncated header"});
    }
    SECTION("data section too short") {
        write_bytes(path, npy_file(dict_header("'<f4'", "False", "(2, 3)"), float_bytes(iota(5))));
        check_read_rejected(path, {"truncated data: expected 24 bytes", "found 20"});
    }
    SECTION("data section too long") {
        write_bytes(path, npy_file(dict_header("'<f4'", "False", "(2, 3)"), float_bytes(iota(7))));
        check_read_rejected(path, {"trailing data: expected 24 bytes", "found 28"});
    }
    SECTION("absurd shape for a small file is refused before allocating") {
        write_bytes(path, npy_file(dict_header("'<f4'", "False", "(1000000000, 1000000000)"), float_bytes(iota(6))));
        check_read_rejected(path, {"truncated data: expected 4000000000000000000 bytes", "found 24"});
    }
}

TEST_CASE("npy refuses malformed headers", "[npy]") {
    TempDir dir;
    const std::string data = float_bytes(iota(6));

    SECTION("missing keys") {
        check_header_rejected(dir, "{'descr': '<f4', 'fortran_order': False}\n", data, {"missing key 'shape'"});
        check_header_rejected(dir, "{'descr': '<f4', 'shape': (2, 3)}\n", data, {"missing key 'fortran_order'"});
        check_header_rejected(dir, "{'fortran_order': False, 'shape': (2, 3)}\n", data, {"missing key 'descr'"});
        check_header_rejected(dir, "{}\n", data, {"missing key"});
    }
    SECTION("unexpected and duplicate keys") {
        check_header_rejected(dir, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}\n", data,
                              {"unexpected key 'x'"});
        check_header_rejected(dir, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (6,)}\n", data,
                              {"duplicate key 'shape'"});
    }
    SECTION("bad syntax") {
        const std::string header =
            GENERATE(as<std::string>{}, "{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3)}",
                     "{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}",
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)",
                     "{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3)}",
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (2,, 3)}",
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3}",
                     "{'descr': '<f4', 'fortran_order': false, 'shape': (2, 3)}",
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (2.0, 3)}",
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (0x2, 3)}",
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} junk", "{,}", "[1, 2]", "",
                     "{'descr': " + std::string(2000, '['));
        INFO("header: " << header);
        check_header_rejected(dir, header, data, {"malformed header"});
    }
    SECTION("nesting deep enough to exhaust a recursive parser's stack") {
        check_header_rejected(dir, "{'descr': " + std::string(100000, '(') + std::string(100000, ')') + "}", data,
                              {"nesting too deep"});
    }
    SECTION("shape that is not a tuple of integers") {
        check_header_rejected(dir, dict_header("'<f4'", "False", "[2, 3]"), data,
                              {"'shape' must be a tuple of integers", "[2, 3]"});
        check_header_rejected(dir, dict_header("'<f4'", "False", "(6)"), data,
                              {"'shape' must be a tuple of integers", "(6)"});
        check_header_rejected(dir, dict_header("'<f4'", "False", "('2', 3)"), data,
                              {"'shape' must be a tuple of integers"});
        check_header_rejected(dir, dict_header("'<f4'", "False", "None"), data,
                              {"'shape' must be a tuple of integers"});
    }
    SECTION("negative dimension") {
        check_header_rejected(dir, dict_header("'<f4'", "False", "(2, -3)"), data, {"negative dimension -3"});
    }
    SECTION("dimension beyond int64") {
        check_header_rejected(dir, dict_header("'<f4'", "False", "(99999999999999999999,)"), data,
                              {"malformed header", "99999999999999999999", "too large"});
    }
    SECTION("element count overflowing int64") {
        check_header_rejected(dir, dict_header("'<f4'", "False", "(4294967296, 4294967296)"), data,
                              {"malformed header", "too many elements"});
        check_header_rejected(dir, dict_header("'<f4'", "False", "(3037000500, 1000000000)"), data,
                              {"too many elements"});
    }
    SECTION("fortran_order that is not a bool") {
        check_header_rejected(dir, dict_header("'<f4'", "0", "(2, 3)"), data,
                              {"'fortran_order' must be True or False"});
    }
}

TEST_CASE("npy reads and writes float16 ('<f2') as numpy does, widened exactly and narrowed to nearest even",
          "[npy]") {
    TempDir dir;
    // np.array([[0, 1, -2.5], [65504, 2**-24, 1/3]], dtype='<f2'): header as numpy writes it, then the halves.
    // The header is float32's (numpy_arange_2x3's first 128 bytes) with '<f2' for '<f4'.
    std::string expected = numpy_arange_2x3().substr(0, 128);
    REQUIRE(expected.find("'<f4'") != std::string::npos);
    expected.replace(expected.find("'<f4'"), 5, "'<f2'");
    const uint16_t halves[] = {0x0000, 0x3c00, 0xc100, 0x7bff, 0x0001, 0x3555};
    expected += std::string(reinterpret_cast<const char*>(halves), sizeof halves);
    const std::string ours = dir.file("half.npy");
    vkconv::write_npy(ours, {2, 3}, {0.0f, 1.0f, -2.5f, 65504.0f, 0x1p-24f, 1.0f / 3.0f}, vkconv::DataType::F16);
    CHECK(read_bytes(ours) == expected);
    const NpyArray a = vkconv::read_npy(ours);
    CHECK(a.type == vkconv::DataType::F16);
    CHECK(a.shape == Shape{2, 3});
    CHECK(a.data == std::vector<float>{0.0f, 1.0f, -2.5f, 65504.0f, 0x1p-24f, 0x1.554p-2f});
    vkconv::write_npy(dir.file("f32.npy"), {1}, {1.0f});
    CHECK(vkconv::read_npy(dir.file("f32.npy")).type == vkconv::DataType::F32);
    // A float16 file with too few bytes: the size in its own element bytes.
    write_bytes(dir.file("short.npy"), expected.substr(0, expected.size() - 2));
    CHECK_THAT(vkt::invalid_argument_message([&] { (void)vkconv::read_npy(dir.file("short.npy")); }),
               Catch::Contains("expected 12 bytes"));
    // bf16 has no NumPy dtype: refused, and nothing written.
    CHECK_THAT(vkt::invalid_argument_message([&] { vkconv::write_npy(dir.file("b.npy"), {1}, {1.0f}, vkconv::DataType::BF16); }),
               Catch::Contains("bf16") && Catch::Contains("float32"));
    CHECK_FALSE(std::filesystem::exists(dir.file("b.npy")));
}

TEST_CASE("npy refuses dtypes other than little-endian float32 and float16, and Fortran order", "[npy]") {
    TempDir dir;
    const std::string data = float_bytes(iota(6));

    SECTION("other dtypes are named in the message") {
        const std::string descr =
            GENERATE(as<std::string>{}, "<f8", "=f2", "<i4", "|u1", "=f4", "f4", "|f4", "float32", "<c8");
        check_header_rejected(dir, dict_header("'" + descr + "'", "False", "(2, 3)"), data,
                              {"dtype '" + descr + "' is not supported (expected float32 '<f4' or float16 '<f2')"});
    }
    SECTION("the exact message for float64") {
        const std::string path = dir.file("x.npy");
        write_bytes(path, npy_file(dict_header("'<f8'", "False", "(3,)"), float_bytes(iota(6))));
        try {
            (void)vkconv::read_npy(path);
            FAIL("float64 accepted");
        } catch (const vkconv::Error& e) {
            CHECK(std::string(e.what()) ==
                  "'" + path + "': dtype '<f8' is not supported (expected float32 '<f4' or float16 '<f2')");
        }
    }
    SECTION("structured dtype") {
        check_header_rejected(dir, dict_header("[('a', '<f4')]", "False", "(6,)"), data,
                              {"dtype [('a', '<f4')] is not supported"});
    }
    SECTION("big-endian float32") {
        check_header_rejected(dir, dict_header("'>f4'", "False", "(2, 3)"), data, {"big-endian", "'>f4'"});
        check_header_rejected(dir, dict_header("'>f2'", "False", "(2, 3)"), data, {"big-endian", "'>f2'"});
    }
    SECTION("Fortran order") {
        check_header_rejected(dir, dict_header("'<f4'", "True", "(2, 3)"), data,
                              {"Fortran order is not supported; save with np.ascontiguousarray"});
    }
}

TEST_CASE("npy read of a missing file or a directory", "[npy]") {
    TempDir dir;
    const std::string missing = dir.file("does_not_exist.npy");
    check_read_rejected(missing, {std::strerror(ENOENT)}, "cannot open '" + missing + "': ");
    check_read_rejected(dir.path.string(), {"cannot open"}, "cannot open '" + dir.path.string() + "'");
}

TEST_CASE("npy write with a wrong element count throws and creates nothing", "[npy]") {
    TempDir dir;
    const std::string path = dir.file("w.npy");
    try {
        vkconv::write_npy(path, {2, 3}, iota(5));
        FAIL("wrong element count accepted");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == ErrorCategory::InvalidArgument);
        CHECK_THAT(std::string(e.what()),
                   StartsWith("'" + path + "'") && Contains("[2, 3]") && Contains("6") && Contains("5"));
    }
    CHECK_THROWS_AS(vkconv::write_npy(path, {}, {}), vkconv::Error);  // a scalar has one element
    CHECK_THROWS_WITH(vkconv::write_npy(path, {-1}, {}), Contains("negative dimension"));
    CHECK_THROWS_WITH(vkconv::write_npy(path, {4294967296, 4294967296}, {}), Contains("too many elements"));
    CHECK_THROWS_AS(vkconv::write_npy(path, {-2, -3}, iota(6)), vkconv::Error);
    CHECK(dir.entries().empty());

    // An existing file survives a refused write.
    vkconv::write_npy(path, {2}, {1, 2});
    CHECK_THROWS_AS(vkconv::write_npy(path, {3}, {1, 2}), vkconv::Error);
    CHECK(vkconv::read_npy(path).data == std::vector<float>{1, 2});
    CHECK(dir.entries() == std::vector<std::string>{"w.npy"});
}

TEST_CASE("npy write replaces an existing file", "[npy]") {
    TempDir dir;
    const std::string path = dir.file("r.npy");
    write_bytes(path, std::string(10000, 'x'));  // longer than the new file: must not leave a tail
    vkconv::write_npy(path, {2, 2}, {1, 2, 3, 4});
    const NpyArray a = vkconv::read_npy(path);
    CHECK(a.shape == Shape{2, 2});
    CHECK(a.data == std::vector<float>{1, 2, 3, 4});

    vkconv::write_npy(path, {1}, {9});
    CHECK(vkconv::read_npy(path).data == std::vector<float>{9});
    CHECK(dir.entries() == std::vector<std::string>{"r.npy"});
}

TEST_CASE("npy failed writes throw and leave nothing behind", "[npy]") {
    TempDir dir;

    SECTION("target directory does not exist") {
        const std::string path = dir.file("no_such_dir/out.npy");
        try {
            vkconv::write_npy(path, {1}, {1});
            FAIL("write into a missing directory succeeded");
        } catch (const vkconv::Error& e) {
            CHECK(e.category() == ErrorCategory::InvalidArgument);
            CHECK_THAT(std::string(e.what()),
                       StartsWith("cannot write '" + path + "': ") && Contains(std::strerror(ENOENT)));
        }
        CHECK(dir.entries().empty());
    }
    SECTION("target is a directory: the rename fails, the temporary file is removed") {
        const std::string path = dir.file("occupied");
        fs::create_directory(path);
        write_bytes(dir.file("occupied/keep.txt"), "keep");
        try {
            vkconv::write_npy(path, {1}, {1});
            FAIL("write over a directory succeeded");
        } catch (const vkconv::Error& e) {
            CHECK(e.category() == ErrorCategory::InvalidArgument);
            CHECK_THAT(std::string(e.what()), StartsWith("cannot write '" + path + "': "));
        }
        CHECK(dir.entries() == std::vector<std::string>{"occupied"});
        CHECK(read_bytes(dir.file("occupied/keep.txt")) == "keep");
    }
}
