// Tensors of 16-bit elements (DataType F16 and BF16): half the bytes, counted exactly by the pool; fp32
// host values narrowed on upload and widened exactly on download, 16-bit host values as they are; views at
// any entry, and pages, of the real element size; the calls that compute in fp32 refusing them by name;
// and which devices and profiles have 16-bit storage.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <limits>
#include <string>
#include <vector>

#include "context/tensor_storage.hpp"
#include "core/half.hpp"
#include "memory/staging.hpp"
#include "gpu.hpp"
#include "test_util.hpp"
#include "vkconv/vkconv.hpp"

extern const uint32_t test_axpy_spv[];
extern const size_t test_axpy_spv_words;

namespace {

using vkconv::DataType;
using vkconv::Tensor;

constexpr DataType kSixteenBit[] = {DataType::F16, DataType::BF16};
constexpr uint64_t kRun = vkconv::detail::Staging::kMaxStagingBytes / 2;

uint16_t narrow(DataType type, float v) {
    return type == DataType::F16 ? vkconv::detail::fp16_from_float(v) : vkconv::detail::bf16_from_float(v);
}
float widen(DataType type, uint16_t bits) {
    return type == DataType::F16 ? vkconv::detail::float_from_fp16(bits) : vkconv::detail::float_from_bf16(bits);
}

// Values that exercise the conversion's edges, then random ones: `count` of them.
std::vector<float> edge_values(size_t count, uint32_t seed) {
    std::vector<float> v = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65520.0f, 1e30f, -1e-30f, 0x1p-25f, 0x1.8p-24f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()};
    const std::vector<float> random = vkt::random_values(count, seed, -300.0f, 300.0f);
    v.insert(v.end(), random.begin(), random.end());
    v.resize(count);
    return v;
}

// Bitwise equality, NaN equal to NaN.
bool same(float a, float b) {
    return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

std::unique_ptr<vkconv::Context> context_with_limits(const std::string& profile) {
    vkconv::ContextOptions options = vkt::test_options();
    options.device_limits = profile;
    return vkt::fresh_context(options);
}

}  // namespace

TEST_CASE("element types: names, sizes and bad values", "[tensor][types]") {
    CHECK(vkconv::element_bytes(DataType::F32) == 4);
    CHECK(vkconv::element_bytes(DataType::F16) == 2);
    CHECK(vkconv::element_bytes(DataType::BF16) == 2);
    for (DataType t : {DataType::F32, DataType::F16, DataType::BF16})
        CHECK(vkconv::parse_data_type(vkconv::to_string(t)) == t);
    CHECK(vkconv::parse_data_type("Float16") == DataType::F16);
    CHECK(vkconv::parse_data_type("bfloat16") == DataType::BF16);
    CHECK_THAT(vkt::invalid_argument_message([] { vkconv::parse_data_type("f8"); }),
               Catch::Contains("'f8'") && Catch::Contains("f32, f16 or bf16"));
}

TEST_CASE("16-bit tensors take half the bytes, counted exactly by the pool", "[tensor][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    for (DataType type : kSixteenBit) {
        INFO(vkconv::to_string(type));
        const auto before = context->pool_stats();
        {
            Tensor t(*context, {3, 5, 7}, type);
            CHECK(t.data_type() == type);
            CHECK(t.bytes() == 3 * 5 * 7 * 2);
            CHECK(context->pool_stats().in_use - before.in_use == before.rounded(3 * 5 * 7 * 2));
            const Tensor view = t.images(1, 2);
            CHECK(view.data_type() == type);
            CHECK(view.bytes() == 2 * 5 * 7 * 2);
            CHECK(view.byte_offset() == 5 * 7 * 2);  // entry 1, 70 bytes in: off any 4-byte alignment
        }
        CHECK(context->pool_stats().in_use == before.in_use);
    }
}

