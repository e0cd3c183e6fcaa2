// The steady state: a pass repeated on the same shapes creates no Vulkan object (command buffers, fences,
// descriptor and query pools and texel views are recycled, pipelines and pool blocks kept).
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <vkconv/testing.hpp>
#include "conv_cases.hpp"
#include "gpu.hpp"
#include "test_util.hpp"

extern const uint32_t test_axpy_spv[];
extern const size_t test_axpy_spv_words;

namespace {

using vkconv::Algorithm;
using vkconv::Tensor;

// Runs `call` twice (pipelines, pool blocks and stream resources come into being), then three more times,
// and checks those three created nothing.
void check_no_churn(vkconv::Context& context, const std::string& what, const std::function<void()>& call) {
    INFO(what);
    call();
    call();
    const uint64_t before = vkconv::testing::vulkan_objects_created(context);
    for (int i = 0; i < 3; ++i) call();
    CHECK(vkconv::testing::vulkan_objects_created(context) == before);
}

}  // namespace

TEST_CASE("repeated passes create no Vulkan objects", "[steady][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const std::vector<std::pair<std::string, vkconv::ConvProblem>> problems = {
        {"grouped", vkt::problem().batch(2).channels(4).image(9, 7).filters(6).kernel(3, 3).pad(1).groups(2).bias()},
        {"depthwise", vkt::problem().batch(2).channels(4).image(9, 7).depthwise(1).kernel(3, 3).pad(1).bias()},
    };
    for (const auto& entry : problems) {
        // Not a structured binding: clang before 16 cannot capture one in the lambdas below.
        const std::string& name = entry.first;
        const vkconv::ConvProblem& p = entry.second;
        auto x = Tensor::from_host(*context, p.input_shape(), vkt::random_values(p.input_elements(), 1));
        auto w = Tensor::from_host(*context, p.filter_shape(), vkt::random_values(p.filter_elements(), 2));
        auto b = Tensor::from_host(*context, p.bias_shape(), vkt::random_values(p.K, 3));
        auto dy = Tensor::from_host(*context, p.output_shape(), vkt::random_values(p.output_elements(), 4));
        Tensor y(*context, p.output_shape()), dx(*context, p.input_shape()), dw(*context, p.filter_shape()),
            db(*context, p.bias_shape());
        std::vector<Algorithm> algorithms = vkt::algorithms_for(p);
        algorithms.push_back(Algorithm::Auto);
        for (Algorithm a : algorithms) {
            const std::string tag = name + " " + vkconv::to_string(a);
            check_no_churn(*context, tag + " forward", [&] { vkconv::forward(*context, p, x, w, &b, y, a); });
            check_no_churn(*context, tag + " backward-data", [&] { vkconv::backward_data(*context, p, dy, w, dx, a); });
            check_no_churn(*context, tag + " backward-filter",
                           [&] { vkconv::backward_filter(*context, p, x, dy, dw, &db, a); });
            check_no_churn(*context, tag + " layer step",
                           [&] { vkconv::layer_backward(*context, p, x, w, dy, dx, dw, &db, a); });
        }
        check_no_churn(*context, name + " backward-bias", [&] { vkconv::backward_bias(*context, p, dy, db); });
        check_no_churn(*context, name + " upload and download", [&] {
            y.upload(vkt::poison(p.output_elements()));
            (void)y.download();
        });
    }
    auto a = Tensor::from_host(*context, {33, 17}, vkt::random_values(33 * 17, 5));
    auto bm = Tensor::from_host(*context, {17, 29}, vkt::random_values(17 * 29, 6));
    Tensor c(*context, {33, 29});
    check_no_churn(*context, "gemm", [&] { vkconv::gemm(*context, a, bm, c, {}); });
    vkconv::Kernel axpy(*context, {"test_axpy",
                                   {test_axpy_spv, test_axpy_spv_words},
                                   {vkconv::BindingAccess::Read, vkconv::BindingAccess::ReadWrite},
                                   4});
    auto kx = Tensor::from_host(*context, {100}, vkt::random_values(100, 7));
    auto ky = Tensor::from_host(*context, {100}, vkt::random_values(100, 8));
    check_no_churn(*context, "kernel", [&] { axpy.run({kx, ky}, 100, 0.5f); });
}

