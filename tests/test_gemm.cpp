// The tiled GEMM against a CPU GEMM: odd sizes, every transpose combination, alpha/beta, bias, both
// batch levels (including MEC-style overlapping A windows), segmented K, grid splitting, and every tile
// configuration and access path the device supports.
#include <array>
#include <cmath>
#include <limits>

#include "context/context_impl.hpp"
#include "context/tensor_storage.hpp"
#include "gemm/gemm.hpp"
#include "gemm/gemm_config.hpp"
#include "gpu.hpp"

namespace {

using vkconv::detail::GemmConfig;
using vkconv::detail::GemmMatrix;
using vkconv::detail::GemmProblem;

vkconv::detail::BufferRange range_of(const vkconv::Tensor& t) {
    const auto& a = vkconv::detail::storage_of(t)->pages.front();
    return {a.buffer, a.offset, a.size};
}

// Host copies of the operands, addressed exactly as the shader addresses them.
struct HostGemm {
    GemmProblem p;
    std::vector<float> a, b, c, bias;

    float at(const std::vector<float>& v, uint64_t i) const { return v.at(i); }
    uint64_t a_index(uint32_t bi, uint32_t bj, uint32_t m, uint32_t k) const {
        const uint64_t kp = p.a_k_segment ? uint64_t(k / p.a_k_segment) * p.a_k_segment_stride +
                                                uint64_t(k % p.a_k_segment) * p.a.stride_col
                                          : uint64_t(k) * p.a.stride_col;
        const uint64_t mp = p.a_m_segment ? uint64_t(m / p.a_m_segment) * p.a_m_segment_stride +
                                                uint64_t(m % p.a_m_segment) * p.a.stride_row
                                          : uint64_t(m) * p.a.stride_row;
        return p.a.offset + bi * p.a.batch_i + bj * p.a.batch_j + mp + kp;
    }
    uint64_t b_index(uint32_t bi, uint32_t bj, uint32_t k, uint32_t n) const {
        return p.b.offset + bi * p.b.batch_i + bj * p.b.batch_j + k * p.b.stride_row + n * p.b.stride_col;
    }
    uint64_t c_index(uint32_t bi, uint32_t bj, uint32_t m, uint32_t n) const {
        return p.c.offset + bi * p.c.batch_i + bj * p.c.batch_j + m * p.c.stride_row + n * p.c.stride_col;
    }
};

// Runs `p` (a, b, c given as host arrays; c's initial contents matter when beta != 0) with `config`
// and checks every C element against the double-precision product, and that C outside the written
// elements is untouched.
void run_and_check(vkconv::Context& context, HostGemm& h, const GemmConfig* config, const std::string& what) {
    auto& impl = vkconv::detail::impl_of(context);
    auto ta = vkconv::Tensor::from_host(context, {int64_t(h.a.size())}, h.a);
    auto tb = vkconv::Tensor::from_host(context, {int64_t(h.b.size())}, h.b);
    auto tc = vkconv::Tensor::from_host(context, {int64_t(h.c.size())}, h.c);
    vkconv::Tensor tbias;
    h.p.a.range = range_of(ta), h.p.b.range = range_of(tb), h.p.c.range = range_of(tc);
    if (!h.bias.empty()) {
        tbias = vkconv::Tensor::from_host(context, {int64_t(h.bias.size())}, h.bias);
        h.p.bias = range_of(tbias);
    }
    {
        vkconv::detail::CommandStream stream(*impl.device);
        vkconv::detail::record_gemm(impl, stream, h.p, config);
        stream.submit_and_wait();
    }
    const auto result = tc.download();

    std::vector<double> expected(h.c.begin(), h.c.end()), magnitude(h.c.size(), 0.0);
    std::vector<bool> written(h.c.size(), false);
    for (uint32_t bi = 0; bi < h.p.batch_i; ++bi)
        for (uint32_t bj = 0; bj < h.p.batch_j; ++bj)
            for (uint32_t m = 0; m < h.p.M; ++m)
                for (uint32_t n = 0; n < h.p.N; ++n) {
                    double sum = 0, mag = 0;
                    for (uint32_t k = 0; k < h.p.K; ++k) {
                        const double term = double(h.a.at(h.a_index(bi, bj, m, k))) * h.b.at(h.b_index(bi, bj, k, n));
                        sum += term;
                        mag += std::fabs(term);
                    }
                    const uint64_t ci = h.c_index(bi, bj, m, n);
                    double value = h.p.alpha * sum, bound = std::fabs(h.p.alpha) * mag;
                    if (h.p.beta != 0) value += h.p.beta * double(h.c[ci]), bound += std::fabs(h.p.beta * h.c[ci]);
                    if (!h.bias.empty())
                        value += h.bias[h.p.bias_offset + n], bound += std::fabs(h.bias[h.p.bias_offset + n]);
                    expected[ci] = value;
                    magnitude[ci] = bound;
                    written[ci] = true;
                }
    // Elements outside the product must come back bit-identical.
    for (size_t i = 0; i < h.c.size(); ++i)
        if (!written[i]) magnitude[i] = 0;
    vkt::check_close(result, expected, magnitude, h.p.K + 2, what);
}

HostGemm plain(uint32_t M, uint32_t N, uint32_t K, bool trans_a, bool trans_b, uint32_t seed) {
    HostGemm h;
    h.p.M = M, h.p.N = N, h.p.K = K;
    h.a = vkt::random_values(size_t(M) * K, seed);
    h.b = vkt::random_values(size_t(K) * N, seed + 1);
    h.c.assign(size_t(M) * N, std::numeric_limits<float>::quiet_NaN());  // beta = 0 must not read it
    h.p.a.stride_row = trans_a ? 1 : K, h.p.a.stride_col = trans_a ? M : 1;
    h.p.b.stride_row = trans_b ? 1 : N, h.p.b.stride_col = trans_b ? K : 1;
    h.p.c.stride_row = N, h.p.c.stride_col = 1;
    return h;
}

std::string describe(const HostGemm& h, const GemmConfig& c, bool ta, bool tb) {
    return c.name + " M=" + std::to_string(h.p.M) + " N=" + std::to_string(h.p.N) + " K=" + std::to_string(h.p.K) +
           (ta ? " A^T" : "") + (tb ? " B^T" : "");
}

}  // namespace

