// The forward pass's fused epilogue, y = act(alpha * conv(x, w) + bias + beta * z) (vkconv::Epilogue): every
// algorithm, activation and kind of residual (none, a tensor of its own, the output itself) on odd shapes of
// the shared table in both layouts, with and without a bias; where a later shader writes y (MEC's Solution
// A, tiles) and where the pass runs in chunks and pieces, each value must see the epilogue exactly once; the
// default epilogue is the plain forward bit for bit; and every rule of the API is an error that names it.
//
// Outputs are poisoned with NaN before each run (an in-place residual is uploaded into y instead). The
// reference is vkconv::reference::forward in double with alpha, the bias, beta * z and the activation applied
// in double here; the bound is check_close's (n + 2) * u * magnitude with n = C/G*R*S plus the epilogue's
// three roundings (alpha's product, the bias's and the residual's terms), the magnitude computed on absolute
// values with the activation taken as the identity (every activation here moves a value by no more than its
// argument moves).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

#include "conv_cases.hpp"
#include "test_util.hpp"

using vkconv::Activation;
using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkconv::Layout;
using vkconv::Tensor;

namespace {

enum class Residual { None, Separate, InPlace };

const char* name_of(Residual residual) {
    switch (residual) {
        case Residual::None:
            return "no residual";
        case Residual::Separate:
            return "separate residual";
        case Residual::InPlace:
            return "in-place residual";
    }
    return "?";
}

struct Config {
    Activation activation = Activation::None;
    float alpha = 1.0f, beta = 0.0f;
    Residual residual = Residual::None;
    float slope = 0.01f;

