// Buffer pool counters, to the byte, after scripted allocation sequences.
#include <functional>

#include <vkconv/testing.hpp>
#include "context/context_impl.hpp"
#include "gpu.hpp"
#include "test_util.hpp"

namespace {

constexpr uint64_t kBlock = 1ull << 20;

std::unique_ptr<vkconv::Context> pool_context(uint64_t limit = 0) {
    auto options = vkt::test_options();
    options.pool_block_bytes = kBlock;
    options.pool_min_block_bytes = kBlock;  // blocks of kBlock from the first on: what these cases count
    options.device_memory_limit = limit;
    return vkt::fresh_context(options);
}

vkconv::Shape floats(uint64_t count) {
    return {static_cast<int64_t>(count)};
}

}  // namespace

TEST_CASE("pool counts in-use bytes exactly and returns to zero when tensors die", "[pool][gpu]") {
    auto context = pool_context();
    if (!context) return;
    const auto initial = context->pool_stats();
    REQUIRE(initial.in_use == 0);
    REQUIRE(initial.reserved == 0);
    const uint64_t a = initial.alignment;
    // Every tensor may be bound at its first byte as a storage buffer and through a texel view: the pool's
    // alignment must honour both of the device's offset alignments.
    const auto& limits = vkconv::detail::impl_of(*context).device->limits();
    CHECK(a % limits.minStorageBufferOffsetAlignment == 0);
    CHECK(a % limits.minTexelBufferOffsetAlignment == 0);
    REQUIRE((a & (a - 1)) == 0);
    {
        vkconv::Tensor one(*context, floats(1));  // 4 bytes -> one alignment unit
        CHECK(context->pool_stats().in_use == a);
        vkconv::Tensor odd(*context, {3, 5, 7});  // 420 bytes
        CHECK(context->pool_stats().in_use == a + initial.rounded(420));
        vkconv::Tensor exact(*context, floats(a));  // a*4 bytes, already a multiple of a
        CHECK(context->pool_stats().in_use == a + initial.rounded(420) + 4 * a);
        CHECK(context->pool_stats().live_allocations == 3);
        CHECK(context->pool_stats().driver_allocations == 1);
        CHECK(context->pool_stats().live_blocks == 1);
        CHECK(context->pool_stats().peak_in_use == context->pool_stats().in_use);
    }
    const auto after = context->pool_stats();
    CHECK(after.in_use == 0);
    CHECK(after.live_allocations == 0);
    CHECK(after.peak_in_use == a + initial.rounded(420) + 4 * a);
    CHECK(after.reserved >= kBlock);  // the block stays for reuse
    context->trim();
    CHECK(context->pool_stats().reserved == 0);
    CHECK(context->pool_stats().live_blocks == 0);
    CHECK(context->pool_stats().peak_reserved == after.reserved);
}

TEST_CASE("pool reuses freed memory and merges neighbouring free ranges", "[pool][gpu]") {
    auto context = pool_context();
    if (!context) return;
    const uint64_t quarter = kBlock / 4 / sizeof(float);  // floats in a quarter block
    auto a = std::make_unique<vkconv::Tensor>(*context, floats(quarter));
    auto b = std::make_unique<vkconv::Tensor>(*context, floats(quarter));
    auto c = std::make_unique<vkconv::Tensor>(*context, floats(quarter));
    auto d = std::make_unique<vkconv::Tensor>(*context, floats(quarter));
    CHECK(context->pool_stats().driver_allocations == 1);  // four quarters fill one block exactly
    CHECK(context->pool_stats().in_use == kBlock);
    a.reset();
    b.reset();
    // a and b were neighbours: their merged range holds a half-block tensor without a new block.
    vkconv::Tensor half(*context, floats(2 * quarter));
    CHECK(context->pool_stats().driver_allocations == 1);
    CHECK(context->pool_stats().in_use == kBlock);
    CHECK(context->pool_stats().peak_in_use == kBlock);
    // The block is full: one more float needs a second block.
    vkconv::Tensor extra(*context, floats(1));
    CHECK(context->pool_stats().driver_allocations == 2);
    CHECK(context->pool_stats().live_blocks == 2);
    CHECK(context->pool_stats().in_use == kBlock + context->pool_stats().alignment);
}

