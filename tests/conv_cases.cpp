#include "conv_cases.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "test_util.hpp"

namespace vkt {

ProblemBuilder& ProblemBuilder::batch(int64_t n) {
    p_.N = n;
    return *this;
}
ProblemBuilder& ProblemBuilder::channels(int64_t c) {
    p_.C = c;
    return *this;
}
ProblemBuilder& ProblemBuilder::image(int64_t h, int64_t w) {
    p_.H = h, p_.W = w;
    return *this;
}
ProblemBuilder& ProblemBuilder::filters(int64_t k) {
    p_.K = k;
    filters_set_ = true;
    return *this;
}
ProblemBuilder& ProblemBuilder::kernel(int64_t r, int64_t s) {
    p_.R = r, p_.S = s;
    return *this;
}
ProblemBuilder& ProblemBuilder::pad(int64_t both) {
    return pad(both, both);
}
ProblemBuilder& ProblemBuilder::pad(int64_t h, int64_t w) {
    p_.pad_h = h, p_.pad_w = w;
    return *this;
}
ProblemBuilder& ProblemBuilder::pads(int64_t top, int64_t bottom, int64_t left, int64_t right) {
    p_.set_padding(top, bottom, left, right);
    return *this;
}
ProblemBuilder& ProblemBuilder::stride(int64_t both) {
    return stride(both, both);
}
ProblemBuilder& ProblemBuilder::stride(int64_t h, int64_t w) {
    p_.stride_h = h, p_.stride_w = w;
    return *this;
}
ProblemBuilder& ProblemBuilder::dilation(int64_t both) {
    return dilation(both, both);
}
ProblemBuilder& ProblemBuilder::dilation(int64_t h, int64_t w) {
    p_.dilation_h = h, p_.dilation_w = w;
    return *this;
}
ProblemBuilder& ProblemBuilder::groups(int64_t g) {
    p_.groups = g;
    groups_set_ = true;
    return *this;
}
ProblemBuilder& ProblemBuilder::depthwise(int64_t multiplier) {
    multiplier_ = multiplier;
    return *this;
}
ProblemBuilder& ProblemBuilder::layout(vkconv::Layout layout) {
    p_.layout = layout;
    return *this;
}
ProblemBuilder& ProblemBuilder::bias(bool has_bias) {
    p_.has_bias = has_bias;
    return *this;
}

vkconv::ConvProblem ProblemBuilder::build() const {
    vkconv::ConvProblem p = p_;
    if (multiplier_) {
        if (filters_set_ || groups_set_)
            throw std::logic_error("vkt::problem(): depthwise() sets the filters and groups itself");
        p.groups = p.C;
        p.K = p.C * *multiplier_;
    }
    return p;
}

std::vector<NamedProblem> odd_problems() {
    return {
        {"1x1", problem().batch(2).channels(5).image(7, 6).filters(3).kernel(1, 1)},
        {"3x3", problem().batch(1).channels(3).image(9, 11).filters(5).kernel(3, 3)},
        {"3x3 pad 1", problem().batch(2).channels(7).image(8, 8).filters(6).kernel(3, 3).pad(1)},
        {"5x5 pad 2", problem().batch(1).channels(4).image(13, 10).filters(3).kernel(5, 5).pad(2)},
        {"7x7 stride 2 pad 3", problem().batch(1).channels(3).image(23, 19).filters(4).kernel(7, 7).pad(3).stride(2)},
        {"11x11 stride 4", problem().batch(1).channels(3).image(31, 27).filters(5).kernel(11, 11).stride(4)},
        {"stride 3", problem().batch(2).channels(5).image(17, 14).filters(3).kernel(3, 3).pad(1).stride(3)},
        {"stride larger than kernel", problem().batch(1).channels(6).image(15, 16).filters(4).kernel(2, 2).stride(3)},
        {"dilation 2", problem().batch(1).channels(5).image(14, 13).filters(3).kernel(3, 3).pad(2).dilation(2)},
        {"padding 0", problem().batch(3).channels(2).image(6, 5).filters(2).kernel(3, 3).pad(0)},
        {"padding 3", problem().batch(1).channels(3).image(5, 4).filters(2).kernel(3, 3).pad(3)},
        // Pads beyond the dilated kernel (torch and ONNX accept them): whole output rows and columns that see
        // only padding, at one side or both, with a stride that skips into and out of them, and a 1x1 kernel.
        {"padding 5 beyond a 3x3", problem().batch(2).channels(3).image(6, 5).filters(4).kernel(3, 3).pad(5)},
        {"1x1 pad 2", problem().batch(1).channels(5).image(4, 7).filters(3).kernel(1, 1).pad(2)},
        // The largest stride a problem allows: one output pixel, steps that must never be formed in 32 bits.
        {"stride 2^31-1", problem().batch(2).channels(2).image(5, 6).filters(3).kernel(3, 2).stride(2147483647)},
        {"pads 6,0,1,4 stride 2 dilation 2",
         problem().batch(1).channels(4).image(9, 7).filters(3).kernel(2, 3).pads(6, 0, 1, 4).stride(2).dilation(2)},
        {"depthwise pad 4 beyond a 3x3", problem().batch(2).channels(5).image(7, 6).filters(5).kernel(3, 3).pad(4).groups(5)},
        {"groups 2 pad 3 beyond a 2x2", problem().batch(1).channels(6).image(5, 8).filters(4).kernel(2, 2).pad(3, 2).stride(3, 1).groups(2)},
        {"groups 2", problem().batch(2).channels(6).image(9, 7).filters(4).kernel(3, 3).pad(1).groups(2)},
        {"groups 3", problem().batch(1).channels(9).image(8, 10).filters(6).kernel(3, 3).pad(1).stride(2).groups(3)},
        {"depthwise", problem().batch(2).channels(7).image(11, 9).filters(7).kernel(3, 3).pad(1).groups(7)},
        {"depthwise multiplier 2",
         problem().batch(1).channels(5).image(10, 8).filters(10).kernel(3, 3).pad(1).groups(5)},
        {"channels 23 to 19", problem().batch(1).channels(23).image(7, 9).filters(19).kernel(3, 3).pad(1)},
        {"27x37 image", problem().batch(1).channels(3).image(27, 37).filters(5).kernel(3, 3)},
        {"batch 3", problem().batch(3).channels(4).image(6, 7).filters(5).kernel(3, 3).pad(1)},
        {"single pixel", problem().batch(2).channels(3).image(1, 1).filters(4).kernel(1, 1)},
        {"kernel equals image", problem().batch(1).channels(4).image(5, 5).filters(3).kernel(5, 5)},
        // Found by review: MEC's next-row window step (2 floats) broke vec4 alignment; tiny filters were
        // shorter than one rgba32f texel.
        {"2x1 kernel, 2 channels", problem().batch(1).channels(2).image(4, 4).filters(1).kernel(2, 1)},
        {"2x1 kernel, 2 channels, batch 2", problem().batch(2).channels(2).image(4, 4).filters(3).kernel(2, 1)},
        {"tiny 1x1, 2 channels", problem().batch(1).channels(2).image(3, 3).filters(1).kernel(1, 1)},
        {"non-square kernel 3x5, pad 1,2",
         problem().batch(2).channels(3).image(13, 8).filters(4).kernel(3, 5).pad(1, 2)},
        {"tall kernel 5x1", problem().batch(1).channels(5).image(16, 9).filters(3).kernel(5, 1).pad(2, 0)},
        {"stride 2,3 dilation 2,1",
         problem().batch(1).channels(4).image(21, 17).filters(6).kernel(3, 2).pad(1, 0).stride(2, 3).dilation(2, 1)},
        // Channels and filters in whole vec4s (NHWC loads 4 channels at once), with a reduction, a tap count
        // and a filter count that end inside a register block, and groups of 8 channels and 4 filters.
        {"channels 8 to 12 pad 1", problem().batch(2).channels(8).image(9, 7).filters(12).kernel(3, 3).pad(1)},
        {"groups 2 of 8 channels, 4 filters",
         problem().batch(1).channels(16).image(11, 10).filters(8).kernel(3, 3).pad(1).stride(2).dilation(2).groups(2)},
        // Padding that differs between the sides: TensorFlow's SAME at stride 2 on an even image (one more at
        // the bottom and right), ONNX's SAME_LOWER (one more at the top and left), every pad different, only
        // an end pad, and a depthwise and a grouped problem with them.
        {"same-upper stride 2", problem().batch(2).channels(3).image(10, 8).filters(4).kernel(3, 3).pads(0, 1, 0, 1).stride(2)},
        {"same-lower stride 2", problem().batch(1).channels(5).image(9, 12).filters(3).kernel(4, 4).pads(2, 1, 2, 1).stride(2)},
        {"pads 2,0,1,3", problem().batch(1).channels(4).image(7, 6).filters(5).kernel(3, 5).pads(2, 0, 1, 3)},
        {"end pads only, dilation 2",
         problem().batch(1).channels(3).image(9, 9).filters(2).kernel(3, 3).pads(0, 4, 0, 3).dilation(2)},
        {"depthwise pads 0,1,1,0", problem().batch(2).channels(6).image(8, 9).filters(6).kernel(3, 3).pads(0, 1, 1, 0).stride(2).groups(6)},
        {"groups 2 pads 1,2,0,1",
         problem().batch(1).channels(8).image(7, 9).filters(4).kernel(3, 3).pads(1, 2, 0, 1).stride(1, 2).groups(2)},
    };
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

bool runs_every_pass(vkconv::Algorithm algorithm, const vkconv::ConvProblem& problem) {
    for (vkconv::Pass pass : {vkconv::Pass::Forward, vkconv::Pass::BackwardData, vkconv::Pass::BackwardFilter})
        if (!vkconv::algorithm_applies(algorithm, problem, pass)) return false;
    return true;
}

std::vector<vkconv::Algorithm> algorithms_for(const vkconv::ConvProblem& problem) {
    std::vector<vkconv::Algorithm> list;
    for (vkconv::Algorithm algorithm : vkconv::all_algorithms())
        if (runs_every_pass(algorithm, problem)) list.push_back(algorithm);
    return list;
}

vkconv::RunStats check_forward(vkconv::Context& context, const vkconv::ConvProblem& problem,
                               vkconv::Algorithm algorithm, uint32_t seed, const vkconv::PassOptions& options) {
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

namespace {

std::vector<float> make_values(const Values& values, int64_t count, uint32_t seed) {
    return values ? values(count, seed) : random_values(size_t(count), seed);
}

vkconv::ConvProblem with_bias_if(vkconv::ConvProblem problem, bool always) {
    problem.has_bias = problem.has_bias || always;
    return problem;
}

}  // namespace

BackwardCheck::BackwardCheck(vkconv::Context& context, const vkconv::ConvProblem& problem, uint32_t seed,
                             BackwardSetup setup)
    : context_(context),
      problem_(problem),
      filter_problem_(with_bias_if(problem, setup.bias_always)),
      compare_(setup.compare),
      x_(make_values(setup.values, problem.input_elements(), seed)),
      w_(make_values(setup.values, problem.filter_elements(), seed + 1)),
      dy_(make_values(setup.values, problem.output_elements(), seed + 2)) {
    const auto ax = absolute(x_), aw = absolute(w_), ady = absolute(dy_);
    dx_ref_ = vkconv::reference::backward_data(problem_, dy_, w_);
    dx_mag_ = vkconv::reference::backward_data(problem_, ady, aw);
    dw_ref_ = vkconv::reference::backward_filter(problem_, x_, dy_);
    dw_mag_ = vkconv::reference::backward_filter(problem_, ax, ady);
    db_ref_ = vkconv::reference::backward_bias(problem_, dy_);
    db_mag_ = vkconv::reference::backward_bias(problem_, ady);
    tx_ = vkconv::Tensor::from_host(context, problem_.input_shape(), x_);
    tw_ = vkconv::Tensor::from_host(context, problem_.filter_shape(), w_);
    tdy_ = vkconv::Tensor::from_host(context, problem_.output_shape(), dy_);
    tdx_ = vkconv::Tensor(context, problem_.input_shape());
    tdw_ = vkconv::Tensor(context, problem_.filter_shape());
    tdb_ = vkconv::Tensor(context, problem_.bias_shape());
}

CheckedRun BackwardCheck::data(vkconv::Algorithm algorithm, const vkconv::PassOptions& options) {
    INFO("backward_data with " << vkconv::to_string(algorithm) << ": " << problem_.str());
    tdx_.upload(poison(problem_.input_elements()));
    CheckedRun run;
    run.live = context_.pool_stats().in_use;
    run.stats = vkconv::backward_data(context_, problem_, tdy_, tw_, tdx_, algorithm, options);
    if (algorithm != vkconv::Algorithm::Auto) {
        CHECK(run.stats.algorithm == algorithm);
        CHECK(run.stats.workspace_bytes ==
              vkconv::backward_data_workspace_bytes(context_, problem_, algorithm, options));
    }
    check_dx(std::string(vkconv::to_string(algorithm)) + " backward_data");
    return run;
}

CheckedRun BackwardCheck::filter(vkconv::Algorithm algorithm, const vkconv::PassOptions& options) {
    INFO("backward_filter with " << vkconv::to_string(algorithm) << ": " << filter_problem_.str());
    tdw_.upload(poison(problem_.filter_elements()));
    tdb_.upload(poison(problem_.K));
    CheckedRun run;
    run.live = context_.pool_stats().in_use;
    run.stats = vkconv::backward_filter(context_, filter_problem_, tx_, tdy_, tdw_, writes_bias() ? &tdb_ : nullptr,
                                        algorithm, options);
    if (algorithm != vkconv::Algorithm::Auto) {
        CHECK(run.stats.algorithm == algorithm);
        CHECK(run.stats.workspace_bytes ==
              vkconv::backward_filter_workspace_bytes(context_, filter_problem_, algorithm, options));
    }
    const std::string what = std::string(vkconv::to_string(algorithm)) + " backward_filter";
    check_dw(what);
    if (writes_bias()) check_db(what + "'s bias");
    return run;
}

CheckedRun BackwardCheck::bias() {
    tdb_.upload(poison(problem_.K));
    CheckedRun run;
    run.live = context_.pool_stats().in_use;
    run.stats = vkconv::backward_bias(context_, filter_problem_, tdy_, tdb_);
    check_db("backward_bias");
    return run;
}

CheckedStep BackwardCheck::step(vkconv::Algorithm algorithm, const vkconv::PassOptions& options) {
    INFO("layer_backward with " << vkconv::to_string(algorithm) << ": " << filter_problem_.str());
    tdx_.upload(poison(problem_.input_elements()));
    tdw_.upload(poison(problem_.filter_elements()));
    tdb_.upload(poison(problem_.K));
    CheckedStep step;
    step.live = context_.pool_stats().in_use;
    step.stats = vkconv::layer_backward(context_, filter_problem_, tx_, tw_, tdy_, tdx_, tdw_,
                                        writes_bias() ? &tdb_ : nullptr, algorithm, options);
    if (algorithm != vkconv::Algorithm::Auto) {
        CHECK(step.stats.data_algorithm == algorithm);
        CHECK(step.stats.filter_algorithm == algorithm);
        CHECK(step.stats.step.workspace_bytes ==
              vkconv::layer_backward_workspace_bytes(context_, filter_problem_, algorithm, options));
    }
    const std::string what = std::string(vkconv::to_string(algorithm)) + " layer step";
    check_dx(what + " dx");
    check_dw(what + " dw");
    if (writes_bias()) check_db(what + " db");
    return step;
}

void BackwardCheck::check(const std::vector<float>& gpu, const std::vector<double>& reference,
                          const std::vector<double>& magnitude, int64_t reduction, const std::string& what) const {
    if (compare_ == Compare::Exact)
        check_exact(gpu, reference, magnitude, what + " " + problem_.str());
    else
        check_close(gpu, reference, magnitude, reduction, what + " " + problem_.str());
}

void BackwardCheck::check_dx(const std::string& what) {
    dx_ = tdx_.download();
    check(dx_, dx_ref_, dx_mag_, problem_.filters_per_group() * problem_.R * problem_.S, what);
}

void BackwardCheck::check_dw(const std::string& what) {
    dw_ = tdw_.download();
    check(dw_, dw_ref_, dw_mag_, problem_.N * problem_.P() * problem_.Q(), what);
}

void BackwardCheck::check_db(const std::string& what) {
    db_ = tdb_.download();
    check(db_, db_ref_, db_mag_, problem_.N * problem_.P() * problem_.Q(), what);
}

BackwardResult check_backward(vkconv::Context& context, const vkconv::ConvProblem& problem, vkconv::Algorithm algorithm,
                              uint32_t seed, const vkconv::PassOptions& options, BackwardSetup setup) {
    const bool bias = problem.has_bias || setup.bias_always;
    BackwardCheck check(context, problem, seed, std::move(setup));
    BackwardResult result;
    result.data = check.data(algorithm, options);
    result.filter = check.filter(algorithm, options);
    if (bias) result.bias = check.bias();
    return result;
}

}  // namespace vkt