    std::string str() const {
        std::ostringstream out;
        out << vkconv::to_string(activation) << " (slope " << slope << "), alpha " << alpha << ", beta " << beta << ", "
            << name_of(residual);
        return out.str();
    }
};

// Every activation, every kind of residual, alpha != 1 and beta != 0, and the default epilogue first.
// ReLU6 runs with a large alpha so that values reach past 6.
const std::vector<Config>& configs() {
    static const std::vector<Config> list = {
        {Activation::None, 1.0f, 0.0f, Residual::None},
        {Activation::ReLU, 0.75f, 0.5f, Residual::Separate},
        {Activation::ReLU6, 3.5f, -1.25f, Residual::InPlace},
        {Activation::LeakyReLU, -1.5f, 2.0f, Residual::Separate, 0.2f},
        {Activation::None, 1.0f, 1.0f, Residual::InPlace},
        {Activation::ReLU, 1.0f, 0.0f, Residual::None},
        {Activation::LeakyReLU, 1.0f, 0.5f, Residual::InPlace, 0.1f},
        {Activation::ReLU6, 2.0f, 0.0f, Residual::None},
    };
    return list;
}

double activate(Activation activation, double v, double slope) {
    switch (activation) {
        case Activation::None:
            return v;
        case Activation::ReLU:
            return std::max(v, 0.0);
        case Activation::ReLU6:
            return std::min(std::max(v, 0.0), 6.0);
        case Activation::LeakyReLU:
            return v < 0 ? slope * v : v;
    }
    return v;
}

// Output channel of element i of an output-shaped tensor.
int64_t channel_of(const ConvProblem& p, int64_t i) {
    return p.layout == Layout::NHWC ? i % p.K : (i / (p.P() * p.Q())) % p.K;
}

struct Expected {
    std::vector<double> value, magnitude;
};

Expected expected_forward(const ConvProblem& p, const std::vector<float>& x, const std::vector<float>& w,
                          const std::vector<float>& b, const std::vector<float>& z, const Config& c) {
    ConvProblem plain = p;
    plain.has_bias = false;
    const auto conv = vkconv::reference::forward(plain, x, w);
    const auto conv_magnitude = vkconv::reference::forward(plain, vkt::absolute(x), vkt::absolute(w));
    Expected e{std::vector<double>(conv.size()), std::vector<double>(conv.size())};
    for (size_t i = 0; i < conv.size(); ++i) {
        const double bias = b.empty() ? 0.0 : double(b[size_t(channel_of(p, int64_t(i)))]);
        const double residual = c.residual == Residual::None ? 0.0 : double(z[i]);
        e.value[i] = activate(c.activation, double(c.alpha) * conv[i] + bias + double(c.beta) * residual, c.slope);
        e.magnitude[i] = std::fabs(double(c.alpha)) * conv_magnitude[i] + std::fabs(bias) +
                         std::fabs(double(c.beta)) * std::fabs(residual);
    }
    return e;
}

int64_t reduction_length(const ConvProblem& p) {
    return p.channels_per_group() * p.R * p.S + 3;
}

struct Checked {
    vkconv::RunStats stats;
    std::vector<float> y;
    Expected expected;
};

// Runs forward with the epilogue of `c` on fresh operands from `seed` and checks every value of y against the
// reference (and that a separate residual was only read). `plain_y`: the plain forward's result to compare
// with bit for bit (the default epilogue).
Checked check_epilogue(vkconv::Context& context, const ConvProblem& p, Algorithm algorithm, const Config& c,
                       uint32_t seed, const vkconv::PassOptions& options = {}) {
    const std::string what = std::string(vkconv::to_string(algorithm)) + " forward, " + c.str() + ": " + p.str();
    INFO(what);
    const auto x = vkt::random_values(size_t(p.input_elements()), seed);
    const auto w = vkt::random_values(size_t(p.filter_elements()), seed + 1);
    const auto b = p.has_bias ? vkt::random_values(size_t(p.K), seed + 2) : std::vector<float>{};
    const auto z = vkt::random_values(size_t(p.output_elements()), seed + 3, -2.0f, 2.0f);
    auto tx = Tensor::from_host(context, p.input_shape(), x);
    auto tw = Tensor::from_host(context, p.filter_shape(), w);
    Tensor tb;
    if (p.has_bias) tb = Tensor::from_host(context, p.bias_shape(), b);
    auto ty = Tensor::from_host(context, p.output_shape(),
                                c.residual == Residual::InPlace ? z : vkt::poison(p.output_elements()));
    Tensor tz;
    if (c.residual == Residual::Separate) tz = Tensor::from_host(context, p.output_shape(), z);

    vkconv::Epilogue epilogue;
    epilogue.alpha = c.alpha;
    epilogue.beta = c.beta;
    epilogue.activation = c.activation;
    epilogue.negative_slope = c.slope;
    epilogue.residual = c.residual == Residual::Separate ? &tz : c.residual == Residual::InPlace ? &ty : nullptr;
    Checked run;
    run.stats = vkconv::forward(context, p, tx, tw, p.has_bias ? &tb : nullptr, ty, algorithm, options, epilogue);
    run.y = ty.download();
    run.expected = expected_forward(p, x, w, b, z, c);
    vkt::check_close(run.y, run.expected.value, run.expected.magnitude, reduction_length(p), what);
    if (c.residual == Residual::Separate) CHECK(tz.download() == z);
    if (algorithm != Algorithm::Auto) CHECK(run.stats.algorithm == algorithm);
    // An epilogue needs no workspace: the query (which knows nothing of it) is what the pass used.
    CHECK(run.stats.workspace_bytes == vkconv::forward_workspace_bytes(context, p, algorithm, options));
    return run;
}

// The plain forward of the same operands (seed as check_epilogue draws them), for the bit-for-bit comparison.
std::vector<float> plain_forward(vkconv::Context& context, const ConvProblem& p, Algorithm algorithm, uint32_t seed,
                                 const vkconv::PassOptions& options = {}) {
    auto tx = Tensor::from_host(context, p.input_shape(), vkt::random_values(size_t(p.input_elements()), seed));
    auto tw = Tensor::from_host(context, p.filter_shape(), vkt::random_values(size_t(p.filter_elements()), seed + 1));
    Tensor tb;
    if (p.has_bias) tb = Tensor::from_host(context, p.bias_shape(), vkt::random_values(size_t(p.K), seed + 2));
    auto ty = Tensor::from_host(context, p.output_shape(), vkt::poison(p.output_elements()));
    vkconv::forward(context, p, tx, tw, p.has_bias ? &tb : nullptr, ty, algorithm, options);
    return ty.download();
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Which side of each activation's kinks the expected values reached, over a sweep: a sweep that never sees a
// negative value (or one past 6) would not test ReLU (ReLU6).
struct Coverage {
    bool negative = false, above_six = false;
    void add(const Expected& e, const Config& c) {
        for (size_t i = 0; i < e.value.size(); ++i) {
            // The argument of the activation, recovered where the activation kept it.
            const double v = e.value[i];
            if (c.activation == Activation::ReLU && v == 0.0) negative = true;
            if (c.activation == Activation::ReLU6 && v == 6.0) above_six = true;
        }
    }
};

// The shapes of the sweep: named cases of the shared table (kernel sizes, stride, padding, dilation, groups, a
// depthwise problem), each run in both layouts, the bias alternating so every algorithm sees both.
std::vector<vkt::NamedProblem> sweep_problems(bool all) {
    const std::vector<std::string> subset = {"3x3 pad 1", "7x7 stride 2 pad 3", "groups 3", "depthwise multiplier 2"};
    std::vector<vkt::NamedProblem> chosen;
    for (auto& named : vkt::odd_problems())
        if (all || std::count(subset.begin(), subset.end(), named.name)) chosen.push_back(named);
    return chosen;
}

// Every configuration for every algorithm of `layout` on the chosen shapes; the default configuration is also
// compared with the plain forward bit for bit.
void sweep(vkconv::Context& context, Layout layout, bool all) {
    Coverage relu, relu6;
    uint32_t seed = layout == Layout::NCHW ? 100 : 5100;
    int index = 0;
    for (const auto& [name, problem] : sweep_problems(all)) {
        ConvProblem p = problem;
        p.layout = layout;
        for (Algorithm algorithm : vkt::algorithms_for(p)) {
            for (size_t i = 0; i < configs().size(); ++i) {
                // The bias alternates over configurations, shapes and layouts: each algorithm and configuration
                // runs with and without one.
                p.has_bias = (i + size_t(index) + (layout == Layout::NHWC ? 1 : 0)) % 2 == 0;
                const Config& c = configs()[i];
                INFO(name);
                const Checked run = check_epilogue(context, p, algorithm, c, seed);
                if (i == 0) CHECK(same_bits(run.y, plain_forward(context, p, algorithm, seed)));
                if (c.activation == Activation::ReLU) relu.add(run.expected, c);
                if (c.activation == Activation::ReLU6) relu6.add(run.expected, c);
                seed += 4;
            }
        }
        ++index;
    }
    CHECK(relu.negative);
    CHECK(relu6.above_six);
}

}  // namespace

TEST_CASE("epilogue: every algorithm, activation and residual on odd NCHW shapes", "[epilogue][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    sweep(*context, Layout::NCHW, false);
}

TEST_CASE("epilogue: every algorithm, activation and residual on odd NHWC shapes", "[epilogue][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    sweep(*context, Layout::NHWC, false);
}

TEST_CASE("epilogue: every shape of the odd table, both layouts", "[epilogue][gpu][slow]") {
    VKT_REQUIRE_CONTEXT(context);
    sweep(*context, Layout::NCHW, true);
    sweep(*context, Layout::NHWC, true);
}

TEST_CASE("epilogue: MEC's Solutions A and B apply it once, where y is written", "[epilogue][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    uint32_t seed = 300;
    // Two images: Solution A parks the result and moves it with a permute in both layouts; one NHWC image
    // writes y from its GEMM. Stride 2 and dilation make the windows uneven.
    const ConvProblem two = vkt::problem().batch(2).channels(5).image(11, 9).filters(6).kernel(3, 3).pad(1).stride(2);
    const ConvProblem one =
        vkt::problem().batch(1).channels(4).image(10, 12).filters(7).kernel(3, 2).pad(1).dilation(2, 1);
    for (const auto& [schedule, expected] :
         {std::pair<std::string, std::string>{"A", "A"}, {"B", "B"}})
        for (Layout layout : {Layout::NCHW, Layout::NHWC})
            for (ConvProblem p : {two, one}) {
                p.layout = layout;
                vkconv::PassOptions options;
                options.variant = schedule;
                for (size_t i = 0; i < configs().size(); ++i) {
                    p.has_bias = i % 2 == 1;
                    const Checked run = check_epilogue(*context, p, Algorithm::Mec, configs()[i], seed += 4, options);
                    CHECK(run.stats.variant == expected);
                }
            }
}

TEST_CASE("epilogue: chunks, bands, tiles and split reductions apply it exactly once", "[epilogue][gpu]") {
    // Leaky ReLU applied twice scales by slope^2, a residual added twice doubles: both fail the comparison.
    const std::vector<Config> once = {
        {Activation::LeakyReLU, 1.25f, 1.0f, Residual::InPlace, 0.25f},
        {Activation::LeakyReLU, 0.5f, -0.75f, Residual::Separate, 0.3f},
        {Activation::ReLU6, 3.0f, 0.0f, Residual::None},
    };
    uint32_t seed = 500;
    SECTION("chunks of images and bands of rows (binding and workspace limits)") {
        VKT_REQUIRE_CONTEXT(context);
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            const ConvProblem p =
                vkt::problem().batch(3).channels(5).image(14, 11).filters(6).kernel(3, 3).pad(1).layout(layout).bias();
            const ConvProblem dw = vkt::problem()
                                       .batch(3)
                                       .channels(6)
                                       .depthwise(2)
                                       .image(14, 11)
                                       .kernel(3, 3)
                                       .pad(1)
                                       .layout(layout)
                                       .bias();
            for (Algorithm algorithm : {Algorithm::Im2col, Algorithm::Mec, Algorithm::Depthwise}) {
                const ConvProblem& q = algorithm == Algorithm::Depthwise ? dw : p;
                // 8 KiB binds one image of x or y (at most 7,392 bytes) but not three, nor one image's lowered
                // matrix: chunks of one image (depthwise), bands of rows (im2col, MEC), never tiles.
                std::vector<vkconv::PassOptions> limits(1);
                limits[0].max_binding_bytes = 8192;
                if (algorithm != Algorithm::Depthwise) {
                    limits.emplace_back();  // half the workspace: chunks of fewer images
                    limits[1].workspace_limit = vkconv::forward_workspace_bytes(*context, q, algorithm) / 2;
                }
                for (const vkconv::PassOptions& options : limits)
                    for (const Config& c : once) {
                        INFO(vkconv::to_string(algorithm)
                             << " " << c.str() << " " << q.str() << " binding limit " << options.max_binding_bytes
                             << ", workspace limit " << options.workspace_limit);
                        const Checked run = check_epilogue(*context, q, algorithm, c, seed += 4, options);
                        CHECK(run.stats.chunks > 1);
                    }
            }
        }
    }
    SECTION("tiles of tensors too large to bind") {
        auto context = vkt::fresh_context(vkt::test_options(), {.max_storage_buffer_range = 4096});
        if (!context) return;
        const std::vector<ConvProblem> tiled = {
            // an image beyond the limit: bands of rows
            vkt::problem().batch(2).channels(5).image(23, 17).filters(6).kernel(3, 3).pad(1),
            // the filter beyond the limit: pieces of the filters
            vkt::problem().batch(2).channels(16).image(6, 5).filters(20).kernel(3, 3).pad(1, 0),
            vkt::problem().batch(2).channels(6).depthwise(2).image(19, 18).kernel(3, 3).pad(1),
        };
        for (Layout layout : {Layout::NCHW, Layout::NHWC})
            for (ConvProblem p : tiled) {
                p.layout = layout;
                p.has_bias = true;
                for (Algorithm algorithm : vkt::algorithms_for(p))
                    for (const Config& c : once) {
                        const Checked run = check_epilogue(*context, p, algorithm, c, seed += 4);
                        CHECK(run.stats.chunks > uint32_t(p.N));  // tiles
                    }
            }
    }
}