TEST_CASE("gemm: odd sizes and every transpose combination, on every configuration", "[gemm][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const auto& configs = vkconv::detail::gemm_configs(vkconv::detail::impl_of(*context)).all;
    REQUIRE(!configs.empty());
    const std::vector<std::array<uint32_t, 3>> sizes = {{1, 1, 1},      {3, 17, 63},  {65, 63, 17},
                                                        {129, 65, 129}, {17, 129, 3}, {64, 64, 64},
                                                        {63, 1, 65},    {1, 129, 17}, {128, 68, 132}};
    uint32_t seed = 1;
    for (const auto& config : configs)
        for (const auto& [M, N, K] : sizes)
            for (bool ta : {false, true})
                for (bool tb : {false, true}) {
                    auto h = plain(M, N, K, ta, tb, seed++);
                    run_and_check(*context, h, &config, describe(h, config, ta, tb));
                }
}

TEST_CASE("gemm: alpha, beta and bias in the epilogue", "[gemm][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    for (const auto& config : vkconv::detail::gemm_configs(vkconv::detail::impl_of(*context)).all) {
        auto h = plain(37, 29, 41, false, true, 77);
        h.c = vkt::random_values(h.c.size(), 78);
        h.p.alpha = -1.5f, h.p.beta = 0.5f;
        h.bias = vkt::random_values(40, 79);
        h.p.bias_offset = 7;
        run_and_check(*context, h, &config, "alpha/beta/bias " + config.name);
        auto aligned = plain(64, 32, 48, true, false, 80);
        aligned.c = vkt::random_values(aligned.c.size(), 81);
        aligned.p.beta = 1.0f;
        run_and_check(*context, aligned, &config, "beta 1 aligned " + config.name);
    }
}

