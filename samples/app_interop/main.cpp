// app_interop — vkconv inside a Vulkan application that owns everything.
//
//   app_interop            (exit 0: results match the CPU reference; 1: mismatch or error; 77: no Vulkan device)
//
// The application links the system Vulkan loader as any application does (Vulkan::Vulkan) and creates
// its own instance, device, queue, buffers and command buffer. It hands vkconv its device
// (vkconv::ExternalDevice), wraps ranges of its one buffer as tensors (vkconv::wrap_buffer) and gives a range
// as the passes' workspace, uploads through its own staging buffer, and records a layer's forward pass
// and its whole backward step into its own command buffer between its own barriers, which it submits and
// waits for itself. vkconv allocates no device memory at all here. With VKCONV_VALIDATION=1 the
// application's instance enables VK_LAYER_KHRONOS_validation and any message fails the run.
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "vkconv/interop.hpp"
#include "vkconv/vkconv.hpp"

namespace {

int g_validation_messages = 0;

void check(VkResult result, const char* what) {
    if (result != VK_SUCCESS)
        throw std::runtime_error(std::string(what) + " failed (VkResult " + std::to_string(result) + ")");
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT, VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
    ++g_validation_messages;
    std::fprintf(stderr, "validation layer: %s\n", data && data->pMessage ? data->pMessage : "");
    return VK_FALSE;
}

bool validation_requested() {
    const char* value = std::getenv("VKCONV_VALIDATION");
    return value && *value && std::strcmp(value, "0") != 0;
}

bool has_layer(const char* name) {
    uint32_t count = 0;
    vkEnumerateInstanceLayerProperties(&count, nullptr);
    std::vector<VkLayerProperties> layers(count);
    vkEnumerateInstanceLayerProperties(&count, layers.data());
    return std::any_of(layers.begin(), layers.end(),
                       [&](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}

// The application's Vulkan objects, destroyed in reverse order of creation.
struct App {
    VkInstance instance = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
    VkPhysicalDevice physical = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    uint32_t family = 0;
    VkQueue queue = VK_NULL_HANDLE;
    VkPhysicalDeviceMemoryProperties memory{};
    VkPhysicalDeviceLimits limits{};

    ~App() {
        if (device) vkDestroyDevice(device, nullptr);
        if (messenger) {
            auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
                vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
            destroy(instance, messenger, nullptr);
        }
        if (instance) vkDestroyInstance(instance, nullptr);
    }

    // False when there is no Vulkan device to run on.
    bool create() {
        VkApplicationInfo info{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        info.pApplicationName = "app_interop";
        info.apiVersion = VK_API_VERSION_1_1;
        const char* layer = "VK_LAYER_KHRONOS_validation";
        const char* extension = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
        const bool validation = validation_requested() && has_layer(layer);
        if (validation_requested() && !validation)
            std::fprintf(stderr, "app_interop: VK_LAYER_KHRONOS_validation is not installed; running without\n");
        VkInstanceCreateInfo instance_info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        instance_info.pApplicationInfo = &info;
        instance_info.enabledLayerCount = validation ? 1 : 0;
        instance_info.ppEnabledLayerNames = &layer;
        instance_info.enabledExtensionCount = validation ? 1 : 0;
        instance_info.ppEnabledExtensionNames = &extension;
        if (vkCreateInstance(&instance_info, nullptr, &instance) != VK_SUCCESS) return false;
        if (validation) {
            VkDebugUtilsMessengerCreateInfoEXT m{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
            m.messageSeverity =
                VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
            m.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
            m.pfnUserCallback = on_message;
            auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
                vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
            check(create(instance, &m, nullptr, &messenger), "vkCreateDebugUtilsMessengerEXT");
        }
        uint32_t count = 0;
        vkEnumeratePhysicalDevices(instance, &count, nullptr);
        std::vector<VkPhysicalDevice> devices(count);
        vkEnumeratePhysicalDevices(instance, &count, devices.data());
        for (VkPhysicalDevice candidate : devices) {  // the first device with a compute queue
            uint32_t families = 0;
            vkGetPhysicalDeviceQueueFamilyProperties(candidate, &families, nullptr);
            std::vector<VkQueueFamilyProperties> props(families);
            vkGetPhysicalDeviceQueueFamilyProperties(candidate, &families, props.data());
            for (uint32_t i = 0; i < families && !physical; ++i)
                if (props[i].queueFlags & VK_QUEUE_COMPUTE_BIT) physical = candidate, family = i;
            if (physical) break;
        }
        if (!physical) return false;
        VkPhysicalDeviceProperties properties{};
        vkGetPhysicalDeviceProperties(physical, &properties);
        limits = properties.limits;
        vkGetPhysicalDeviceMemoryProperties(physical, &memory);
        std::printf("app_interop: the application's device is %s\n", properties.deviceName);
        const float priority = 1.0f;
        VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
        queue_info.queueFamilyIndex = family;
        queue_info.queueCount = 1;
        queue_info.pQueuePriorities = &priority;
        VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
        device_info.queueCreateInfoCount = 1;
        device_info.pQueueCreateInfos = &queue_info;
        check(vkCreateDevice(physical, &device_info, nullptr, &device), "vkCreateDevice");
        vkGetDeviceQueue(device, family, 0, &queue);
        return true;
    }

    uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags wanted) const {
        for (uint32_t i = 0; i < memory.memoryTypeCount; ++i)
            if ((bits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & wanted) == wanted) return i;
        throw std::runtime_error("no memory type with the properties wanted");
    }
};

// A buffer with memory of its own.
struct Buffer {
    const App* app = nullptr;
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    void* mapped = nullptr;
    Buffer(const App& a, VkDeviceSize size, VkBufferUsageFlags usage, VkMemoryPropertyFlags properties) : app(&a) {
        VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        info.size = size;
        info.usage = usage;
        check(vkCreateBuffer(app->device, &info, nullptr, &buffer), "vkCreateBuffer");
        VkMemoryRequirements requirements{};
        vkGetBufferMemoryRequirements(app->device, buffer, &requirements);
        VkMemoryAllocateInfo alloc{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        alloc.allocationSize = requirements.size;
        alloc.memoryTypeIndex = app->memory_type(requirements.memoryTypeBits, properties);
        check(vkAllocateMemory(app->device, &alloc, nullptr, &memory), "vkAllocateMemory");
        check(vkBindBufferMemory(app->device, buffer, memory, 0), "vkBindBufferMemory");
        if (properties & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
            check(vkMapMemory(app->device, memory, 0, VK_WHOLE_SIZE, 0, &mapped), "vkMapMemory");
    }
    ~Buffer() {
        vkDestroyBuffer(app->device, buffer, nullptr);
        vkFreeMemory(app->device, memory, nullptr);
    }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
};

void barrier(VkCommandBuffer commands, VkPipelineStageFlags from, VkAccessFlags written, VkPipelineStageFlags to,
             VkAccessFlags accessed) {
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    b.srcAccessMask = written;
    b.dstAccessMask = accessed;
    vkCmdPipelineBarrier(commands, from, to, 0, 1, &b, 0, nullptr, 0, nullptr);
}

std::vector<float> values(int64_t count, uint32_t seed) {
    std::vector<float> v(static_cast<size_t>(count));
    uint32_t s = seed * 2654435761u + 1;
    for (float& x : v) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        x = static_cast<float>(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
    return v;
}

// Largest |gpu - reference| relative to the fp32 summation bound (reduction + 2) * 2^-24 * sum|terms|: <= 1 passes.
double worst_error(const float* gpu, const std::vector<double>& reference, const std::vector<double>& magnitude,
                   int64_t reduction) {
    const double factor = static_cast<double>(reduction + 2) * std::ldexp(1.0, -24);
    double worst = 0;
    for (size_t i = 0; i < reference.size(); ++i) {
        const double ratio = std::fabs(double(gpu[i]) - reference[i]) / (factor * magnitude[i] + 1e-30);
        worst = std::isnan(ratio) ? INFINITY : std::max(worst, ratio);
    }
    return worst;
}

std::vector<float> abs_of(const std::vector<float>& v) {
    std::vector<float> out(v);
    for (float& x : out) x = std::fabs(x);
    return out;
}

// vkconv on the application's device and queue. It destroys none of them.
vkconv::ExternalDevice external_device(const App& app) {
    vkconv::ExternalDevice external;
    external.get_instance_proc_addr = vkGetInstanceProcAddr;
    external.instance = app.instance;
    external.physical_device = app.physical;
    external.device = app.device;
    external.queue_family = app.family;
    return external;
}

// A 3x3 layer with a bias: x [2, 8, 20, 18] -> y [2, 12, 20, 18].
vkconv::ConvProblem layer_problem() {
    vkconv::ConvProblem p;
    p.N = 2, p.C = 8, p.H = 20, p.W = 18, p.K = 12, p.R = 3, p.S = 3, p.pad_h = 1, p.pad_w = 1;
    p.has_bias = true;
    return p;
}

struct Range {
    VkDeviceSize offset, bytes;
};

// Where each tensor and the workspace lie in the application's one device buffer, each at an aligned
// offset, in this order (the upload copies x .. dy, the read-back y .. db in one copy each).
struct BufferLayout {
    Range rx, rw, rb, rdy, ry, rdx, rdw, rdb, rws;
    VkDeviceSize end = 0;
};

BufferLayout buffer_layout(const vkconv::ConvProblem& p, uint64_t workspace, VkDeviceSize align) {
    BufferLayout l;
    auto place = [&](uint64_t bytes) {
        const Range r{l.end, bytes};
        l.end = (l.end + bytes + align - 1) / align * align;
        return r;
    };
    l.rx = place(4 * p.input_elements()), l.rw = place(4 * p.filter_elements()), l.rb = place(4 * p.K);
    l.rdy = place(4 * p.output_elements()), l.ry = place(4 * p.output_elements());
    l.rdx = place(4 * p.input_elements()), l.rdw = place(4 * p.filter_elements()), l.rdb = place(4 * p.K);
    l.rws = place(std::max<uint64_t>(workspace, 4));
    return l;
}

// The layer's tensors, wrapping ranges of the application's buffer.
struct LayerTensors {
    vkconv::Tensor x, w, b, dy, y, dx, dw, db, ws;
};

LayerTensors wrap_tensors(vkconv::Context& context, const vkconv::ConvProblem& p, const BufferLayout& l,
                          VkBuffer buffer, VkBufferUsageFlags usage) {
    auto tensor = [&](const Range& r, const vkconv::Shape& shape) {
        return vkconv::wrap_buffer(context, {buffer, r.offset, r.bytes, usage}, shape);
    };
    LayerTensors t;
    t.x = tensor(l.rx, p.input_shape()), t.w = tensor(l.rw, p.filter_shape()), t.b = tensor(l.rb, p.bias_shape());
    t.dy = tensor(l.rdy, p.output_shape()), t.y = tensor(l.ry, p.output_shape());
    t.dx = tensor(l.rdx, p.input_shape()), t.dw = tensor(l.rdw, p.filter_shape()), t.db = tensor(l.rdb, p.bias_shape());
    t.ws = tensor(l.rws, {int64_t(l.rws.bytes / 4)});
    return t;
}

// The host's inputs: x, w, b and dy.
struct HostInputs {
    std::vector<float> hx, hw, hb, hdy;
};

// The application's command pool and its one primary command buffer (run() destroys the pool once the
// buffer has finished).
struct Commands {
    VkDevice device = VK_NULL_HANDLE;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer buffer = VK_NULL_HANDLE;

    explicit Commands(const App& app) : device(app.device) {
        VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
        pool_info.queueFamilyIndex = app.family;
        check(vkCreateCommandPool(app.device, &pool_info, nullptr, &pool), "vkCreateCommandPool");
        VkCommandBufferAllocateInfo alloc{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        alloc.commandPool = pool;
        alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        alloc.commandBufferCount = 1;
        check(vkAllocateCommandBuffers(app.device, &alloc, &buffer), "vkAllocateCommandBuffers");
    }
};

// Before vkconv: the upload of its inputs, written by the transfer and made visible to compute shaders
// and transfers.
void record_upload(VkCommandBuffer commands, const Buffer& staging, const Buffer& device_buffer,
                   const BufferLayout& l) {
    const VkBufferCopy upload{0, 0, l.rdy.offset + l.rdy.bytes};  // x, w, b and dy lie first
    vkCmdCopyBuffer(commands, staging.buffer, device_buffer.buffer, 1, &upload);
    barrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                VK_ACCESS_TRANSFER_WRITE_BIT);
}

// After vkconv: its shader and transfer writes, before the application's read-back copy to the host.
void record_readback(VkCommandBuffer commands, const Buffer& staging, const Buffer& device_buffer,
                     const BufferLayout& l) {
    barrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_READ_BIT);
    const VkBufferCopy readback{l.ry.offset, l.ry.offset, l.rdb.offset + l.rdb.bytes - l.ry.offset};  // y, dx, dw, db
    vkCmdCopyBuffer(commands, device_buffer.buffer, staging.buffer, 1, &readback);
    barrier(commands, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
}

void submit_and_wait(const App& app, VkCommandBuffer commands) {
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence = VK_NULL_HANDLE;
    check(vkCreateFence(app.device, &fence_info, nullptr, &fence), "vkCreateFence");
    VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    submit.commandBufferCount = 1;
    submit.pCommandBuffers = &commands;
    check(vkQueueSubmit(app.queue, 1, &submit, fence), "vkQueueSubmit");
    check(vkWaitForFences(app.device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    vkDestroyFence(app.device, fence, nullptr);
}

// Prints each result's worst error against the CPU reference; true when all are within the fp32 bound and
// vkconv reserved no device memory of its own.
bool check_results(const vkconv::Context& context, const vkconv::ConvProblem& p, const HostInputs& in,
                   const Buffer& staging, const BufferLayout& l) {
    const char* host = static_cast<const char*>(staging.mapped);
    auto at = [&](const Range& r) { return reinterpret_cast<const float*>(host + r.offset); };
    const int64_t PQ = p.P() * p.Q();
    const auto &hx = in.hx, &hw = in.hw, &hb = in.hb, &hdy = in.hdy;
    const double errors[] = {
        worst_error(at(l.ry), vkconv::reference::forward(p, hx, hw, hb),
                    vkconv::reference::forward(p, abs_of(hx), abs_of(hw), abs_of(hb)), p.C * p.R * p.S + 1),
        worst_error(at(l.rdx), vkconv::reference::backward_data(p, hdy, hw),
                    vkconv::reference::backward_data(p, abs_of(hdy), abs_of(hw)), p.K * p.R * p.S),
        worst_error(at(l.rdw), vkconv::reference::backward_filter(p, hx, hdy),
                    vkconv::reference::backward_filter(p, abs_of(hx), abs_of(hdy)), p.N * PQ),
        worst_error(at(l.rdb), vkconv::reference::backward_bias(p, hdy),
                    vkconv::reference::backward_bias(p, abs_of(hdy)), p.N * PQ)};
    const char* names[] = {"y", "dx", "dw", "db"};
    bool ok = context.pool_stats().reserved == 0;
    for (int i = 0; i < 4; ++i) {
        std::printf("app_interop: %-2s worst error / fp32 bound = %.3f %s\n", names[i], errors[i],
                    errors[i] <= 1.0 ? "ok" : "MISMATCH");
        ok = ok && errors[i] <= 1.0;
    }
    return ok;
}

int run() {
    App app;
    if (!app.create()) {
        std::printf("app_interop: no Vulkan device\n");
        return 77;
    }
    vkconv::Context context(external_device(app));
    const vkconv::ConvProblem p = layer_problem();
    vkconv::PassOptions options;
    options.auto_choice = vkconv::AutoChoice::Heuristic;  // no measuring: nothing runs but what is recorded
    const uint64_t workspace =
        std::max(vkconv::forward_workspace_bytes(context, p, vkconv::Algorithm::Auto, options),
                 vkconv::layer_backward_workspace_bytes(context, p, vkconv::Algorithm::Auto, options));

    const BufferLayout l = buffer_layout(p, workspace, std::max<VkDeviceSize>(app.limits.minStorageBufferOffsetAlignment, 16));
    const VkBufferUsageFlags usage =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    Buffer device_buffer(app, l.end, usage, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    Buffer staging(app, l.end, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                   VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    LayerTensors t = wrap_tensors(context, p, l, device_buffer.buffer, usage);
    options.workspace = &t.ws;

    const HostInputs in{values(p.input_elements(), 1), values(p.filter_elements(), 2), values(p.K, 3),
                        values(p.output_elements(), 4)};
    auto stage = [&](const Range& r, const std::vector<float>& v) {
        std::memcpy(static_cast<char*>(staging.mapped) + r.offset, v.data(), v.size() * 4);
    };
    stage(l.rx, in.hx), stage(l.rw, in.hw), stage(l.rb, in.hb), stage(l.rdy, in.hdy);

    // The application's command buffer: its upload, vkconv's passes, its read-back, between its barriers.
    const Commands commands(app);
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(commands.buffer, &begin), "vkBeginCommandBuffer");
    record_upload(commands.buffer, staging, device_buffer, l);
    vkconv::Recording recording = vkconv::record_into(context, commands.buffer);
    const auto f = vkconv::forward(recording, p, t.x, t.w, &t.b, t.y, vkconv::Algorithm::Auto, options);
    const auto s =
        vkconv::layer_backward(recording, p, t.x, t.w, t.dy, t.dx, t.dw, &t.db, vkconv::Algorithm::Auto, options);
    record_readback(commands.buffer, staging, device_buffer, l);
    check(vkEndCommandBuffer(commands.buffer), "vkEndCommandBuffer");
    submit_and_wait(app, commands.buffer);
    recording.complete();  // the command buffer finished: vkconv lets go of what it held for it
    vkDestroyCommandPool(app.device, commands.pool, nullptr);

    std::printf(
        "app_interop: forward (%s, %u dispatches) and backward step (%s + %s, %u dispatches) recorded into "
        "the application's command buffer\n",
        vkconv::to_string(f.algorithm), f.dispatches, vkconv::to_string(s.data_algorithm),
        vkconv::to_string(s.filter_algorithm), s.step.dispatches);
    std::printf(
        "app_interop: workspace %llu bytes in the application's buffer; vkconv's own device memory: %llu bytes\n",
        static_cast<unsigned long long>(workspace), static_cast<unsigned long long>(context.pool_stats().reserved));
    return check_results(context, p, in, staging, l) ? 0 : 1;
}

}  // namespace

int main() {
    int status = 1;
    try {
        status = run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "app_interop: %s\n", e.what());
        status = 1;
    }
    if (g_validation_messages) {
        std::fprintf(stderr, "app_interop: %d validation message(s)\n", g_validation_messages);
        return 1;
    }
    return status;
}