TEST_CASE("pool blocks grow from what is asked: a small layer reserves what it uses plus alignment",
          "[pool][gpu]") {
    // The default: no floor on blocks, which grow as large as the pool already holds, up to the block size.
    auto options = vkt::test_options();
    options.pool_block_bytes = kBlock;
    auto context = vkt::fresh_context(options);
    if (!context) return;
    const uint64_t align = context->pool_stats().alignment;
    const auto rounded = [&](uint64_t bytes) { return (bytes + align - 1) / align * align; };
    // A small forward pass with its workspace: the pool reserves the rounded sizes of what it asked, no more.
    vkconv::ConvProblem p;
    p.N = 1, p.C = 3, p.H = 9, p.W = 7, p.K = 4, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1;
    vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), y(*context, p.output_shape());
    const auto stats = vkconv::forward(*context, p, x, w, nullptr, y, vkconv::Algorithm::Im2col);
    REQUIRE(stats.workspace_bytes > 0);
    const auto after = context->pool_stats();
    const uint64_t asked = rounded(x.bytes()) + rounded(w.bytes()) + rounded(y.bytes()) + stats.workspace_bytes;
    CHECK(after.peak_in_use == asked);
    // Each block is at least what was asked and as large as the pool before it: at most twice what is used.
    CHECK(after.peak_reserved >= asked);
    CHECK(after.peak_reserved <= 2 * asked + 4 * align);
    CHECK(after.peak_reserved < kBlock / 16);
    // Blocks grow geometrically: many small tensors make few blocks, none above the block size.
    std::vector<vkconv::Tensor> many;
    for (int i = 0; i < 256; ++i) many.emplace_back(*context, floats(1024));
    const auto grown = context->pool_stats();
    CHECK(grown.driver_allocations <= after.driver_allocations + 12);
    CHECK(grown.reserved <= 2 * grown.in_use + kBlock);
    // A floor gives blocks of that size from the first on.
    options.pool_min_block_bytes = kBlock;
    auto floored = vkt::fresh_context(options);
    vkconv::Tensor small(*floored, floats(16));
    CHECK(floored->pool_stats().reserved >= kBlock);
}

TEST_CASE("pool gives a request larger than a block its own block", "[pool][gpu]") {
    auto context = pool_context();
    if (!context) return;
    const uint64_t big = 3 * kBlock / 2;  // bytes
    {
        vkconv::Tensor t(*context, floats(big / sizeof(float)));
        const auto s = context->pool_stats();
        CHECK(s.in_use == big);
        CHECK(s.live_blocks == 1);
        CHECK(s.reserved >= big);
        vkconv::Tensor small(*context, floats(10));
        CHECK(context->pool_stats().live_blocks == 2);
    }
    // The freed big block serves a smaller request later on.
    vkconv::Tensor again(*context, floats(kBlock / sizeof(float)));
    CHECK(context->pool_stats().driver_allocations == 2);
}

TEST_CASE("pool peak: reset_peak and nested PeakScopes", "[pool][gpu]") {
    auto context = pool_context();
    if (!context) return;
    const uint64_t unit = 1024;  // floats, 4 KiB: a multiple of any alignment
    vkconv::Tensor keep(*context, floats(unit));
    { vkconv::Tensor temp(*context, floats(3 * unit)); }
    CHECK(context->pool_stats().peak_in_use == 16 * unit);
    context->reset_peak();
    CHECK(context->pool_stats().peak_in_use == 4 * unit);

    vkconv::PeakScope outer(*context);
    CHECK(outer.baseline() == 4 * unit);
    {
        vkconv::Tensor t1(*context, floats(2 * unit));
        vkconv::PeakScope inner(*context);
        CHECK(inner.baseline() == 12 * unit);
        { vkconv::Tensor t2(*context, floats(unit)); }
        CHECK(inner.peak() == 16 * unit);
    }
    { vkconv::Tensor t3(*context, floats(5 * unit)); }
    CHECK(outer.peak() == 24 * unit);
    CHECK(context->pool_stats().peak_in_use == 24 * unit);
}

TEST_CASE("pool memory limit refuses an allocation with OutOfDeviceMemory and stays consistent", "[pool][gpu]") {
    auto context = pool_context(2 * kBlock + 4096);
    if (!context) return;
    vkconv::Tensor a(*context, floats(kBlock / sizeof(float)));
    vkconv::Tensor b(*context, floats(kBlock / sizeof(float)));
    const auto before = context->pool_stats();
    try {
        vkconv::Tensor c(*context, floats(1));
        FAIL("allocation past the limit succeeded");
    } catch (const vkconv::Error& e) {
        CHECK(e.category() == vkconv::ErrorCategory::OutOfDeviceMemory);
        CHECK_THAT(e.what(), Catch::Contains("device_memory_limit"));
    }
    const auto after = context->pool_stats();
    CHECK(after.in_use == before.in_use);
    CHECK(after.reserved == before.reserved);
    CHECK(after.live_allocations == 2);
}