TEST_CASE("gemm: two batch levels with overlapping A windows, C in a column-major layout", "[gemm][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // MEC's shape: for image i and output row j, A is a window of rows that starts j*shift floats in.
    for (const auto& config : vkconv::detail::gemm_configs(vkconv::detail::impl_of(*context)).all) {
        for (uint32_t shift : {3u, 8u}) {
            HostGemm h;
            const uint32_t images = 3, rows = 5, M = 7, K = 24, N = 10, row_length = 64;  // a window fits a row
            h.p.M = M, h.p.N = N, h.p.K = K, h.p.batch_i = images, h.p.batch_j = rows;
            h.p.a = {{}, 4, row_length, 1, uint64_t(M) * row_length, shift};
            h.a = vkt::random_values(4 + size_t(images) * M * row_length + rows * shift, 5);
            h.p.b = {{}, 0, 1, K, 0, 0};  // B^T, shared by every batch entry
            h.b = vkt::random_values(size_t(K) * N, 6);
            // C(m, n) of entry (i, j) at i*N*rows*M + n*rows*M + j*M + m: an NCHW output.
            h.p.c = {{}, 0, 1, uint64_t(rows) * M, uint64_t(N) * rows * M, M};
            h.c.assign(size_t(images) * N * rows * M + 5, 0.25f);
            run_and_check(*context, h, &config, "batched windows shift " + std::to_string(shift) + " " + config.name);
        }
    }
}

TEST_CASE("gemm: segmented K (dilated MEC windows, MEC backward-filter's (p, q) reduction)", "[gemm][heavy][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // Segments shorter and longer than the staged K step (the shared kernel walks long segments without
    // dividing), K past a whole number of steps, and both a contiguous k (dilated MEC windows) and a
    // strided one (MEC backward-filter: k's offset within a segment steps whole rows of L).
    for (const auto& config : vkconv::detail::gemm_configs(vkconv::detail::impl_of(*context)).all) {
        for (uint32_t segment : {4u, 6u, 37u, 64u}) {
            for (bool strided_k : {false, true}) {
                HostGemm h;
                const uint32_t M = 9, N = 13, K = 3 * segment;
                h.p.M = M, h.p.N = N, h.p.K = K;
                h.p.a_k_segment = segment;
                if (strided_k) {
                    // A(m, k) = a[m + (k / seg) * (seg * (M + 3) + 5) + (k % seg) * (M + 3)]
                    h.p.a_k_segment_stride = segment * (M + 3) + 5;
                    h.p.a = {{}, 0, 1, M + 3, 0, 0};
                    h.a = vkt::random_values(size_t(3) * h.p.a_k_segment_stride, 9);
                } else {
                    const uint32_t row_length = 5 * segment + 8;
                    h.p.a_k_segment_stride = 2 * segment + 4;
                    h.p.a = {{}, 0, row_length, 1, 0, 0};
                    h.a = vkt::random_values(size_t(M) * row_length, 9);
                }
                h.p.b = {{}, 0, N, 1, 0, 0};
                h.b = vkt::random_values(size_t(K) * N, 10);
                h.p.c = {{}, 0, N, 1, 0, 0};
                h.c.assign(size_t(M) * N, 0.0f);
                run_and_check(*context, h, &config,
                              "segment " + std::to_string(segment) + (strided_k ? " strided k " : " ") + config.name);
            }
        }
    }
}