TEST_CASE("fp32 values narrow to nearest even on upload and widen exactly on download", "[tensor][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    for (DataType type : kSixteenBit)
        // The last: more than one conversion run (a staging buffer's worth of 16-bit values).
        for (int64_t count : {int64_t{1}, int64_t{3}, int64_t{1001}, int64_t(kRun) + 3}) {
            INFO(vkconv::to_string(type) << ", " << count << " elements");
            const std::vector<float> values = edge_values(size_t(count), uint32_t(count));
            const Tensor t = Tensor::from_host(*context, {count}, values, type);
            std::vector<float> down(size_t(count), -7.0f);
            t.download(down);
            std::vector<uint16_t> bits(size_t(count), 0xdead);
            t.download(bits);
            size_t wrong = 0;
            for (size_t i = 0; i < values.size(); ++i) {
                const uint16_t expected = narrow(type, values[i]);
                if (bits[i] != expected || !same(down[i], widen(type, expected))) ++wrong;
            }
            CHECK(wrong == 0);
        }
}

TEST_CASE("16-bit values upload and download as they are, through views at odd entries", "[tensor][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    for (DataType type : kSixteenBit) {
        INFO(vkconv::to_string(type));
        // 7 entries of 3 elements (6 bytes): entry 1 starts 6 bytes in, entry 3 at 18.
        std::vector<uint16_t> whole(21);
        for (size_t i = 0; i < whole.size(); ++i) whole[i] = uint16_t(0x3c00 + 37 * i);
        Tensor t = Tensor::from_host(*context, {7, 3}, whole, type);
        const std::vector<uint16_t> part = {0x1111, 0x2222, 0x3333, 0x4444, 0x5555, 0x6666};
        Tensor view = t.images(3, 2);
        view.upload(part);
        std::vector<uint16_t> read(21), read_view(6);
        t.download(read);
        view.download(read_view);
        CHECK(read_view == part);
        for (size_t i = 0; i < whole.size(); ++i) {
            INFO("element " << i);
            CHECK(read[i] == (i >= 9 && i < 15 ? part[i - 9] : whole[i]));  // only the view's six changed
        }
    }
}

TEST_CASE("16-bit tensors larger than one buffer are paged by their own element size", "[tensor][types][gpu]") {
    vkconv::ContextOptions options = vkt::test_options();
    options.max_buffer_bytes = 4096;  // 2048 16-bit elements a buffer
    auto context = vkt::fresh_context(options);
    if (!context) return;
    for (DataType type : kSixteenBit) {
        INFO(vkconv::to_string(type));
        // Entries of 1001 elements: two a page (4004 bytes), so page 1 starts at entry 2 and a view of entry 1
        // starts 2002 bytes in, 2 past a 4-byte boundary.
        const std::vector<float> values = edge_values(5005, 3);
        const Tensor t = Tensor::from_host(*context, {5, 1001}, values, type);
        const auto& storage = *vkconv::detail::storage_of(t);
        CHECK(storage.page_bytes == 2 * 2002);
        CHECK(storage.pages.size() == 3);
        const std::vector<float> down = t.download();
        size_t wrong = 0;
        for (size_t i = 0; i < values.size(); ++i) wrong += !same(down[i], widen(type, narrow(type, values[i])));
        CHECK(wrong == 0);
        const Tensor view = t.images(1, 3);  // across a page boundary
        CHECK(view.byte_offset() % 4 == 2);
        const std::vector<float> viewed = view.download();
        for (size_t i = 0; i < viewed.size(); ++i) wrong += !same(viewed[i], down[1001 + i]);
        CHECK(wrong == 0);
    }
}