TEST_CASE("pool trims cached empty blocks before refusing at the limit", "[pool][gpu]") {
    auto context = pool_context(2 * kBlock + 4096);
    if (!context) return;
    {
        vkconv::Tensor a(*context, floats(kBlock / sizeof(float)));
        vkconv::Tensor b(*context, floats(kBlock / sizeof(float)));
    }
    CHECK(context->pool_stats().live_blocks == 2);
    // Two cached empty blocks: a 1.5-block request only fits once they are given back.
    vkconv::Tensor big(*context, floats(3 * kBlock / 2 / sizeof(float)));
    CHECK(context->pool_stats().live_blocks == 1);
    CHECK(context->pool_stats().in_use == 3 * kBlock / 2);
}

TEST_CASE("upload and download round-trip through the staging buffer, also in pieces", "[pool][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    for (size_t count : {size_t{1}, size_t{1000}, size_t{(40u << 20) / 4 + 3}}) {
        const auto values = vkt::random_values(count, static_cast<uint32_t>(count));
        auto t = vkconv::Tensor::from_host(*context, floats(count), values);
        CHECK(t.download() == values);
        std::vector<float> into = vkt::poison(static_cast<int64_t>(count));  // the caller's memory
        t.download(into);
        CHECK(into == values);
    }
    CHECK(context->pool_stats().staging_bytes > 0);
    vkconv::Tensor t(*context, {2, 2});
    const std::vector<float> three{1, 2, 3};
    CHECK_THROWS_AS(t.upload(three), vkconv::Error);
    std::vector<float> five(5, 7.0f);
    CHECK_THROWS_AS(t.download(five), vkconv::Error);
    CHECK(five == std::vector<float>(5, 7.0f));  // refused before anything was written
}

TEST_CASE("tensor shapes are validated", "[pool][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    CHECK_THROWS_AS(vkconv::Tensor(*context, {}), vkconv::Error);
    CHECK_THROWS_AS(vkconv::Tensor(*context, {2, 0, 3}), vkconv::Error);
    CHECK_THROWS_AS(vkconv::Tensor(*context, {-1}), vkconv::Error);
    CHECK_THROWS_AS(vkconv::Tensor(*context, {1ll << 40, 1ll << 40}), vkconv::Error);
}

TEST_CASE("forward's reported peak equals its operands for the direct algorithm", "[pool][gpu]") {
    auto context = pool_context();
    if (!context) return;
    vkconv::ConvProblem p;
    p.N = 2, p.C = 3, p.H = 9, p.W = 7, p.K = 5, p.R = 3, p.S = 3, p.has_bias = true;
    vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), b(*context, p.bias_shape());
    vkconv::Tensor y(*context, p.output_shape());
    const auto s = context->pool_stats();
    const uint64_t operands = s.rounded(x.bytes()) + s.rounded(w.bytes()) + s.rounded(b.bytes()) + s.rounded(y.bytes());
    CHECK(s.in_use == operands);
    const auto stats = vkconv::forward(*context, p, x, w, &b, y, vkconv::Algorithm::Direct);
    CHECK(stats.workspace_bytes == 0);
    CHECK(stats.peak_bytes == operands + stats.workspace_bytes);
}

TEST_CASE("every pass reports its operands, workspace, peaks and driver allocations as the pool measured them",
          "[pool][gpu]") {
    // Small blocks, so a workspace needs blocks of its own the first time and reuses them the second.
    auto context = pool_context();
    if (!context) return;
    vkconv::ConvProblem p;
    p.N = 2, p.C = 16, p.H = 30, p.W = 28, p.K = 24, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1, p.has_bias = true;
    vkconv::Tensor x(*context, p.input_shape()), w(*context, p.filter_shape()), b(*context, p.bias_shape());
    vkconv::Tensor y(*context, p.output_shape()), dy(*context, p.output_shape());
    vkconv::Tensor dx(*context, p.input_shape()), dw(*context, p.filter_shape()), db(*context, p.bias_shape());
    const auto s = context->pool_stats();
    auto bytes = [&](std::initializer_list<const vkconv::Tensor*> tensors) {
        uint64_t sum = 0;
        for (const auto* t : tensors) sum += s.rounded(t->bytes());
        return sum;
    };
    struct Pass {
        const char* name;
        std::function<vkconv::RunStats()> run;
        uint64_t operands;
    };
    const Pass passes[] = {
        {"forward", [&] { return vkconv::forward(*context, p, x, w, &b, y, vkconv::Algorithm::Mec); },
         bytes({&x, &w, &b, &y})},
        {"backward_data", [&] { return vkconv::backward_data(*context, p, dy, w, dx, vkconv::Algorithm::Im2col); },
         bytes({&dy, &w, &dx})},
        {"backward_filter",
         [&] { return vkconv::backward_filter(*context, p, x, dy, dw, &db, vkconv::Algorithm::Mec); },
         bytes({&x, &dy, &dw, &db})},
        {"backward_bias", [&] { return vkconv::backward_bias(*context, p, dy, db); }, bytes({&dy, &db})},
        {"layer_backward",
         [&] { return vkconv::layer_backward(*context, p, x, w, dy, dx, dw, &db, vkconv::Algorithm::Mec).step; },
         bytes({&x, &w, &dy, &dx, &dw, &db})},
    };
    for (const auto& pass : passes) {
        INFO(pass.name);
        for (int run = 0; run < 2; ++run) {
            const auto before = context->pool_stats();
            const auto stats = pass.run();
            const auto after = context->pool_stats();
            CHECK(stats.operand_bytes == pass.operands);
            CHECK(stats.peak_bytes == before.in_use + stats.workspace_bytes);
            CHECK(stats.peak_reserved_bytes >= stats.peak_bytes);
            CHECK(stats.peak_reserved_bytes == after.reserved);  // the pool keeps the blocks it took
            CHECK(stats.driver_allocations == after.driver_allocations - before.driver_allocations);
            if (run == 1) CHECK(stats.driver_allocations == 0);  // the second run reuses the cached blocks
        }
    }
}