namespace {

// How many dispatches of shaders whose names start with `prefix` `algorithm`'s forward of `p` records.
size_t planned_dispatches(vkconv::Context& context, const ConvProblem& p, Algorithm algorithm,
                          const std::string& prefix) {
    const vkconv::Plan plan = vkconv::plan_pass(vkconv::DeviceProfile::of(context), p, vkconv::Pass::Forward,
                                                algorithm, {});
    return size_t(std::count_if(plan.dispatches.begin(), plan.dispatches.end(), [&](const vkconv::PlannedDispatch& d) {
        return d.name.rfind(prefix, 0) == 0;
    }));
}

// The shader of each algorithm's reduction, which runs it in pieces past the loop limit.
std::string reduction_shader(Algorithm algorithm) {
    switch (algorithm) {
        case Algorithm::Direct:
            return "conv2d_direct";
        case Algorithm::ImplicitGemm:
            return "implicit_gemm";
        default:
            return "gemm_";  // im2col and MEC: the GEMM over the lowered matrix
    }
}

// C*R*S = 73728, four times what one invocation may loop over (shader_limits.hpp): direct and implicit GEMM run
// their reduction in pieces and the GEMM its K in pieces, each piece after the first adding into y. Every
// algorithm, both layouts, a residual of its own and one in y. Small integers, alpha 2, beta -1, leaky slope 0.5
// keep every value exact in fp32: the comparison is equality, so a residual added by every piece, one read after
// y was overwritten, or an activation applied to a partial sum, fails.
ConvProblem long_reduction_problem(Layout layout) {
    return vkt::problem().batch(1).channels(8192).image(5, 6).filters(4).kernel(3, 3).layout(layout).bias();
}

void check_split_epilogue(vkconv::Context& context, const std::string& device) {
    auto integers = [](int64_t count, uint32_t seed) {
        std::mt19937 rng(seed);
        std::uniform_int_distribution<int> pick(-2, 2);
        std::vector<float> v(static_cast<size_t>(count));
        for (float& f : v) f = float(pick(rng));
        return v;
    };
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        const ConvProblem p = long_reduction_problem(layout);
        const auto x = integers(p.input_elements(), 1), w = integers(p.filter_elements(), 2), b = integers(p.K, 3);
        const auto z = integers(p.output_elements(), 4);
        auto tx = Tensor::from_host(context, p.input_shape(), x);
        auto tw = Tensor::from_host(context, p.filter_shape(), w);
        auto tb = Tensor::from_host(context, p.bias_shape(), b);
        for (Algorithm algorithm : vkt::algorithms_for(p)) {
            INFO(device << ": " << vkconv::to_string(algorithm) << " " << p.str());
            // The reduction does run in pieces (else this case tests nothing about them).
            REQUIRE(planned_dispatches(context, p, algorithm, reduction_shader(algorithm)) >= 2);
            for (Residual residual : {Residual::InPlace, Residual::Separate}) {
                const Config c{Activation::LeakyReLU, 2.0f, -1.0f, residual, 0.5f};
                INFO(c.str());
                auto ty = Tensor::from_host(context, p.output_shape(),
                                            residual == Residual::InPlace ? z : vkt::poison(p.output_elements()));
                auto tz = Tensor::from_host(context, p.output_shape(), z);
                vkconv::Epilogue e{c.alpha, c.beta, residual == Residual::InPlace ? &ty : &tz, c.activation, c.slope};
                const auto stats = vkconv::forward(context, p, tx, tw, &tb, ty, algorithm, {}, e);
                CHECK(stats.algorithm == algorithm);
                const Expected expected = expected_forward(p, x, w, b, z, c);
                vkt::check_exact(ty.download(), expected.value, expected.magnitude, "long reduction with an epilogue");
                if (residual == Residual::Separate) CHECK(tz.download() == z);
            }
        }
    }
}

