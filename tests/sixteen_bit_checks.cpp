// The 16-bit test checks (sixteen_bit_checks.hpp): passes on 16-bit tensors against the double-precision
// reference on the same inputs, within the stated bound.
#include "sixteen_bit_checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "context/tensor_storage.hpp"
#include "gpu.hpp"

namespace sixteen {

// The stated bound on every value of `gpu` (checked all, NaN failing).
void check_16bit(std::span<const float> gpu, std::span<const double> reference, std::span<const double> magnitude,
                 int64_t reduction, DataType type, const std::string& what) {
    INFO(what);
    REQUIRE(gpu.size() == reference.size());
    // (F32: an output stored as the fp32 sum it is, with no rounding of its own.)
    const double u = std::ldexp(1.0, -24);
    const double ut = type == DataType::F32 ? 0.0 : std::ldexp(1.0, type == DataType::F16 ? -11 : -8);
    const double eta = type == DataType::F16 ? std::ldexp(1.0, -25) : 0.0;
    size_t bad = gpu.size();
    double worst = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const double e = double(reduction + 2) * u * magnitude[i];
        const double bound = (1 + ut) * e + ut * std::fabs(reference[i]) + eta + 1e-30;
        const double error = std::fabs(double(gpu[i]) - reference[i]);
        if (!(error <= bound)) bad = std::min(bad, i);
        worst = std::max(worst, error / bound);
    }
    INFO("worst error/bound " << worst);
    if (bad != gpu.size())
        FAIL("value " << bad << ": gpu " << gpu[bad] << ", reference " << reference[bad] << " beyond the bound");
}

// A tensor of `type` holding `values` narrowed, and the values it holds, widened back (what the pass reads).
std::pair<Tensor, std::vector<float>> upload(vkconv::Context& context, const vkconv::Shape& shape,
                                             const std::vector<float>& values, DataType type) {
    Tensor t = Tensor::from_host(context, shape, values, type);
    return {t, t.download()};
}

// The three passes of `p` through `algorithm` on `context`, each output poisoned first and checked whole,
// each workspace as its query says; returns the outputs (forward, dx, dw, and db with a bias) for the rerun
// check; with a bias, backward_bias alone and the layer step give the same bits.
// (`sliced`: paged tensors, whose backward_bias alone runs slices cut where dy's pages are, backward-filter
// where x's and dy's are: its db is then checked against the bound rather than backward-filter's bits.)
std::vector<std::vector<float>> check_passes(vkconv::Context& context, const ConvProblem& p, Algorithm algorithm,
                                             uint32_t seed, const vkconv::PassOptions& options, bool sliced) {
    const DataType type = p.data_type;
    auto [x, xv] = upload(context, p.input_shape(), vkt::random_values(size_t(p.input_elements()), seed), type);
    auto [w, wv] = upload(context, p.filter_shape(), vkt::random_values(size_t(p.filter_elements()), seed + 1), type);
    auto [dy, dyv] = upload(context, p.output_shape(), vkt::random_values(size_t(p.output_elements()), seed + 2), type);
    auto [b, bv] = upload(context, p.bias_shape(), vkt::random_values(size_t(p.K), seed + 3), type);
    ConvProblem plain = p;
    plain.has_bias = false;
    std::vector<std::vector<float>> results;
    INFO(vkconv::to_string(algorithm));

    Tensor y = Tensor::from_host(context, p.output_shape(), vkt::poison(p.output_elements()), type);
    const auto fs = vkconv::forward(context, p, x, w, p.has_bias ? &b : nullptr, y, algorithm, options);
    CHECK(fs.algorithm == algorithm);
    CHECK(fs.workspace_bytes == vkconv::forward_workspace_bytes(context, p, algorithm, options));
    results.push_back(y.download());
    check_16bit(results.back(), vkconv::reference::forward(p, xv, wv, p.has_bias ? bv : std::vector<float>{}),
                vkconv::reference::forward(p, vkt::absolute(xv), vkt::absolute(wv),
                                           p.has_bias ? vkt::absolute(bv) : std::vector<float>{}),
                p.channels_per_group() * p.R * p.S + (p.has_bias ? 1 : 0), type, "forward " + p.str());

    Tensor dx = Tensor::from_host(context, p.input_shape(), vkt::poison(p.input_elements()), type);
    const auto ds = vkconv::backward_data(context, plain, dy, w, dx, algorithm, options);
    CHECK(ds.workspace_bytes == vkconv::backward_data_workspace_bytes(context, plain, algorithm, options));
    results.push_back(dx.download());
    check_16bit(results.back(), vkconv::reference::backward_data(plain, dyv, wv),
                vkconv::reference::backward_data(plain, vkt::absolute(dyv), vkt::absolute(wv)),
                p.filters_per_group() * p.R * p.S, type, "backward-data " + p.str());

    Tensor dw = Tensor::from_host(context, p.filter_shape(), vkt::poison(p.filter_elements()), type);
    Tensor db = Tensor::from_host(context, p.bias_shape(), vkt::poison(p.K), type);
    const auto ws = vkconv::backward_filter(context, p, x, dy, dw, p.has_bias ? &db : nullptr, algorithm, options);
    CHECK(ws.workspace_bytes == vkconv::backward_filter_workspace_bytes(context, p, algorithm, options));
    results.push_back(dw.download());
    check_16bit(results.back(), vkconv::reference::backward_filter(plain, xv, dyv),
                vkconv::reference::backward_filter(plain, vkt::absolute(xv), vkt::absolute(dyv)),
                p.N * p.P() * p.Q(), type, "backward-filter " + p.str());
    if (!p.has_bias) return results;
    // db: fp32 partial sums, rounded once; backward_bias alone and the layer step give the same bits.
    results.push_back(db.download());
    check_16bit(results.back(), vkconv::reference::backward_bias(p, dyv),
                vkconv::reference::backward_bias(p, vkt::absolute(dyv)), p.N * p.P() * p.Q(), type,
                "backward-bias " + p.str());
    Tensor db_alone = Tensor::from_host(context, p.bias_shape(), vkt::poison(p.K), type);
    vkconv::backward_bias(context, p, dy, db_alone, options);
    if (sliced)
        check_16bit(db_alone.download(), vkconv::reference::backward_bias(p, dyv),
                    vkconv::reference::backward_bias(p, vkt::absolute(dyv)), p.N * p.P() * p.Q(), type,
                    "backward-bias alone " + p.str());
    else
        CHECK(std::memcmp(db_alone.download().data(), results.back().data(), size_t(p.K) * 4) == 0);
    Tensor dx2 = Tensor::from_host(context, p.input_shape(), vkt::poison(p.input_elements()), type);
    Tensor dw2 = Tensor::from_host(context, p.filter_shape(), vkt::poison(p.filter_elements()), type);
    Tensor db2 = Tensor::from_host(context, p.bias_shape(), vkt::poison(p.K), type);
    vkconv::layer_backward(context, p, x, w, dy, dx2, dw2, &db2, algorithm, options);
    for (const auto& [got, expected] : {std::pair{dx2.download(), results[1]}, std::pair{dw2.download(), results[2]},
                                        std::pair{db2.download(), results[3]}})
        CHECK(std::memcmp(got.data(), expected.data(), got.size() * 4) == 0);
    return results;
}

