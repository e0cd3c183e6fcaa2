// Reductions longer than lavapipe lets one shader invocation loop (65535 iterations, all loops counted;
// engine/shader_limits.hpp): direct kernels, the GEMM, the bias and depthwise filter gradients must split
// them. The data is positive (in [0.5, 1)), so nothing cancels and the fp32 bound is tight enough that a
// sum cut short fails: with random signs a long sum is small next to (n + 2)·u·Σ|terms| and a truncated
// one would pass.
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

std::vector<float> positive(int64_t count, uint32_t seed) {
    return vkt::random_values(count, seed, 0.5f, 1.0f);
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
            const auto x = positive(p.input_elements(), seed++), w = positive(p.filter_elements(), seed++);
            const auto dy = positive(p.output_elements(), seed++), b = positive(p.K, seed++);
            auto tx = vkconv::Tensor::from_host(*context, p.input_shape(), x);
            auto tw = vkconv::Tensor::from_host(*context, p.filter_shape(), w);
            auto tb = vkconv::Tensor::from_host(*context, p.bias_shape(), b);
            auto tdy = vkconv::Tensor::from_host(*context, p.output_shape(), dy);
            vkconv::Tensor ty(*context, p.output_shape()), tdx(*context, p.input_shape());
            vkconv::Tensor tdw(*context, p.filter_shape()), tdb(*context, p.bias_shape());
            // Positive operands: the reference is its own magnitude.
            const auto y_ref = vkconv::reference::forward(p, x, w, b);
            const auto dx_ref = vkconv::reference::backward_data(p, dy, w);
            const auto dw_ref = vkconv::reference::backward_filter(p, x, dy);
            const auto db_ref = vkconv::reference::backward_bias(p, dy);
            std::vector<Algorithm> algorithms{Algorithm::Direct, Algorithm::Im2col, Algorithm::Mec};
            if (p.groups == p.C) algorithms.push_back(Algorithm::Depthwise);
            for (Algorithm algorithm : algorithms) {
                const std::string what = std::string(name) + " " + p.str() + " " + vkconv::to_string(algorithm);
                ty.upload(vkt::poison(p.output_elements()));
                vkconv::forward(*context, p, tx, tw, &tb, ty, algorithm);
                vkt::check_close(ty.download(), y_ref, y_ref, p.channels_per_group() * p.R * p.S + 1,
                                 "forward " + what);
                tdx.upload(vkt::poison(p.input_elements()));
                vkconv::backward_data(*context, p, tdy, tw, tdx, algorithm);
                vkt::check_close(tdx.download(), dx_ref, dx_ref, p.filters_per_group() * p.R * p.S,
                                 "backward_data " + what);
                tdw.upload(vkt::poison(p.filter_elements()));
                tdb.upload(vkt::poison(p.K));
                vkconv::backward_filter(*context, p, tx, tdy, tdw, &tdb, algorithm);
                const int64_t positions = p.N * p.P() * p.Q();
                vkt::check_close(tdw.download(), dw_ref, dw_ref, positions, "backward_filter " + what);
                vkt::check_close(tdb.download(), db_ref, db_ref, positions, "bias gradient " + what);
            }
            tdb.upload(vkt::poison(p.K));
            vkconv::backward_bias(*context, p, tdy, tdb);
            vkt::check_close(tdb.download(), db_ref, db_ref, p.N * p.P() * p.Q(), std::string("backward_bias ") + name);
        }
}

TEST_CASE("a GEMM with K past 65535 loop iterations is exact", "[long][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const int64_t M = 3, N = 5, K = 300001;  // odd, so the last piece is short
    const auto a = positive(M * K, 1), b = positive(K * N, 2);
    auto ta = vkconv::Tensor::from_host(*context, {M, K}, a);
    auto tb = vkconv::Tensor::from_host(*context, {K, N}, b);
    vkconv::Tensor tc(*context, {M, N});
    for (const auto& configuration : vkconv::gemm_configurations(*context)) {
        INFO(configuration);
        vkconv::gemm(*context, ta, tb, tc, {.configuration = configuration});
        std::vector<double> exact(M * N, 0.0);
        for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n)
                for (int64_t k = 0; k < K; ++k) exact[m * N + n] += double(a[m * K + k]) * double(b[k * N + n]);
        vkt::check_close(tc.download(), exact, exact, K, "gemm K = 300001 with " + configuration);
    }
}