// A context with `storage_buffers` storage buffers per stage imposed, so other builds of the kernels run.
std::unique_ptr<vkconv::Context> context_with_storage_buffers(const vkt::TempDir& dir, uint32_t storage_buffers) {
    auto options = vkt::test_options();
    options.device_limits = vkt::profile_with_limits(dir, {.storage_buffers = storage_buffers});
    return vkt::fresh_context(options);
}

}  // namespace

TEST_CASE("epilogue: reductions split past the loop limit apply it exactly once", "[epilogue][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    // The device's own kernels: on a CPU device implicit GEMM's register kernel (7 bindings), elsewhere its
    // shared-memory one.
    check_split_epilogue(*context, "the device's own limits");
}

TEST_CASE("epilogue: reductions split past the loop limit apply it exactly once, with 6 and 4 storage buffers",
          "[epilogue][limits][gpu]") {
    // 6 storage buffers: implicit GEMM's shared-memory kernel on every device; 4: the 4-binding builds of direct,
    // implicit GEMM and the storage-buffer GEMM, the residual read from y.
    vkt::TempDir dir("vkconv-epilogue-limits");
    for (uint32_t storage_buffers : {6u, 4u}) {
        auto context = context_with_storage_buffers(dir, storage_buffers);
        if (!context) return;
        check_split_epilogue(*context, std::to_string(storage_buffers) + " storage buffers per stage");
        // The builds meant for these limits are the ones that ran in pieces.
        for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
            const ConvProblem p = long_reduction_problem(layout);
            INFO(storage_buffers << " storage buffers, " << p.str());
            CHECK(planned_dispatches(*context, p, Algorithm::ImplicitGemm,
                                     storage_buffers == 6 ? "implicit_gemm_t" : "implicit_gemm_4_t") >= 2);
            if (storage_buffers == 4) CHECK(planned_dispatches(*context, p, Algorithm::Direct, "conv2d_direct_4") >= 2);
        }
    }
}

