// The separable layer's operands and its --check against the CPU reference.
//
// 16-bit layers: the reference is the exact layer (double) on the inputs as the tensors hold them, and each
// output value is held to its own bound. A pass's output ŷ of an fp32 sum of m terms meets the stated bound
// (docs/algorithms.md, "Element types")
//     |ŷ − y| ≤ (1 + u_t)·E + u_t·|y| + η,   E = γ_m·Σ|terms|,   γ_m = m·u / (1 − m·u),   u = 2^-24,
// u_t = 2^-11 (fp16) or 2^-8 (bf16), η = 2^-25 (fp16: half its smallest subnormal) or 0 (bf16), with m the
// terms' count plus 2, as the library's own bound counts them. The layer chains passes, and a rounded 16-bit
// intermediate feeds the next one; the check treats each intermediate in one of two ways:
//  - computed the same way: the differences f2 − f1 and f2 − f3 are one correctly rounded fp32 subtraction
//    rounded to nearest even, which the host reproduces bit for bit (narrowed by the library's own upload), so
//    the reference convolves the rounded differences, as the GPU does;
//  - carried in the bound: an intermediate that is a convolution's output (z after its first pass, e1 and e3,
//    g + e1, the partial kernel gradients of each chunk) cannot be reproduced (its fp32 summation order is the
//    algorithm's), so its bound Δ is carried into the next pass, whose input then differs from the exact one
//    by at most Δ: the next bound is (1 + u_t)·(γ_m·(Σ|terms| + Δ) + Δ) + u_t·|y| + η.
// Negation (df1 = −e1, df3 = −e3) is exact in fp32 and in the rounding, so it adds nothing.
#include "check.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>