TEST_CASE("gemm: segmented M with contiguous rows (MEC backward-filter with vertical dilation)", "[gemm][heavy][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // A(m, k) = a[(m / seg) * seg_stride + m % seg + k * ld]: segments of 8 rows (vec4 loads along M stay
    // inside one) or 6 (scalar loads), 3 segments, K not a multiple of 4.
    for (const auto& config : vkconv::detail::gemm_configs(vkconv::detail::impl_of(*context)).all) {
        for (uint32_t segment : {8u, 6u}) {
            HostGemm h;
            const uint32_t M = 3 * segment, N = 13, K = 7, segment_stride = 2 * segment + 4, ld = 64;
            h.p.M = M, h.p.N = N, h.p.K = K;
            h.p.a_m_segment = segment, h.p.a_m_segment_stride = segment_stride;
            h.p.a = {{}, 0, 1, ld, 0, 0};
            h.a = vkt::random_values(size_t(K) * ld, 19);
            h.p.b = {{}, 0, N, 1, 0, 0};
            h.b = vkt::random_values(size_t(K) * N, 20);
            h.p.c = {{}, 0, N, 1, 0, 0};
            h.c.assign(size_t(M) * N, 0.0f);
            run_and_check(*context, h, &config, "m segment " + std::to_string(segment) + " " + config.name);
        }
    }
}

TEST_CASE("gemm: grids past the workgroup-count limit are split", "[gemm][gpu]") {
    auto context = vkt::fresh_context(vkt::test_options(), {.max_workgroups_per_dispatch = 2});
    if (!context) return;
    for (const auto& config : vkconv::detail::gemm_configs(vkconv::detail::impl_of(*context)).all) {
        auto h = plain(5 * config.tile_m() + 3, 3 * config.tile_n() + 1, 19, false, false, 31);
        h.p.batch_i = 5;
        h.p.a.batch_i = h.a.size(), h.p.b.batch_i = 0, h.p.c.batch_i = h.c.size();
        h.a = vkt::random_values(h.a.size() * 5, 32);
        h.c.assign(h.c.size() * 5, 0.0f);
        run_and_check(*context, h, &config, "split " + config.name);
    }
}

TEST_CASE("gemm: the public entry point checks shapes and runs batched products", "[gemm][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const auto names = vkconv::gemm_configurations(*context);
    REQUIRE(!names.empty());
    const auto av = vkt::random_values(2 * 5 * 3, 1), bv = vkt::random_values(2 * 4 * 3, 2);
    auto a = vkconv::Tensor::from_host(*context, {2, 3, 5}, av);  // A^T: [K=3, M=5]
    auto b = vkconv::Tensor::from_host(*context, {2, 4, 3}, bv);  // B^T: [N=4, K=3]
    vkconv::Tensor c(*context, {2, 5, 4});
    vkconv::GemmOptions options;
    options.transpose_a = options.transpose_b = true;
    options.configuration = names.back();
    const auto stats = vkconv::gemm(*context, a, b, c, options);
    CHECK(stats.variant == names.back());
    CHECK(stats.algorithm == vkconv::Algorithm::Auto);  // a GEMM is none of the convolution algorithms
    const auto pool = context->pool_stats();
    CHECK(stats.operand_bytes == pool.rounded(30 * 4) + pool.rounded(24 * 4) + pool.rounded(40 * 4));
    CHECK(stats.peak_bytes >= stats.operand_bytes + stats.workspace_bytes);
    const auto result = c.download();
    for (int batch = 0; batch < 2; ++batch)
        for (int m = 0; m < 5; ++m)
            for (int n = 0; n < 4; ++n) {
                double sum = 0, mag = 0;
                for (int k = 0; k < 3; ++k) {
                    const double t = double(av[batch * 15 + k * 5 + m]) * bv[batch * 12 + n * 3 + k];
                    sum += t, mag += std::fabs(t);
                }
                CHECK(std::fabs(result[batch * 20 + m * 4 + n] - sum) <= 5 * std::ldexp(1.0, -24) * mag + 1e-30);
            }
    vkconv::Tensor wrong(*context, {2, 5, 5});
    CHECK_THROWS_AS(vkconv::gemm(*context, a, b, wrong, options), vkconv::Error);
    options.configuration = "no-such-configuration";
    CHECK_THROWS_AS(vkconv::gemm(*context, a, b, c, options), vkconv::Error);
    options.configuration.clear();
    options.transpose_b = false;
    CHECK_THROWS_AS(vkconv::gemm(*context, a, b, c, options), vkconv::Error);
}