// `problem` with a bias, in the (type, layout) of `turn`: f16 and bf16 in turn, NCHW for two turns, then NHWC
// (the cases below take one combination each, all four over four cases).
ConvProblem in_turn(ConvProblem problem, size_t turn) {
    problem.data_type = turn % 2 ? DataType::BF16 : DataType::F16;
    problem.layout = turn / 2 % 2 ? Layout::NHWC : Layout::NCHW;
    problem.has_bias = true;
    return problem;
}

// y = relu(alpha·conv + b + beta·z) on 16-bit tensors against the reference on the same inputs: E counts
// the fp32 accumulation (n + 2 roundings) and the epilogue's two (alpha is a power of two, beta's product
// and its sum each round once) over the sum of the terms' magnitudes. ReLU only shrinks an error.
vkconv::RunStats check_epilogue(vkconv::Context& context, const ConvProblem& p, Algorithm algorithm, bool in_place,
                                uint32_t seed, const vkconv::PassOptions& options) {
    const DataType type = p.data_type;
    auto [x, xv] = upload(context, p.input_shape(), vkt::random_values(size_t(p.input_elements()), seed), type);
    auto [w, wv] = upload(context, p.filter_shape(), vkt::random_values(size_t(p.filter_elements()), seed + 1), type);
    auto [b, bv] = upload(context, p.bias_shape(), vkt::random_values(size_t(p.K), seed + 2), type);
    auto [z, zv] = upload(context, p.output_shape(), vkt::random_values(size_t(p.output_elements()), seed + 3), type);
    Tensor y = in_place ? z : Tensor::from_host(context, p.output_shape(), vkt::poison(p.output_elements()), type);
    vkconv::Epilogue epilogue{.alpha = 0.5f, .beta = -1.5f, .residual = &z, .activation = vkconv::Activation::ReLU};
    const vkconv::RunStats stats = vkconv::forward(context, p, x, w, &b, y, algorithm, options, epilogue);
    ConvProblem plain = p;
    plain.has_bias = false;
    const std::vector<double> conv = vkconv::reference::forward(plain, xv, wv, {});
    std::vector<double> magnitude = vkconv::reference::forward(plain, vkt::absolute(xv), vkt::absolute(wv), {});
    std::vector<double> expected(conv.size());
    const size_t per_filter = size_t(p.P() * p.Q());
    for (size_t i = 0; i < conv.size(); ++i) {
        const size_t k = p.layout == Layout::NCHW ? i / per_filter % size_t(p.K) : i % size_t(p.K);
        expected[i] = std::max(0.0, 0.5 * conv[i] + bv[k] - 1.5 * zv[i]);
        magnitude[i] = 0.5 * magnitude[i] + std::fabs(bv[k]) + 1.5 * std::fabs(zv[i]);
    }
    check_16bit(y.download(), expected, magnitude, p.channels_per_group() * p.R * p.S + 2, type,
                std::string("epilogue ") + (in_place ? "in place " : "") + vkconv::to_string(algorithm) + " " + p.str());
    return stats;
}

}  // namespace sixteen