namespace separable {

using vkconv::shape_elements;
using vkconv::Tensor;
namespace ref = vkconv::reference;

namespace {

// Deterministic values in [-1, 1) without the cost of <random> on half a gigabyte.
std::vector<float> values(int64_t count, uint32_t seed) {
    std::vector<float> v(static_cast<size_t>(count));
    uint32_t s = seed * 2654435761u + 1;
    for (float& x : v) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        x = static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
    return v;
}

// Uploads `host` in `type` and keeps, in `host`, the values the tensor holds (16-bit: narrowed).
Tensor upload(vkconv::Context& context, const vkconv::Shape& shape, std::vector<float>& host, vkconv::DataType type) {
    Tensor t = Tensor::from_host(context, shape, host, type);
    if (type != vkconv::DataType::F32) host = t.download();
    return t;
}

}  // namespace

Operands make_operands(vkconv::Context& context, const Layer& layer, const Shape& shape) {
    Operands o;
    const vkconv::DataType type = layer.type();
    const vkconv::ConvProblem p = layer.problem(shape.clips());
    vkconv::Shape frames_shape = p.input_shape();
    frames_shape[0] = shape.frames;
    o.host_frames = values(shape_elements(frames_shape), 1);
    o.host_k_minus = values(shape_elements(p.filter_shape()), 2);
    o.host_k_plus = values(shape_elements(p.filter_shape()), 3);
    o.host_b1 = values(p.K, 4);
    o.host_b2 = values(p.K, 5);
    o.host_g = values(shape_elements(p.output_shape()), 6);
    o.frames = upload(context, frames_shape, o.host_frames, type);
    o.k_minus = upload(context, p.filter_shape(), o.host_k_minus, type);
    o.k_plus = upload(context, p.filter_shape(), o.host_k_plus, type);
    o.b1 = upload(context, p.bias_shape(), o.host_b1, type);
    o.b2 = upload(context, p.bias_shape(), o.host_b2, type);
    o.z = Tensor(context, p.output_shape(), type);
    o.g = upload(context, p.output_shape(), o.host_g, type);
    o.df = Tensor(context, frames_shape, type);
    o.dk_minus = Tensor(context, p.filter_shape(), type);
    o.dk_plus = Tensor(context, p.filter_shape(), type);
    o.db1 = Tensor(context, p.bias_shape(), type);
    o.db2 = Tensor(context, p.bias_shape(), type);
    return o;
}

namespace {

// The differences f2 − f1 (step 0) or f2 − f3 (step 2) of every clip, in fp32, then narrowed to `type` as the
// GPU's difference pass rounds them (through the library's upload, which rounds as its kernels do).
std::vector<float> differences(vkconv::Context& context, const Shape& shape, const Operands& o, int step,
                               vkconv::DataType type) {
    const size_t F = static_cast<size_t>(shape.frame_elements()), clips = static_cast<size_t>(shape.clips());
    std::vector<float> d(clips * F);
    for (size_t c = 0; c < clips; ++c)
        for (size_t i = 0; i < F; ++i)
            d[c * F + i] = o.host_frames[(3 * c + 1) * F + i] - o.host_frames[(3 * c + step) * F + i];
    if (type == vkconv::DataType::F32) return d;
    return Tensor::from_host(context, {static_cast<int64_t>(d.size())}, d, type).download();
}

// ---- f32: the bound 4·ε·(reduction length)·max|ref| on each output.

// Largest |gpu - ref| against a bound that grows with the reduction length behind each value.
bool compare(const char* name, const std::vector<float>& gpu, const std::vector<double>& ref, double length) {
    double max_ref = 0, max_err = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        max_ref = std::max(max_ref, std::abs(ref[i]));
        max_err = std::max(max_err, std::abs(gpu[i] - ref[i]));
    }
    const double bound = 4 * FLT_EPSILON * length * std::max(max_ref, 1.0);
    const bool ok = gpu.size() == ref.size() && max_err <= bound;
    std::printf("  %-9s %8zu values  max |err| %.3g  bound %.3g  %s\n", name, ref.size(), max_err, bound,
                ok ? "ok" : "MISMATCH");
    return ok;
}

bool check_f32(vkconv::Context& context, const Layer& layer, const Shape& shape, Operands& o) {
    const vkconv::ConvProblem p = layer.problem(shape.clips());
    const size_t F = static_cast<size_t>(shape.frame_elements());
    const size_t clips = static_cast<size_t>(shape.clips());
    const std::vector<float> d1 = differences(context, shape, o, 0, vkconv::DataType::F32);
    const std::vector<float> d3 = differences(context, shape, o, 2, vkconv::DataType::F32);
    std::vector<double> z = ref::forward(p, d1, o.host_k_minus, o.host_b1);
    const std::vector<double> z3 = ref::forward(p, d3, o.host_k_plus, o.host_b2);
    for (size_t c = 0; c < clips; ++c)
        for (size_t i = 0; i < F; ++i) z[c * F + i] += z3[c * F + i] + o.host_frames[(3 * c + 1) * F + i];
    const std::vector<double> e1 = ref::backward_data(p, o.host_g, o.host_k_minus);
    const std::vector<double> e3 = ref::backward_data(p, o.host_g, o.host_k_plus);
    std::vector<double> df(3 * clips * F);
    for (size_t c = 0; c < clips; ++c)
        for (size_t i = 0; i < F; ++i) {
            df[(3 * c) * F + i] = -e1[c * F + i];
            df[(3 * c + 1) * F + i] = o.host_g[c * F + i] + e1[c * F + i] + e3[c * F + i];
            df[(3 * c + 2) * F + i] = -e3[c * F + i];
        }
    const double reduction = static_cast<double>(p.N * p.H * p.W);
    bool ok = compare("z", o.z.download(), z, 2 * 9 + 3);
    ok &= compare("df", o.df.download(), df, 2 * 9 + 1);
    ok &= compare("dk_minus", o.dk_minus.download(), ref::backward_filter(p, d1, o.host_g), reduction);
    ok &= compare("dk_plus", o.dk_plus.download(), ref::backward_filter(p, d3, o.host_g), reduction);
    const std::vector<double> db = ref::backward_bias(p, o.host_g);
    ok &= compare("db1", o.db1.download(), db, reduction);
    ok &= compare("db2", o.db2.download(), db, reduction);
    return ok;
}

// ---- 16-bit: each value against its own bound, carried through the chain (the comment at the top).

// A 16-bit type's rounding, and the bound of one pass's output.
struct Rounding {
    double ut, eta;
    explicit Rounding(vkconv::DataType type)
        : ut(std::ldexp(1.0, type == vkconv::DataType::F16 ? -11 : -8)),
          eta(type == vkconv::DataType::F16 ? std::ldexp(1.0, -25) : 0.0) {}
    static double gamma(double m) {
        const double mu = m * std::ldexp(1.0, -24);
        return mu / (1 - mu);
    }
    // An fp32 sum of `terms` terms (m = terms + 2) whose magnitudes add up to `magnitude` on exact inputs, some
    // inputs off by at most `inherited` in all (each with coefficient 1), rounded once to the type; `exact` is
    // the exact output.
    double step(double terms, double magnitude, double inherited, double exact) const {
        const double e = gamma(terms + 2) * (magnitude + inherited) + inherited;
        return (1 + ut) * e + ut * std::fabs(exact) + eta;
    }
};

// An output's exact values and each value's bound.
struct Bounded {
    std::vector<double> value, bound;
    explicit Bounded(size_t size = 0) : value(size), bound(size) {}
};

std::vector<float> magnitudes(std::span<const float> v) {
    std::vector<float> a(v.size());
    std::transform(v.begin(), v.end(), a.begin(), [](float x) { return std::fabs(x); });
    return a;
}

// The depthwise problem of the reference: no bias (the checks add it), fp32 spans.
vkconv::ConvProblem reference_problem(const Layer& layer, int64_t clips) {
    vkconv::ConvProblem p = layer.problem(clips);
    p.has_bias = false, p.data_type = vkconv::DataType::F32;
    return p;
}

// z1 = dw(d1, k_minus) + b1 + f2, rounded; z = dw(d3, k_plus) + b2 + z1, rounded: 9 taps and 2 terms each.
Bounded z_bounds(const Layer& layer, const Shape& shape, const Operands& o, const std::vector<float>& d1,
                 const std::vector<float>& d3, const Rounding& r) {
    const vkconv::ConvProblem p = reference_problem(layer, shape.clips());
    const std::vector<double> c1 = ref::forward(p, d1, o.host_k_minus),
                              m1 = ref::forward(p, magnitudes(d1), magnitudes(o.host_k_minus));
    const std::vector<double> c3 = ref::forward(p, d3, o.host_k_plus),
                              m3 = ref::forward(p, magnitudes(d3), magnitudes(o.host_k_plus));
    const size_t F = static_cast<size_t>(shape.frame_elements()),
                 plane = static_cast<size_t>(shape.height * shape.width);
    Bounded z(c1.size());
    for (size_t j = 0; j < c1.size(); ++j) {
        const size_t clip = j / F, channel = j % F / plane;
        const double f2 = o.host_frames[(3 * clip + 1) * F + j % F], b1 = o.host_b1[channel], b2 = o.host_b2[channel];
        const double z1 = c1[j] + b1 + f2;
        const double bound1 = r.step(9 + 2, m1[j] + std::fabs(b1) + std::fabs(f2), 0, z1);
        z.value[j] = c3[j] + b2 + z1;
        z.bound[j] = r.step(9 + 2, m3[j] + std::fabs(b2) + std::fabs(z1), bound1, z.value[j]);
    }
    return z;
}

// e = backward_data(g, k) (9 taps), rounded; df1 = −e1, df2 = (g + e1) + e3 (each sum rounded), df3 = −e3.
Bounded df_bounds(const Layer& layer, const Shape& shape, const Operands& o, const Rounding& r) {
    const vkconv::ConvProblem p = reference_problem(layer, shape.clips());
    const std::vector<float> g_abs = magnitudes(o.host_g);
    const std::vector<double> e1 = ref::backward_data(p, o.host_g, o.host_k_minus);
    const std::vector<double> m1 = ref::backward_data(p, g_abs, magnitudes(o.host_k_minus));
    const std::vector<double> e3 = ref::backward_data(p, o.host_g, o.host_k_plus);
    const std::vector<double> m3 = ref::backward_data(p, g_abs, magnitudes(o.host_k_plus));
    const size_t F = static_cast<size_t>(shape.frame_elements());
    Bounded df(3 * e1.size());
    for (size_t j = 0; j < e1.size(); ++j) {
        const size_t at = 3 * (j / F) * F + j % F;  // frame 3c of clip c
        const double bound_e1 = r.step(9, m1[j], 0, e1[j]), bound_e3 = r.step(9, m3[j], 0, e3[j]);
        const double s = o.host_g[j] + e1[j];
        const double bound_s = r.step(2, std::fabs(o.host_g[j]) + std::fabs(e1[j]), bound_e1, s);
        df.value[at] = -e1[j], df.bound[at] = bound_e1;
        df.value[at + F] = s + e3[j];
        df.bound[at + F] = r.step(2, std::fabs(e3[j]) + std::fabs(s), bound_e3 + bound_s, df.value[at + F]);
        df.value[at + 2 * F] = -e3[j], df.bound[at + 2 * F] = bound_e3;
    }
    return df;
}

// dk over the chunks: each chunk's partial gradient (n·H·W products) rounded, the first one the result, each
// later one added to it (2 terms, rounded).
Bounded dk_bounds(const Layer& layer, const Shape& shape, const Operands& o, const std::vector<float>& d,
                  const Rounding& r) {
    const size_t F = static_cast<size_t>(shape.frame_elements());
    Bounded dk;
    for (int64_t c0 = 0; c0 < shape.clips(); c0 += layer.chunk_clips()) {
        const int64_t n = std::min(layer.chunk_clips(), shape.clips() - c0);
        const vkconv::ConvProblem p = reference_problem(layer, n);
        const std::span<const float> dc(d.data() + c0 * F, n * F), gc(o.host_g.data() + c0 * F, n * F);
        const std::vector<double> part = ref::backward_filter(p, dc, gc);
        const std::vector<double> m = ref::backward_filter(p, magnitudes(dc), magnitudes(gc));
        const double terms = static_cast<double>(n * shape.height * shape.width);
        if (c0 == 0) dk = Bounded(part.size());
        for (size_t j = 0; j < part.size(); ++j) {
            const double bound = r.step(terms, m[j], 0, part[j]);
            const double sum = dk.value[j] + part[j];
            dk.bound[j] =
                c0 == 0 ? bound : r.step(2, std::fabs(dk.value[j]) + std::fabs(part[j]), dk.bound[j] + bound, sum);
            dk.value[j] = sum;
        }
    }
    return dk;
}

// db = Σ g per channel over every clip (clips·H·W terms), rounded once.
Bounded db_bounds(const Layer& layer, const Shape& shape, const Operands& o, const Rounding& r) {
    const vkconv::ConvProblem p = reference_problem(layer, shape.clips());
    const std::vector<double> db = ref::backward_bias(p, o.host_g), m = ref::backward_bias(p, magnitudes(o.host_g));
    Bounded b(db.size());
    for (size_t j = 0; j < db.size(); ++j)
        b.value[j] = db[j], b.bound[j] = r.step(double(shape.clips() * shape.height * shape.width), m[j], 0, db[j]);
    return b;
}

// Every value within its own bound (a NaN fails); prints the largest error and the worst error over its bound.
bool compare_bounded(const char* name, const std::vector<float>& gpu, const Bounded& ref) {
    double max_err = 0, worst = 0;
    bool ok = gpu.size() == ref.value.size();
    for (size_t i = 0; ok && i < gpu.size(); ++i) {
        const double err = std::fabs(gpu[i] - ref.value[i]);
        ok = err <= ref.bound[i];
        max_err = std::max(max_err, err), worst = std::max(worst, err / (ref.bound[i] + 1e-300));
    }
    std::printf("  %-9s %8zu values  max |err| %.3g  worst err/bound %.3g  %s\n", name, ref.value.size(), max_err,
                worst, ok ? "ok" : "MISMATCH");
    return ok;
}

bool check_16bit(vkconv::Context& context, const Layer& layer, const Shape& shape, Operands& o) {
    const Rounding r(layer.type());
    const std::vector<float> d1 = differences(context, shape, o, 0, layer.type());
    const std::vector<float> d3 = differences(context, shape, o, 2, layer.type());
    bool ok = compare_bounded("z", o.z.download(), z_bounds(layer, shape, o, d1, d3, r));
    ok &= compare_bounded("df", o.df.download(), df_bounds(layer, shape, o, r));
    ok &= compare_bounded("dk_minus", o.dk_minus.download(), dk_bounds(layer, shape, o, d1, r));
    ok &= compare_bounded("dk_plus", o.dk_plus.download(), dk_bounds(layer, shape, o, d3, r));
    const Bounded db = db_bounds(layer, shape, o, r);
    ok &= compare_bounded("db1", o.db1.download(), db);
    ok &= compare_bounded("db2", o.db2.download(), db);
    return ok;
}

}  // namespace

bool check(vkconv::Context& context, const Layer& layer, const Shape& shape, Operands& o) {
    return layer.type() == vkconv::DataType::F32 ? check_f32(context, layer, shape, o)
                                                 : check_16bit(context, layer, shape, o);
}

}  // namespace separable
