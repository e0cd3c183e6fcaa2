// An application that links the Vulkan loader the ordinary way (Vulkan::Vulkan), calls Vulkan itself, and
// uses vkconv in the same process: the library must not take the application's vk* calls (it defines no
// vk* symbol), and both must work. Exit code 77: no Vulkan device (ctest shows a skip).
#include <vulkan/vulkan.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include <vkconv/vkconv.hpp>

int main() {
    // The application's own calls, straight into the loader it linked.
    uint32_t version = 0;
    if (vkEnumerateInstanceVersion(&version) != VK_SUCCESS) {
        std::fprintf(stderr, "vkEnumerateInstanceVersion failed\n");
        return 1;
    }
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = VK_API_VERSION_1_1;
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pApplicationInfo = &app;
    VkInstance instance = VK_NULL_HANDLE;
    const VkResult created = vkCreateInstance(&info, nullptr, &instance);
    if (created == VK_ERROR_INCOMPATIBLE_DRIVER) return 77;
    if (created != VK_SUCCESS) {
        std::fprintf(stderr, "vkCreateInstance failed: %d\n", created);
        return 1;
    }
    uint32_t devices = 0;
    vkEnumeratePhysicalDevices(instance, &devices, nullptr);

    // vkconv beside it, while the application's instance lives.
    try {
        vkconv::Context context;
        vkconv::ConvProblem p;
        p.N = 2, p.C = 3, p.H = 7, p.W = 6, p.K = 4, p.R = 3, p.S = 3, p.pad_h = p.pad_w = 1;
        std::vector<float> x(size_t(p.input_elements())), w(size_t(p.filter_elements()));
        for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 7) - 3);
        for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 5) - 2);
        auto tx = vkconv::Tensor::from_host(context, p.input_shape(), x);
        auto tw = vkconv::Tensor::from_host(context, p.filter_shape(), w);
        vkconv::Tensor ty(context, p.output_shape());
        vkconv::forward(context, p, tx, tw, nullptr, ty, vkconv::Algorithm::Im2col);
        const auto y = ty.download();
        const auto expected = vkconv::reference::forward(p, x, w, {});
        for (size_t i = 0; i < y.size(); ++i)
            if (y[i] != expected[i]) {  // small integers: every sum is exact
                std::fprintf(stderr, "y[%zu] = %g, expected %g\n", i, double(y[i]), expected[i]);
                return 1;
            }
    } catch (const vkconv::Error& e) {
        std::fprintf(stderr, "vkconv: %s\n", e.what());
        vkDestroyInstance(instance, nullptr);
        return e.category() == vkconv::ErrorCategory::Unsupported ? 77 : 1;
    }

    // The application's instance is still its own, and still works.
    uint32_t again = 0;
    vkEnumeratePhysicalDevices(instance, &again, nullptr);
    vkDestroyInstance(instance, nullptr);
    if (again != devices) {
        std::fprintf(stderr, "the application's instance changed under vkconv\n");
        return 1;
    }
    std::printf("loader interop: Vulkan %u.%u from the application's loader, %u device(s), vkconv forward exact\n",
                VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version), devices);
    return 0;
}