TEST_CASE("gemm: a product too small to fill the device is split along K, deterministically", "[gemm][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // A few tiles of M x N over a long K: the device's fill wants more workgroups than the tiles give.
    for (const auto& [batch, M, N, K] : {std::array<int64_t, 4>{1, 9, 7, 2051}, std::array<int64_t, 4>{3, 5, 6, 777}}) {
        INFO("batch " << batch << " " << M << "x" << N << "x" << K);
        const auto av = vkt::random_values(size_t(batch * M * K), 11), bv = vkt::random_values(size_t(batch * K * N), 12);
        const auto cv = vkt::random_values(size_t(batch * M * N), 13);
        auto a = vkconv::Tensor::from_host(*context, {batch, M, K}, av);
        auto b = vkconv::Tensor::from_host(*context, {batch, K, N}, bv);
        vkconv::GemmOptions options;
        options.alpha = 0.75f, options.beta = -0.5f;  // alpha on every slice, beta once, in the sum
        std::vector<float> first;
        for (int run = 0; run < 2; ++run) {
            auto c = vkconv::Tensor::from_host(*context, {batch, M, N}, cv);
            const auto before = context->pool_stats();
            const auto stats = vkconv::gemm(*context, a, b, c, options);
            REQUIRE(stats.partial_products > 1);
            CHECK(stats.workspace_bytes ==
                  before.rounded(uint64_t(stats.partial_products) * uint64_t(batch * M * N) * 4));
            CHECK(stats.dispatches >= 2);  // the slices' products, then their sum
            const auto result = c.download();
            for (int64_t bi = 0; bi < batch; ++bi)
                for (int64_t m = 0; m < M; ++m)
                    for (int64_t n = 0; n < N; ++n) {
                        double sum = 0, mag = 0;
                        for (int64_t k = 0; k < K; ++k) {
                            const double t = double(av[size_t((bi * M + m) * K + k)]) * bv[size_t((bi * K + k) * N + n)];
                            sum += t, mag += std::fabs(t);
                        }
                        const size_t i = size_t((bi * M + m) * N + n);
                        const double expected = 0.75 * sum - 0.5 * cv[i];
                        CHECK(std::fabs(result[i] - expected) <=
                              (double(K) + 4) * std::ldexp(1.0, -24) * (0.75 * mag + 0.5 * std::fabs(cv[i])) + 1e-30);
                    }
            if (run == 0)
                first = result;
            else
                CHECK(result == first);  // the same bits: the slices are added in a fixed order
        }
    }
}