namespace {

void check_auto_with_epilogue(vkconv::Context& context, const ConvProblem& p, const Config& c) {
    vkconv::PassOptions heuristic;
    heuristic.auto_choice = vkconv::AutoChoice::Heuristic;
    const Checked by_rule = check_epilogue(context, p, Algorithm::Auto, c, 700, heuristic);
    CHECK(by_rule.stats.algorithm == vkconv::choose_forward_algorithm(context, p, heuristic));
    const Checked measured = check_epilogue(context, p, Algorithm::Auto, c, 704);
    CHECK(measured.stats.algorithm != Algorithm::Auto);
    CHECK(measured.stats.peak_bytes == measured.stats.operand_bytes + measured.stats.workspace_bytes);
    Config in_place = c;
    in_place.residual = Residual::InPlace;
    check_epilogue(context, p, Algorithm::Auto, in_place, 708);
}

void check_recorded_epilogue(vkconv::Context& context, const ConvProblem& p, const Config& c) {
    const auto x = vkt::random_values(size_t(p.input_elements()), 1);
    const auto w = vkt::random_values(size_t(p.filter_elements()), 2);
    const auto b = vkt::random_values(size_t(p.K), 3), z = vkt::random_values(size_t(p.output_elements()), 4);
    auto tx = Tensor::from_host(context, p.input_shape(), x),
         tw = Tensor::from_host(context, p.filter_shape(), w);
    auto tb = Tensor::from_host(context, p.bias_shape(), b);
    for (Algorithm algorithm : vkt::algorithms_for(p))
        for (Residual residual : {Residual::Separate, Residual::InPlace}) {
            Config rc = c;
            rc.residual = residual;
            INFO("recorded " << vkconv::to_string(algorithm) << " " << rc.str());
            auto ty = Tensor::from_host(context, p.output_shape(),
                                        residual == Residual::InPlace ? z : vkt::poison(p.output_elements()));
            auto tz = Tensor::from_host(context, p.output_shape(), z);
            const vkconv::Epilogue e{rc.alpha, rc.beta, residual == Residual::InPlace ? &ty : &tz, rc.activation,
                                     rc.slope};
            vkconv::Recording recording(context);
            const auto stats = vkconv::forward(recording, p, tx, tw, &tb, ty, algorithm, {}, e);
            CHECK(stats.algorithm == algorithm);
            recording.submit().wait();
            const Expected expected = expected_forward(p, x, w, b, z, rc);
            vkt::check_close(ty.download(), expected.value, expected.magnitude, reduction_length(p), "recorded");
        }
}

// One algorithm with y one entry into one larger tensor and z two entries into another (or y itself): the
// result is right and nothing around the views is touched.
void check_epilogue_on_views(vkconv::Context& context, const ConvProblem& q, const Config& c, Algorithm algorithm,
                             Residual residual, int64_t entry, const vkconv::Shape& outer, const std::vector<float>& x,
                             const std::vector<float>& w, const std::vector<float>& b, const std::vector<float>& z,
                             const Tensor& tx, const Tensor& tw, const Tensor& tb) {
    Config rc = c;
    rc.residual = residual;
    INFO("views, " << vkconv::to_string(algorithm) << " " << rc.str() << " " << q.str());
    std::vector<float> around(size_t(vkconv::shape_elements(outer)), 1234.5f);
    if (residual == Residual::InPlace) std::copy(z.begin(), z.end(), around.begin() + entry);
    auto y_whole = Tensor::from_host(context, outer, around);
    Tensor ty = y_whole.images(1, q.N);
    std::vector<float> z_around(size_t(vkconv::shape_elements(outer)), -99.0f);
    std::copy(z.begin(), z.end(), z_around.begin() + 2 * entry);
    auto z_whole = Tensor::from_host(context, outer, z_around);
    Tensor tz = z_whole.images(2, q.N);
    const vkconv::Epilogue e{rc.alpha, rc.beta, residual == Residual::InPlace ? &ty : &tz,
                             rc.activation, rc.slope};
    vkconv::forward(context, q, tx, tw, &tb, ty, algorithm, {}, e);
    const Expected expected = expected_forward(q, x, w, b, z, rc);
    vkt::check_close(ty.download(), expected.value, expected.magnitude, reduction_length(q), "view");
    const auto all = y_whole.download();
    for (int64_t i = 0; i < entry; ++i) {
        REQUIRE(all[size_t(i)] == 1234.5f);
        REQUIRE(all[all.size() - size_t(entry) + size_t(i)] == 1234.5f);
    }
    CHECK(z_whole.download() == z_around);
}

void check_views_off_alignment(vkconv::Context& context, const Config& c) {
    // Entries of an odd number of floats: a view one entry in starts off any alignment.
    ConvProblem q = vkt::problem().batch(2).channels(3).image(7, 5).filters(3).kernel(3, 3).pad(1).bias();
    const int64_t entry = q.K * q.P() * q.Q();
    REQUIRE(entry % 2 == 1);
    for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        q.layout = layout;
        const auto x = vkt::random_values(size_t(q.input_elements()), 11);
        const auto w = vkt::random_values(size_t(q.filter_elements()), 12);
        const auto b = vkt::random_values(size_t(q.K), 13), z = vkt::random_values(size_t(q.output_elements()), 14);
        auto tx = Tensor::from_host(context, q.input_shape(), x),
             tw = Tensor::from_host(context, q.filter_shape(), w);
        auto tb = Tensor::from_host(context, q.bias_shape(), b);
        vkconv::Shape outer = q.output_shape();
        outer[0] += 2;
        for (Algorithm algorithm : vkt::algorithms_for(q))
            for (Residual residual : {Residual::Separate, Residual::InPlace})
                check_epilogue_on_views(context, q, c, algorithm, residual, entry, outer, x, w, b, z, tx, tw, tb);
    }
}

}  // namespace

