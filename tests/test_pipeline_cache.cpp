// The pipeline cache on disk (ContextOptions::pipeline_cache_path): written when a context ends, given to
// the driver by the next context, and never trusted when it is corrupt, truncated, foreign or not ours.
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "context/context_impl.hpp"
#include "vkconv/testing.hpp"
#include "conv_cases.hpp"
#include "gpu.hpp"
#include "test_util.hpp"

namespace {

// A context on `file` whose warnings are collected in `warnings` (validation errors still count).
std::unique_ptr<vkconv::Context> context_on(const std::filesystem::path& file, std::vector<std::string>& warnings) {
    auto options = vkt::test_options();
    const auto forward = options.on_message;
    options.pipeline_cache_path = file.string();
    options.on_message = [&warnings, forward](vkconv::MessageSeverity severity, std::string_view text) {
        if (severity == vkconv::MessageSeverity::Warning) warnings.emplace_back(text);
        forward(severity, text);
    };
    return vkt::fresh_context(options);
}

uint64_t loaded_bytes(vkconv::Context& context) {
    return vkconv::detail::impl_of(context).pipelines->loaded_bytes();
}

// One forward, checked: it builds a pipeline (and so gives the cache something to keep).
void run_forward(vkconv::Context& context, uint32_t seed) {
    const vkconv::ConvProblem p = vkt::problem().batch(1).channels(3).image(6, 5).filters(4).kernel(3, 3).pad(1);
    vkt::check_forward(context, p, vkconv::Algorithm::Im2col, seed);
}

std::vector<char> read_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_file(const std::filesystem::path& file, const std::vector<char>& bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

bool mentions(const std::vector<std::string>& warnings, const std::string& text) {
    for (const auto& w : warnings)
        if (w.find(text) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE("the pipeline cache is saved when a context ends and given to the next one", "[context][gpu]") {
    vkt::TempDir dir("vkconv pipeline cache");
    const auto file = dir.path / "pipelines.bin";
    std::vector<std::string> warnings;
    {
        auto first = context_on(file, warnings);
        REQUIRE(first);
        CHECK(loaded_bytes(*first) == 0);  // no file yet, and nothing to warn about
        run_forward(*first, 1);
    }
    CHECK(warnings.empty());
    REQUIRE(std::filesystem::exists(file));
    CHECK_FALSE(std::filesystem::exists(file.string() + ".tmp"));
    const auto saved = read_file(file);
    {
        auto second = context_on(file, warnings);
        REQUIRE(second);
        CHECK(loaded_bytes(*second) + 56 == saved.size());  // the driver's bytes, after vkconv's 56-byte header
        run_forward(*second, 2);
        second->save_pipeline_cache();  // nothing new was built: nothing to write, no error
    }
    CHECK(warnings.empty());
}

TEST_CASE("a corrupt, truncated, foreign or unknown pipeline-cache file is ignored with a warning", "[context][gpu]") {
    vkt::TempDir dir("vkconv pipeline cache");
    const auto file = dir.path / "pipelines.bin";
    std::vector<std::string> warnings;
    {
        auto context = context_on(file, warnings);
        REQUIRE(context);
        run_forward(*context, 3);
    }
    const auto good = read_file(file);
    REQUIRE(good.size() > 56);
    struct Damage {
        std::string name, expected;
        std::vector<char> bytes;
    };
    auto flipped = good;
    flipped[56 + (good.size() - 56) / 2] ^= 0x5a;  // a byte in the middle of the driver's bytes
    auto foreign = good;
    foreign[20] = char(foreign[20] ^ 1);  // the driver version in vkconv's header
    const std::vector<Damage> damages = {
        {"corrupt", "corrupt", flipped},
        {"truncated", "truncated", std::vector<char>(good.begin(), good.end() - 7)},
        {"another driver version", "another device, driver version", foreign},
        {"not vkconv's", "not a vkconv pipeline-cache file", std::vector<char>{'h', 'e', 'l', 'l', 'o'}},
    };
    for (const auto& damage : damages) {
        INFO(damage.name);
        write_file(file, damage.bytes);
        warnings.clear();
        {
            auto context = context_on(file, warnings);
            REQUIRE(context);
            CHECK(loaded_bytes(*context) == 0);
            CHECK(mentions(warnings, "ignored"));
            CHECK(mentions(warnings, damage.expected));
            run_forward(*context, 4);  // results are right without the cache
        }
        // The damaged file was replaced by a good one when the context ended.
        warnings.clear();
        auto again = context_on(file, warnings);
        REQUIRE(again);
        CHECK(loaded_bytes(*again) > 0);
        CHECK(warnings.empty());
    }
}

TEST_CASE("a pipeline-cache file that cannot be written is an error naming it, and never a crash at exit",
          "[context][gpu]") {
    vkt::TempDir dir("vkconv pipeline cache");
    const auto file = dir.path / "no such folder" / "pipelines.bin";
    std::vector<std::string> warnings;
    auto context = context_on(file, warnings);
    REQUIRE(context);
    run_forward(*context, 5);
    const std::string message = vkt::invalid_argument_message([&] { context->save_pipeline_cache(); });
    CHECK(message.find("no such folder") != std::string::npos);
    warnings.clear();
    context.reset();  // the destructor tries again and reports instead of throwing
    CHECK(mentions(warnings, "no such folder"));
}

TEST_CASE("a pass's first run builds the pipelines it lacks together, before recording, and later runs none",
          "[context][gpu]") {
    VKT_REQUIRE_CONTEXT(shared);
    auto context = vkt::fresh_context(vkt::test_options());
    auto& impl = vkconv::detail::impl_of(*context);
    const vkconv::ConvProblem p = vkt::problem().batch(2).channels(5).image(9, 7).filters(6).kernel(3, 3).pad(1).bias();
    REQUIRE(impl.pipelines->size() == 0);
    // im2col's backward passes lower, multiply, scatter and sum the bias gradient: several pipelines a pass.
    vkt::check_backward(*context, p, vkconv::Algorithm::Im2col, 71);
    const size_t built = impl.pipelines->size();
    CHECK(built >= 3);
    CHECK(impl.prebuilt_passes.size() == 3);  // backward-data, backward-filter, backward-bias
    const uint64_t objects = vkconv::testing::vulkan_objects_created(*context);
    vkt::check_backward(*context, p, vkconv::Algorithm::Im2col, 72);
    CHECK(impl.pipelines->size() == built);
    CHECK(impl.prebuilt_passes.size() == 3);
    CHECK(vkconv::testing::vulkan_objects_created(*context) == objects);
}

TEST_CASE("the pipeline cache notes what a dry run lacks and builds it once, on several threads", "[context][gpu]") {
    VKT_REQUIRE_CONTEXT(shared);
    auto context = vkt::fresh_context(vkt::test_options());
    auto& cache = *vkconv::detail::impl_of(*context).pipelines;
    namespace contract = vkconv::detail::contract;
    std::vector<vkconv::detail::PipelineDesc> descs;
    for (uint32_t nhwc : {0u, 1u}) {  // two pipelines of one shader
        vkconv::detail::PipelineDesc desc;
        desc.shader = "add_bias";
        desc.bindings.assign(2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
        desc.push_constant_bytes = contract::add_bias::push::bytes;
        desc.specialization = vkconv::detail::Specialization<contract::add_bias>()
                                  .set(contract::add_bias::spec::LOCAL_SIZE_X, 64u)
                                  .set(contract::add_bias::spec::NHWC, nhwc)
                                  .set(contract::add_bias::spec::OVERWRITE, 0u)
                                  .set(contract::add_bias::spec::BIAS_TYPE, 0u)
                                  .set(contract::add_bias::spec::Y_TYPE, 0u)
                                  .values();
        descs.push_back(desc);
    }
    cache.begin_collecting();
    for (int round = 0; round < 2; ++round)  // asked twice, noted once; a stand-in has no Vulkan object
        for (const auto& desc : descs) CHECK(cache.get(desc).pipeline == VK_NULL_HANDLE);
    auto lacking = cache.end_collecting();
    CHECK(lacking.size() == 2);
    CHECK(cache.size() == 0);
    const uint64_t before = vkconv::testing::vulkan_objects_created(*context);
    lacking.push_back(lacking.front());  // a duplicate is built once
    cache.build(lacking);
    CHECK(cache.size() == 2);
    CHECK(vkconv::testing::vulkan_objects_created(*context) - before == 2 * 3 + 1);  // 3 a pipeline, the module
    for (const auto& desc : descs) CHECK(cache.get(desc).pipeline != VK_NULL_HANDLE);
    cache.build(lacking);  // all built: nothing to do
    CHECK(vkconv::testing::vulkan_objects_created(*context) - before == 2 * 3 + 1);
}
