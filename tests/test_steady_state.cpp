// The steady state: a pass repeated on the same shapes creates no Vulkan object (command buffers, fences,
// descriptor and query pools and texel views are recycled, pipelines and pool blocks kept).
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