TEST_CASE("epilogue: Auto, recordings and views", "[epilogue][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const ConvProblem p = vkt::problem().batch(2).channels(6).image(9, 8).filters(5).kernel(3, 3).pad(1).bias();
    const Config c{Activation::LeakyReLU, 1.5f, 0.75f, Residual::Separate, 0.05f};
    SECTION("Auto measures and follows the heuristic with an epilogue") { check_auto_with_epilogue(*context, p, c); }
    SECTION("a recorded forward applies it when submitted") { check_recorded_epilogue(*context, p, c); }
    SECTION("residual and output views off the offset alignment") { check_views_off_alignment(*context, c); }
}

TEST_CASE("epilogue: activation names", "[epilogue]") {
    for (Activation a : {Activation::None, Activation::ReLU, Activation::ReLU6, Activation::LeakyReLU})
        CHECK(vkconv::parse_activation(vkconv::to_string(a)) == a);
    CHECK(std::string(vkconv::to_string(Activation::LeakyReLU)) == "leaky-relu");
    CHECK(vkconv::parse_activation("ReLU6") == Activation::ReLU6);
    CHECK_THAT(vkt::invalid_argument_message([] { vkconv::parse_activation("gelu"); }),
               Catch::Contains("gelu") && Catch::Contains("leaky-relu"));
    CHECK_THAT(vkt::invalid_argument_message([] { vkconv::parse_activation(""); }), Catch::Contains("activation"));
}