// C = alpha·op(A)·op(B) + beta·C with each operand fp32, fp16 or bf16, on every configuration (texel ones run
// as their storage-buffer twins; each with one combination of types, in turn), odd sizes, sizes in whole
// quads and transposes, and a product split along K: every value of C
// within the fp32 product's bound E = (K + 4)·u·(|alpha|·Σ|a||b| + |beta·c|) plus one rounding to C's type,
// |ĉ − c| ≤ (1 + u_c)·E + u_c·|c| + η (docs/algorithms.md, "Element types"), on the values the tensors hold.
TEST_CASE("gemm: fp16 and bf16 operands, fp32 sums, each value of C rounded once", "[gemm][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    using vkconv::DataType;
    const std::vector<std::array<DataType, 3>> types = {{DataType::F16, DataType::F16, DataType::F16},
                                                         {DataType::BF16, DataType::BF16, DataType::BF16},
                                                         {DataType::F16, DataType::F16, DataType::F32},
                                                         {DataType::F32, DataType::BF16, DataType::F16}};
    // Odd sizes, sizes in whole quads (the vec4 loads, which read 4 16-bit or fp32 elements as one), and a
    // product split along K.
    const std::vector<std::array<int64_t, 4>> shapes = {{1, 3, 17, 63}, {2, 65, 7, 17}, {2, 16, 12, 20}, {1, 9, 7, 2051}};
    uint32_t seed = 500;
    size_t turn = 0;
    // Each configuration with one of the type combinations, in turn (the configurations outnumber them); the
    // product split along K (the last shape) with the first of each combination.
    for (const std::string& name : vkconv::gemm_configurations(*context)) {
        const auto& [ta_type, tb_type, tc_type] = types[turn % types.size()];
        const size_t shape_count = turn++ < types.size() ? shapes.size() : shapes.size() - 1;
        for (size_t shape = 0; shape < shape_count; ++shape)
            for (bool transposed : {false, true}) {
                const auto& [batch, M, N, K] = shapes[shape];
                INFO(name << " " << vkconv::to_string(ta_type) << "·" << vkconv::to_string(tb_type) << " into "
                          << vkconv::to_string(tc_type) << ", " << batch << "x" << M << "x" << N << "x" << K
                          << (transposed ? " A^T B^T" : ""));
                const vkconv::Shape a_shape = transposed ? vkconv::Shape{batch, K, M} : vkconv::Shape{batch, M, K};
                const vkconv::Shape b_shape = transposed ? vkconv::Shape{batch, N, K} : vkconv::Shape{batch, K, N};
                auto a = vkconv::Tensor::from_host(*context, a_shape, vkt::random_values(size_t(batch * M * K), seed++), ta_type);
                auto b = vkconv::Tensor::from_host(*context, b_shape, vkt::random_values(size_t(batch * K * N), seed++), tb_type);
                const auto c0 = vkconv::Tensor::from_host(*context, {batch * M * N}, vkt::random_values(size_t(batch * M * N), seed++), tc_type).download();
                auto c = vkconv::Tensor::from_host(*context, {batch, M, N}, c0, tc_type);
                vkconv::GemmOptions options;
                options.transpose_a = options.transpose_b = transposed;
                options.alpha = 0.75f, options.beta = -0.5f;
                options.configuration = name;
                vkconv::gemm(*context, a, b, c, options);
                const auto av = a.download(), bv = b.download(), result = c.download();
                const double u = std::ldexp(1.0, -24);
                const double uc = tc_type == DataType::F16 ? std::ldexp(1.0, -11) : tc_type == DataType::BF16 ? std::ldexp(1.0, -8) : 0;
                const double eta = tc_type == DataType::F16 ? std::ldexp(1.0, -25) : 0;
                size_t bad = 0;
                for (int64_t bi = 0; bi < batch; ++bi)
                    for (int64_t m = 0; m < M; ++m)
                        for (int64_t n = 0; n < N; ++n) {
                            double sum = 0, mag = 0;
                            for (int64_t k = 0; k < K; ++k) {
                                const size_t ai = size_t(bi * M * K + (transposed ? k * M + m : m * K + k));
                                const size_t bj = size_t(bi * K * N + (transposed ? n * K + k : k * N + n));
                                const double t = double(av[ai]) * bv[bj];
                                sum += t, mag += std::fabs(t);
                            }
                            const size_t i = size_t((bi * M + m) * N + n);
                            const double expected = 0.75 * sum - 0.5 * c0[i];
                            const double e = double(K + 4) * u * (0.75 * mag + 0.5 * std::fabs(c0[i]));
                            if (!(std::fabs(result[i] - expected) <= (1 + uc) * e + uc * std::fabs(expected) + eta + 1e-30))
                                ++bad;
                        }
                CHECK(bad == 0);
            }
    }
}
