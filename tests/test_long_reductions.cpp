// Reductions longer than lavapipe lets one shader invocation loop (65535 iterations, all loops counted;
// engine/vulkan/shader_limits.hpp): direct kernels, the GEMM, the bias and depthwise filter gradients must split
// them into pieces. The data are small nonzero integers (in [-3, 3]), so every product and every partial sum
// is an integer below 2^24 and exact in fp32 whatever the order of the sum: the expected result is known
// exactly and the check is equality. One missing, doubled or shifted term (a piece dropped, an off-by-one at a
// piece boundary) changes a value by at least 1 and fails. (A tolerance would not do: the fp32 bound of a
// sum of 10^5 terms is about 0.6% of it, wider than a whole short piece.)
#include <cmath>

#include "conv_cases.hpp"
#include "test_util.hpp"

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Layout;

namespace {

// Nonzero integers in [-3, 3], drawn from a fixed seed.
std::vector<float> small_integers(int64_t count, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> pick(0, 5);
    std::vector<float> values(static_cast<size_t>(count));
    for (float& v : values) {
        const int k = pick(rng);
        v = float(k < 3 ? k - 3 : k - 2);  // -3, -2, -1, 1, 2, 3
    }
    return values;
}

}  // namespace

TEST_CASE("reductions past 65535 loop iterations are exact on every pass and algorithm", "[long][heavy][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    struct Case {
        const char* name;
        ConvProblem p;
    };
    // 3x3 kernels, no padding, stride or dilation: only the sizes that make a reduction long vary.
    const std::vector<Case> cases = {
        {"C*R*S = 73728 (forward)", vkt::problem().batch(1).channels(8192).image(5, 6).filters(4).kernel(3, 3)},
        {"K*R*S = 73728 (backward-data)", vkt::problem().batch(1).channels(4).image(5, 6).filters(8192).kernel(3, 3)},
        {"N*P*Q = 81920 (backward-filter, bias)",
         vkt::problem().batch(20).channels(2).image(66, 66).filters(3).kernel(3, 3)},
        {"depthwise N*P*Q = 81920", vkt::problem().batch(5).channels(4).depthwise().image(130, 130).kernel(3, 3)},
    };
    // The backward passes through the shared check, on the same integers and compared for equality.
    const vkt::BackwardSetup exact{small_integers, vkt::Compare::Exact};
    uint32_t seed = 31;
    for (auto layout : {Layout::NCHW, Layout::NHWC})
        for (const auto& [name, problem] : cases) {
            auto p = problem;
            p.layout = layout;
            p.has_bias = true;
            INFO(name << " " << p.str());
            // x, w, dy from seed, seed + 1, seed + 2 (the backward check draws the same), b from seed + 3.
            const auto x = small_integers(p.input_elements(), seed), w = small_integers(p.filter_elements(), seed + 1);
            const auto b = small_integers(p.K, seed + 3);
            vkt::BackwardCheck backward(*context, p, seed, exact);
            seed += 4;
            auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
            auto tw = vkconv::Tensor::from_host(*context, p.filter_shape(), w);
            auto tb = vkconv::Tensor::from_host(*context, p.bias_shape(), b);
            vkconv::Tensor ty(*context, p.output_shape());
            const auto y_ref = vkconv::reference::forward(p, x, w, b);
            const auto y_mag = vkconv::reference::forward(p, vkt::absolute(x), vkt::absolute(w), vkt::absolute(b));
            for (Algorithm algorithm : vkt::algorithms_for(p)) {
                INFO(vkconv::to_string(algorithm));
                ty.upload(vkt::poison(p.output_elements()));
                vkconv::forward(*context, p, tx, tw, &tb, ty, algorithm);
                vkt::check_exact(ty.download(), y_ref, y_mag,
                                 std::string("forward ") + name + " " + p.str() + " " + vkconv::to_string(algorithm));
                backward.data(algorithm);    // dx
                backward.filter(algorithm);  // dw and db
            }
            backward.bias();  // db alone
        }
}

TEST_CASE("a GEMM with K past 65535 loop iterations is exact", "[long][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const int64_t M = 3, N = 5, K = 300001;  // odd, so the last piece is short
    const auto a = small_integers(M * K, 1), b = small_integers(K * N, 2);
    auto ta = vkconv::Tensor::from_host(*context, {M, K}, a);
    auto tb = vkconv::Tensor::from_host(*context, {K, N}, b);
    vkconv::Tensor tc(*context, {M, N});
    std::vector<double> exact(M * N, 0.0), magnitude(M * N, 0.0);
    for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n)
            for (int64_t k = 0; k < K; ++k) {
                exact[m * N + n] += double(a[m * K + k]) * double(b[k * N + n]);
                magnitude[m * N + n] += std::fabs(double(a[m * K + k]) * double(b[k * N + n]));
            }
    for (const auto& configuration : vkconv::gemm_configurations(*context)) {
        INFO(configuration);
        tc.upload(vkt::poison(M * N));
        vkconv::gemm(*context, ta, tb, tc, {.configuration = configuration});
        vkt::check_exact(tc.download(), exact, magnitude, "gemm K = 300001 with " + configuration);
    }
}
