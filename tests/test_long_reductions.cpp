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

ConvProblem make(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t groups = 1) {
    ConvProblem p;
    p.N = N, p.C = C, p.H = H, p.W = W, p.K = K, p.R = 3, p.S = 3, p.groups = groups;
    return p;
}

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

// Every value exactly equal to the reference; `magnitude` (the reference on |operands|) proves the sums exact.
void check_exact(const std::vector<float>& gpu, const std::vector<double>& reference,
                 const std::vector<double>& magnitude, const std::string& what) {
    INFO(what);
    REQUIRE(gpu.size() == reference.size());
    for (double m : magnitude) REQUIRE(m < 16777216.0);  // 2^24: every partial sum is exact in fp32
    size_t wrong = 0, first = gpu.size();
    for (size_t i = 0; i < gpu.size(); ++i)
        if (!(double(gpu[i]) == reference[i])) {
            ++wrong;
            first = std::min(first, i);
        }
    if (wrong) {
        INFO(wrong << " of " << gpu.size() << " values differ; first at " << first << ": gpu " << gpu[first]
                   << ", exact " << reference[first]);
        FAIL("an exact integer sum came out different: a term was lost, doubled or misplaced");
    }
}

}  // namespace

TEST_CASE("reductions past 65535 loop iterations are exact on every pass and algorithm", "[long][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    struct Case {
        const char* name;
        ConvProblem p;
    };
    const std::vector<Case> cases = {
        {"C*R*S = 73728 (forward)", make(1, 8192, 5, 6, 4)},
        {"K*R*S = 73728 (backward-data)", make(1, 4, 5, 6, 8192)},
        {"N*P*Q = 81920 (backward-filter, bias)", make(20, 2, 66, 66, 3)},
        {"depthwise N*P*Q = 81920", make(5, 4, 130, 130, 4, 4)},
    };
    uint32_t seed = 31;
    for (auto layout : {Layout::NCHW, Layout::NHWC})
        for (const auto& [name, problem] : cases) {
            auto p = problem;
            p.layout = layout;
            p.has_bias = true;
            const auto x = small_integers(p.input_elements(), seed++);
            const auto w = small_integers(p.filter_elements(), seed++);
            const auto dy = small_integers(p.output_elements(), seed++), b = small_integers(p.K, seed++);
            auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
            auto tw = vkconv::Tensor::from_host(*context, p.filter_shape(), w);
            auto tb = vkconv::Tensor::from_host(*context, p.bias_shape(), b);
            auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
            vkconv::Tensor ty(*context, p.output_shape()), tdx(*context, p.input_shape());
            vkconv::Tensor tdw(*context, p.filter_shape()), tdb(*context, p.bias_shape());
            const auto ax = vkt::absolute(x), aw = vkt::absolute(w), ady = vkt::absolute(dy), ab = vkt::absolute(b);
            const auto y_ref = vkconv::reference::forward(p, x, w, b);
            const auto y_mag = vkconv::reference::forward(p, ax, aw, ab);
            const auto dx_ref = vkconv::reference::backward_data(p, dy, w);
            const auto dx_mag = vkconv::reference::backward_data(p, ady, aw);
            const auto dw_ref = vkconv::reference::backward_filter(p, x, dy);
            const auto dw_mag = vkconv::reference::backward_filter(p, ax, ady);
            const auto db_ref = vkconv::reference::backward_bias(p, dy);
            const auto db_mag = vkconv::reference::backward_bias(p, ady);
            for (Algorithm algorithm : vkt::algorithms_for(p)) {
                const std::string what = std::string(name) + " " + p.str() + " " + vkconv::to_string(algorithm);
                ty.upload(vkt::poison(p.output_elements()));
                vkconv::forward(*context, p, tx, tw, &tb, ty, algorithm);
                check_exact(ty.download(), y_ref, y_mag, "forward " + what);
                tdx.upload(vkt::poison(p.input_elements()));
                vkconv::backward_data(*context, p, tdy, tw, tdx, algorithm);
                check_exact(tdx.download(), dx_ref, dx_mag, "backward_data " + what);
                tdw.upload(vkt::poison(p.filter_elements()));
                tdb.upload(vkt::poison(p.K));
                vkconv::backward_filter(*context, p, tx, tdy, tdw, &tdb, algorithm);
                check_exact(tdw.download(), dw_ref, dw_mag, "backward_filter " + what);
                check_exact(tdb.download(), db_ref, db_mag, "bias gradient " + what);
            }
            tdb.upload(vkt::poison(p.K));
            vkconv::backward_bias(*context, p, tdy, tdb);
            check_exact(tdb.download(), db_ref, db_mag, std::string("backward_bias ") + name);
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
        check_exact(tc.download(), exact, magnitude, "gemm K = 300001 with " + configuration);
    }
}
