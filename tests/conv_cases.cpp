#include "conv_cases.hpp"

#include <cmath>
#include <limits>

namespace vkt {
namespace {

vkconv::ConvProblem make(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t R, int64_t S, int64_t pad = 0,
                         int64_t stride = 1, int64_t dilation = 1, int64_t groups = 1) {
    vkconv::ConvProblem p;
    p.N = N, p.C = C, p.H = H, p.W = W, p.K = K, p.R = R, p.S = S;
    p.pad_h = p.pad_w = pad;
    p.stride_h = p.stride_w = stride;
    p.dilation_h = p.dilation_w = dilation;
    p.groups = groups;
    return p;
}

}  // namespace

std::vector<NamedProblem> odd_problems() {
    std::vector<NamedProblem> cases = {
        {"1x1", make(2, 5, 7, 6, 3, 1, 1)},
        {"3x3", make(1, 3, 9, 11, 5, 3, 3)},
        {"3x3 pad 1", make(2, 7, 8, 8, 6, 3, 3, 1)},
        {"5x5 pad 2", make(1, 4, 13, 10, 3, 5, 5, 2)},
        {"7x7 stride 2 pad 3", make(1, 3, 23, 19, 4, 7, 7, 3, 2)},
        {"11x11 stride 4", make(1, 3, 31, 27, 5, 11, 11, 0, 4)},
        {"stride 3", make(2, 5, 17, 14, 3, 3, 3, 1, 3)},
        {"stride larger than kernel", make(1, 6, 15, 16, 4, 2, 2, 0, 3)},
        {"dilation 2", make(1, 5, 14, 13, 3, 3, 3, 2, 1, 2)},
        {"padding 0", make(3, 2, 6, 5, 2, 3, 3, 0)},
        {"padding 3", make(1, 3, 5, 4, 2, 3, 3, 3)},
        {"groups 2", make(2, 6, 9, 7, 4, 3, 3, 1, 1, 1, 2)},
        {"groups 3", make(1, 9, 8, 10, 6, 3, 3, 1, 2, 1, 3)},
        {"depthwise", make(2, 7, 11, 9, 7, 3, 3, 1, 1, 1, 7)},
        {"depthwise multiplier 2", make(1, 5, 10, 8, 10, 3, 3, 1, 1, 1, 5)},
        {"channels 23 to 19", make(1, 23, 7, 9, 19, 3, 3, 1)},
        {"27x37 image", make(1, 3, 27, 37, 5, 3, 3)},
        {"batch 3", make(3, 4, 6, 7, 5, 3, 3, 1)},
        {"single pixel", make(2, 3, 1, 1, 4, 1, 1)},
        {"kernel equals image", make(1, 4, 5, 5, 3, 5, 5)},
        // Found by review: MEC's next-row window step (2 floats) broke vec4 alignment; tiny filters were
        // shorter than one rgba32f texel.
        {"2x1 kernel, 2 channels", make(1, 2, 4, 4, 1, 2, 1)},
        {"2x1 kernel, 2 channels, batch 2", make(2, 2, 4, 4, 3, 2, 1)},
        {"tiny 1x1, 2 channels", make(1, 2, 3, 3, 1, 1, 1)},
    };
    auto nonsquare = make(2, 3, 13, 8, 4, 3, 5);
    nonsquare.pad_h = 1, nonsquare.pad_w = 2;
    cases.push_back({"non-square kernel 3x5, pad 1,2", nonsquare});
    auto tall = make(1, 5, 16, 9, 3, 5, 1);
    tall.pad_h = 2;
    cases.push_back({"tall kernel 5x1", tall});
    auto mixed = make(1, 4, 21, 17, 6, 3, 2);
    mixed.stride_h = 2, mixed.stride_w = 3, mixed.dilation_h = 2, mixed.dilation_w = 1, mixed.pad_h = 1;
    cases.push_back({"stride 2,3 dilation 2,1", mixed});
    return cases;
}

std::vector<vkconv::ConvProblem> random_problems(int count, uint32_t seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    std::vector<vkconv::ConvProblem> out;
    while (static_cast<int>(out.size()) < count) {
        vkconv::ConvProblem p;
        p.groups = pick(0, 3) == 0 ? pick(2, 4) : 1;
        p.N = pick(1, 3);
        p.C = p.groups * pick(1, 6);
        p.K = p.groups * pick(1, 6);
        p.H = pick(1, 14);
        p.W = pick(1, 14);
        p.R = pick(1, 5);
        p.S = pick(1, 5);
        p.pad_h = pick(0, 3);
        p.pad_w = pick(0, 3);
        p.stride_h = pick(1, 3);
        p.stride_w = pick(1, 3);
        p.dilation_h = pick(1, 3);
        p.dilation_w = pick(1, 3);
        p.layout = pick(0, 1) ? vkconv::Layout::NHWC : vkconv::Layout::NCHW;
        p.has_bias = pick(0, 1) == 1;
        try {
            p.validate();
        } catch (const vkconv::Error&) {
            continue;  // kernel larger than the padded input: draw again
        }
        out.push_back(p);
    }
    return out;
}

std::vector<vkconv::Algorithm> algorithms_for(const vkconv::ConvProblem& problem) {
    std::vector<vkconv::Algorithm> list{vkconv::Algorithm::Direct, vkconv::Algorithm::Im2col, vkconv::Algorithm::Mec};
    if (problem.groups == problem.C) list.push_back(vkconv::Algorithm::Depthwise);
    return list;
}

vkconv::RunStats check_forward(vkconv::Context& context, const vkconv::ConvProblem& problem,
                               vkconv::Algorithm algorithm, uint32_t seed, const vkconv::ForwardOptions& options) {
    const auto x = random_values(problem.input_elements(), seed);
    const auto w = random_values(problem.filter_elements(), seed + 1);
    const auto b = problem.has_bias ? random_values(problem.K, seed + 2) : std::vector<float>{};
    const auto expected = vkconv::reference::forward(problem, x, w, b);
    std::vector<float> ax(x.size()), aw(w.size()), ab(b.size());
    for (size_t i = 0; i < x.size(); ++i) ax[i] = std::fabs(x[i]);
    for (size_t i = 0; i < w.size(); ++i) aw[i] = std::fabs(w[i]);
    for (size_t i = 0; i < b.size(); ++i) ab[i] = std::fabs(b[i]);
    const auto magnitude = vkconv::reference::forward(problem, ax, aw, ab);

    auto input = vkconv::Tensor::from_host(context, problem.input_shape(), x);
    auto filter = vkconv::Tensor::from_host(context, problem.filter_shape(), w);
    vkconv::Tensor bias;
    if (problem.has_bias) bias = vkconv::Tensor::from_host(context, problem.bias_shape(), b);
    // Poisoned with NaN: an output the pass forgets to write fails the comparison.
    const std::vector<float> poison(problem.output_elements(), std::numeric_limits<float>::quiet_NaN());
    auto output = vkconv::Tensor::from_host(context, problem.output_shape(), poison);
    const auto stats = vkconv::forward(context, problem, input, filter, problem.has_bias ? &bias : nullptr, output,
                                       algorithm, options);
    const auto result = output.download();
    check_close(result, expected, magnitude, problem.channels_per_group() * problem.R * problem.S,
                std::string(vkconv::to_string(algorithm)) + " forward: " + problem.str());
    return stats;
}

}  // namespace vkt