TEST_CASE("out of device memory at any driver allocation of a layer step leaves no leak and a usable context",
          "[pool][gpu]") {
    // Small blocks: the step's workspace needs several allocations. For each i, the i-th allocation from
    // the start of the step fails twice (the pool's trim-and-retry fails too), so the step either fails
    // with OutOfDeviceMemory or, once i is past its last allocation, succeeds; either way nothing leaks,
    // the tensors are intact, and the next step gives the same result as a clean run.
    auto options = vkt::test_options();
    options.pool_block_bytes = 64 * 1024;
    auto context = vkt::fresh_context(options);
    if (!context) return;
    vkconv::ConvProblem p;
    p.N = 2, p.C = 8, p.H = 20, p.W = 18, p.K = 12, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1, p.has_bias = true;
    const auto xs = vkt::random_values(p.input_elements(), 1), ws = vkt::random_values(p.filter_elements(), 2);
    const auto dys = vkt::random_values(p.output_elements(), 3);
    auto x = vkconv::Tensor::from_host(*context, p.input_shape(), xs);
    auto w = vkconv::Tensor::from_host(*context, p.filter_shape(), ws);
    auto dy = vkconv::Tensor::from_host(*context, p.output_shape(), dys);
    vkconv::Tensor dx(*context, p.input_shape()), dw(*context, p.filter_shape()), db(*context, p.bias_shape());
    for (auto algorithm : {vkconv::Algorithm::Mec, vkconv::Algorithm::Im2col}) {
        INFO(vkconv::to_string(algorithm));
        context->trim();  // every step starts with no cached blocks, so its workspace must allocate
        vkconv::layer_backward(*context, p, x, w, dy, dx, dw, &db, algorithm);
        const auto clean_dx = dx.download(), clean_dw = dw.download(), clean_db = db.download();
        int failures = 0;
        for (uint64_t i = 1; i < 64; ++i) {
            INFO("failing allocation " << i);
            context->trim();
            const uint64_t in_use = context->pool_stats().in_use;
            vkconv::testing::inject_allocation_failures(*context, i, 2);
            bool failed = false;
            try {
                vkconv::layer_backward(*context, p, x, w, dy, dx, dw, &db, algorithm);
            } catch (const vkconv::Error& e) {
                CHECK(e.category() == vkconv::ErrorCategory::OutOfDeviceMemory);
                failed = true;
                ++failures;
            }
            vkconv::testing::inject_allocation_failures(*context, 0, 0);
            CHECK(context->pool_stats().in_use == in_use);
            CHECK(context->pool_stats().live_allocations == 6);  // x, w, dy, dx, dw, db
            CHECK(x.download() == xs);
            CHECK(w.download() == ws);
            CHECK(dy.download() == dys);
            vkconv::layer_backward(*context, p, x, w, dy, dx, dw, &db, algorithm);
            CHECK(dx.download() == clean_dx);
            CHECK(dw.download() == clean_dw);
            CHECK(db.download() == clean_db);
            if (!failed) break;  // past the step's last allocation
        }
        CHECK(failures > 0);
        // A single failure is absorbed by the pool's trim-and-retry.
        context->trim();
        vkconv::testing::inject_allocation_failures(*context, 1, 1);
        CHECK_NOTHROW(vkconv::layer_backward(*context, p, x, w, dy, dx, dw, &db, algorithm));
        vkconv::testing::inject_allocation_failures(*context, 0, 0);
    }
}