TEST_CASE("16-bit tensors: wrong host data is refused, and the calls that take fp32 (kernels) refuse them by name",
          "[tensor][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    Tensor f32(*context, {4});
    const std::vector<uint16_t> sixteen(4);
    CHECK_THAT(vkt::invalid_argument_message([&] { f32.upload(sixteen); }),
               Catch::Contains("16-bit values") && Catch::Contains("f32 tensor"));
    std::vector<uint16_t> out(4);
    CHECK_THAT(vkt::invalid_argument_message([&] { f32.download(out); }), Catch::Contains("16-bit values"));
    Tensor half(*context, {4}, DataType::F16);
    CHECK_THAT(vkt::invalid_argument_message([&] { half.upload(std::vector<uint16_t>(5)); }),
               Catch::Contains("upload of 5 values") && Catch::Contains("4 elements"));
    CHECK_THAT(vkt::invalid_argument_message([&] { Tensor(*context, {4}, static_cast<DataType>(7)); }),
               Catch::Contains("not a DataType"));

    vkconv::ConvProblem p;
    p.N = 1, p.C = 2, p.H = 5, p.W = 5, p.K = 3, p.R = 3, p.S = 3;
    const Tensor x(*context, p.input_shape(), DataType::BF16), w(*context, p.filter_shape());
    Tensor y(*context, p.output_shape());
    // A tensor of another type than the problem's (f32 here): InvalidArgument naming its role.
    CHECK_THAT(vkt::invalid_argument_message([&] { vkconv::forward(*context, p, x, w, nullptr, y); }),
               Catch::Contains("input tensor is bf16") && Catch::Contains("problem's input is f32"));
    vkconv::Kernel axpy(*context, {"test_axpy", {test_axpy_spv, test_axpy_spv_words},
                                   {vkconv::BindingAccess::Read, vkconv::BindingAccess::ReadWrite}, 4});
    Tensor sum(*context, {4});
    const auto kernel_refused = vkt::thrown_error([&] { axpy.run(std::vector<Tensor>{half, sum}, 4, 2.0f); });
    CHECK(kernel_refused.category() == vkconv::ErrorCategory::Unsupported);
    CHECK_THAT(std::string(kernel_refused.what()), Catch::Contains("binding 0 is f16"));
}

TEST_CASE("a profile gives 16-bit storage where its features list storageBuffer16BitAccess", "[limits][types]") {
    vkt::TempDir dir("vkconv-storage16");
    auto profile = [&](const std::string& name, const std::string& features) {
        const std::string path = dir.file(name + ".json");
        std::ofstream(path) << R"({"capabilities": {"device": {"properties": {"VkPhysicalDeviceProperties": )"
                               R"({"deviceName": ")" + name + R"(", "limits": {}}}, "features": {)" + features + "}}}}";
        return vkconv::DeviceProfile::load(path).info().storage_16bit;
    };
    CHECK_FALSE(profile("none", ""));
    CHECK(profile("core", R"("VkPhysicalDevice16BitStorageFeatures": {"storageBuffer16BitAccess": true})"));
    CHECK(profile("vulkan11", R"("VkPhysicalDeviceVulkan11Features": {"storageBuffer16BitAccess": true})"));
    CHECK_FALSE(profile("off", R"("VkPhysicalDeviceVulkan11Features": {"storageBuffer16BitAccess": false})"));
    CHECK_FALSE(vkconv::DeviceProfile::load("vulkan-minimum").info().storage_16bit);
}

TEST_CASE("a device has 16-bit storage as its driver says, and imposing a profile that lists no features keeps it",
          "[limits][types][gpu]") {
    auto own = vkt::fresh_context();
    if (!own) return;
    const std::string own_name = own->device().name;  // the suite's devices: lavapipe has it, SwiftShader not
    if (own_name.find("llvmpipe") != std::string::npos) CHECK(own->device().storage_16bit);
    if (own_name.find("SwiftShader") != std::string::npos) CHECK_FALSE(own->device().storage_16bit);
    auto imposed = context_with_limits("intel-arc-a770");  // its profile has no "features" section
    REQUIRE(imposed);
    CHECK(imposed->device().storage_16bit == own->device().storage_16bit);
    // The Vulkan 1.1 minimum lists none (an empty section), so the imposed device reads 16-bit tensors as words.
    auto minimum = context_with_limits("vulkan-minimum");
    REQUIRE(minimum);
    CHECK_FALSE(minimum->device().storage_16bit);
}