TEST_CASE("epilogue: every rule is an error that names it", "[epilogue][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const ConvProblem p = vkt::problem().batch(2).channels(3).image(6, 5).filters(4).kernel(3, 3).pad(1).bias();
    auto tx = Tensor::from_host(*context, p.input_shape(), vkt::random_values(size_t(p.input_elements()), 1));
    auto tw = Tensor::from_host(*context, p.filter_shape(), vkt::random_values(size_t(p.filter_elements()), 2));
    auto tb = Tensor::from_host(*context, p.bias_shape(), vkt::random_values(size_t(p.K), 3));
    Tensor ty(*context, p.output_shape()), tz(*context, p.output_shape());
    auto message = [&](const vkconv::Epilogue& e, Tensor& y) {
        return vkt::invalid_argument_message(
            [&] { vkconv::forward(*context, p, tx, tw, &tb, y, Algorithm::Direct, {}, e); });
    };
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();

    CHECK_THAT(message({1.0f, 0.5f, nullptr}, ty), Catch::Contains("beta") && Catch::Contains("no residual"));
    CHECK_THAT(message({1.0f, 0.0f, &tz}, ty), Catch::Contains("residual") && Catch::Contains("beta is 0"));
    CHECK_THAT(message({nan, 1.0f, &tz}, ty), Catch::Contains("alpha") && Catch::Contains("finite"));
    CHECK_THAT(message({inf, 0.0f, nullptr}, ty), Catch::Contains("alpha") && Catch::Contains("finite"));
    CHECK_THAT(message({1.0f, -inf, &tz}, ty), Catch::Contains("beta") && Catch::Contains("finite"));
    CHECK_THAT(message({1.0f, 0.0f, nullptr, Activation::LeakyReLU, nan}, ty),
               Catch::Contains("negative_slope") && Catch::Contains("finite"));
    CHECK_THAT(message({1.0f, 0.0f, nullptr, static_cast<Activation>(7)}, ty), Catch::Contains("activation"));

    // The residual: the output's shape, non-empty, this context's.
    Tensor wrong(*context, {p.N, p.K, p.P(), p.Q() + 1});
    CHECK_THAT(message({1.0f, 1.0f, &wrong}, ty), Catch::Contains("residual"));
    Tensor empty;
    CHECK_THAT(message({1.0f, 1.0f, &empty}, ty), Catch::Contains("residual") && Catch::Contains("empty"));
    auto other = vkt::fresh_context();
    if (other) {
        Tensor foreign(*other, p.output_shape());
        CHECK_THAT(message({1.0f, 1.0f, &foreign}, ty),
                   Catch::Contains("residual") && Catch::Contains("another context"));
    }
    // Partly the output: a view over one image of a larger tensor the output is also a view of.
    vkconv::Shape three = p.output_shape();
    three[0] = 3;
    Tensor both(*context, three);
    Tensor y_view = both.images(0, 2), z_view = both.images(1, 2);
    CHECK_THAT(message({1.0f, 1.0f, &z_view}, y_view), Catch::Contains("residual") && Catch::Contains("output"));
    // The same memory as the output through another tensor object is the in-place case, and fine.
    Tensor y_again = both.images(0, 2);
    CHECK_NOTHROW(vkconv::forward(*context, p, tx, tw, &tb, y_view, Algorithm::Direct, {}, vkconv::Epilogue{1.0f, 1.0f, &y_again}));
    // Shares memory with the input or the filter: a problem whose input, filter and output are all
    // [4, 4, 3, 3], as views of one tensor. (A bias is one-dimensional: only two tensors over one application
    // buffer, interop.hpp's wrap_buffer, could overlap it; the same check covers it.)
    {
        const ConvProblem square = vkt::problem().batch(4).channels(4).image(3, 3).filters(4).kernel(3, 3).pad(1);
        REQUIRE(square.input_shape() == square.output_shape());
        REQUIRE(square.filter_shape() == square.output_shape());
        vkconv::Shape eight = square.output_shape();
        eight[0] = 12;
        auto shared = Tensor::from_host(*context, eight, vkt::random_values(size_t(vkconv::shape_elements(eight)), 9));
        Tensor x = shared.images(0, 4), w = shared.images(4, 4), y(*context, square.output_shape());
        auto refused = [&](const Tensor& z) {
            return vkt::invalid_argument_message([&] {
                vkconv::forward(*context, square, x, w, nullptr, y, Algorithm::Direct, {}, vkconv::Epilogue{1.0f, 1.0f, &z});
            });
        };
        CHECK_THAT(refused(shared.images(0, 4)), Catch::Contains("residual") && Catch::Contains("input"));
        CHECK_THAT(refused(shared.images(2, 4)), Catch::Contains("residual") && Catch::Contains("input"));
        CHECK_THAT(refused(shared.images(5, 4)), Catch::Contains("residual") && Catch::Contains("filter"));
        const Tensor apart = shared.images(8, 4);  // the same tensor, no byte in common
        CHECK_NOTHROW(vkconv::forward(*context, square, x, w, nullptr, y, Algorithm::Direct, {}, vkconv::Epilogue{1.0f, 1.0f, &apart}));
    }
    // Nothing was run by a refused call: a refused pass leaves y as it was.
    const auto before = vkt::poison(p.output_elements());
    ty.upload(before);
    message({1.0f, 0.5f, nullptr}, ty);
    CHECK_FALSE(vkt::all_written(ty.download()));
}