namespace {

// The results a pass writes: each output tensor, and what its first run must equal.
struct Output {
    Tensor* tensor;
    std::vector<double> reference, magnitude;
    int64_t reduction;
};

// Runs `pass` three times on the same tensors, with every output poisoned before each run: blocking, blocking
// again, then recorded. Every run must write every output again (a rerun that returned early would leave NaN),
// the first within the fp32 bound of the reference, the others the same bits.
void check_reruns(vkconv::Context& context, const std::string& what, const std::vector<Output>& outputs,
                  const std::function<void(vkconv::Recording*)>& pass) {
    std::vector<std::vector<float>> first;
    for (int run = 0; run < 3; ++run) {
        INFO(what << ", run " << run + 1 << (run == 2 ? " (recorded)" : ""));
        for (const Output& out : outputs) out.tensor->upload(vkt::poison(out.tensor->elements()));
        if (run < 2) {
            pass(nullptr);
        } else {
            vkconv::Recording recording(context);
            pass(&recording);
            recording.submit().wait();
        }
        for (size_t i = 0; i < outputs.size(); ++i) {
            const auto values = outputs[i].tensor->download();
            REQUIRE(vkt::all_written(values));
            if (run == 0) {
                vkt::check_close(values, outputs[i].reference, outputs[i].magnitude, outputs[i].reduction, what);
                first.push_back(values);
            } else {
                CHECK(std::memcmp(values.data(), first[i].data(), values.size() * sizeof(float)) == 0);
            }
        }
    }
}

}  // namespace

TEST_CASE("a pass run again on the same tensors writes every output again, the same bits", "[steady][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    namespace ref = vkconv::reference;
    using vkt::absolute;
    uint32_t seed = 1300;
    for (vkconv::Layout layout : {vkconv::Layout::NCHW, vkconv::Layout::NHWC})
        for (vkconv::ConvProblem p :
             {vkt::problem().batch(2).channels(4).image(9, 7).filters(6).kernel(3, 3).pad(1).stride(2, 1).groups(2).bias(),
              vkt::problem().batch(2).channels(4).image(8, 7).depthwise(2).kernel(3, 3).pad(1).bias()}) {
            p.layout = layout;
            const auto xs = vkt::random_values(p.input_elements(), seed++), ws = vkt::random_values(p.filter_elements(), seed++);
            const auto bs = vkt::random_values(p.K, seed++), dys = vkt::random_values(p.output_elements(), seed++);
            auto x = Tensor::from_host(*context, p.input_shape(), xs), w = Tensor::from_host(*context, p.filter_shape(), ws);
            auto b = Tensor::from_host(*context, p.bias_shape(), bs), dy = Tensor::from_host(*context, p.output_shape(), dys);
            Tensor y(*context, p.output_shape()), dx(*context, p.input_shape()), dw(*context, p.filter_shape()),
                db(*context, p.bias_shape());
            const int64_t positions = p.N * p.P() * p.Q();
            const Output y_out{&y, ref::forward(p, xs, ws, bs), ref::forward(p, absolute(xs), absolute(ws), absolute(bs)),
                               p.channels_per_group() * p.R * p.S + 1};
            const Output dx_out{&dx, ref::backward_data(p, dys, ws), ref::backward_data(p, absolute(dys), absolute(ws)),
                                p.filters_per_group() * p.R * p.S};
            const Output dw_out{&dw, ref::backward_filter(p, xs, dys),
                                ref::backward_filter(p, absolute(xs), absolute(dys)), positions};
            const Output db_out{&db, ref::backward_bias(p, dys), ref::backward_bias(p, absolute(dys)), positions};
            std::vector<Algorithm> algorithms = vkt::algorithms_for(p);
            algorithms.push_back(Algorithm::Auto);
            for (Algorithm a : algorithms) {
                const std::string tag = p.str() + " " + vkconv::to_string(a);
                check_reruns(*context, tag + " forward", {y_out}, [&](vkconv::Recording* r) {
                    r ? vkconv::forward(*r, p, x, w, &b, y, a) : vkconv::forward(*context, p, x, w, &b, y, a);
                });
                check_reruns(*context, tag + " backward-data", {dx_out}, [&](vkconv::Recording* r) {
                    r ? vkconv::backward_data(*r, p, dy, w, dx, a) : vkconv::backward_data(*context, p, dy, w, dx, a);
                });
                check_reruns(*context, tag + " backward-filter", {dw_out, db_out}, [&](vkconv::Recording* r) {
                    r ? vkconv::backward_filter(*r, p, x, dy, dw, &db, a)
                      : vkconv::backward_filter(*context, p, x, dy, dw, &db, a);
                });
                check_reruns(*context, tag + " layer step", {dx_out, dw_out, db_out}, [&](vkconv::Recording* r) {
                    r ? vkconv::layer_backward(*r, p, x, w, dy, dx, dw, &db, a)
                      : vkconv::layer_backward(*context, p, x, w, dy, dx, dw, &db, a);
                });
            }
            check_reruns(*context, p.str() + " backward-bias", {db_out}, [&](vkconv::Recording* r) {
                r ? vkconv::backward_bias(*r, p, dy, db) : vkconv::backward_bias(*context, p, dy, db);
            });
        }
}
