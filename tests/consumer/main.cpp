// The installed package's smoke test: headers, version, library and a forward pass checked exactly.
// Exit code 77: no Vulkan device (ctest shows a skip).
#include <cstdio>
#include <vector>

#include <vkconv/version.hpp>
#include <vkconv/vkconv.hpp>

int main() {
    try {
        vkconv::Context context;
        vkconv::ConvProblem p;
        p.N = 1, p.C = 2, p.H = 5, p.W = 4, p.K = 3, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1;
        std::vector<float> x(size_t(p.input_elements())), w(size_t(p.filter_elements()));
        for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 5) - 2);
        for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 3) - 1);
        auto tx = vkconv::Tensor::from_host(context, p.input_shape(), x);
        auto tw = vkconv::Tensor::from_host(context, p.filter_shape(), w);
        vkconv::Tensor ty(context, p.output_shape());
        vkconv::forward(context, p, tx, tw, nullptr, ty);
        const auto y = ty.download();
        const auto expected = vkconv::reference::forward(p, x, w, {});
        for (size_t i = 0; i < y.size(); ++i)
            if (y[i] != expected[i]) {
                std::fprintf(stderr, "y[%zu] = %g, expected %g\n", i, double(y[i]), expected[i]);
                return 1;
            }
        std::printf("vkconv %s installed: forward exact on %s\n", VKCONV_VERSION_STRING,
                    context.device().name.c_str());
        return 0;
    } catch (const vkconv::Error& e) {
        std::fprintf(stderr, "vkconv: %s\n", e.what());
        return e.category() == vkconv::ErrorCategory::Unsupported ? 77 : 1;
    }
}
