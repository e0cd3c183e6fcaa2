// Passes recorded into the application's command buffer and submitted by it; vkconv's submissions chained
// with the application's through semaphores.
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "conv_cases.hpp"
#include "interop/app_vulkan.hpp"
#include "test_util.hpp"
#include "vkconv/testing.hpp"
#include "vkconv/vkconv.hpp"

namespace {

using vkconv::Algorithm;
using vkconv::ConvProblem;
using vkt::AppVulkan;

vkconv::ContextOptions external_options() {
    vkconv::ContextOptions options = vkt::test_options();
    options.validation.reset();  // the application's instance has the layer (AppVulkan)
    return options;
}

ConvProblem layer() {
    return vkt::problem().batch(2).channels(3).image(9, 12).filters(5).kernel(3, 3).pad(1).stride(2).bias();
}

void check_step(const ConvProblem& p, const std::vector<float>& x, const std::vector<float>& w,
                const std::vector<float>& b, const std::vector<float>& dy, const std::vector<float>& y,
                const std::vector<float>& dx, const std::vector<float>& dw, const std::vector<float>& db,
                const std::string& what) {
    vkt::check_close(y, vkconv::reference::forward(p, x, w, b),
                     vkconv::reference::forward(p, vkt::absolute(x), vkt::absolute(w), vkt::absolute(b)),
                     p.C * p.R * p.S + 1, what + ": forward");
    vkt::check_close(dx, vkconv::reference::backward_data(p, dy, w),
                     vkconv::reference::backward_data(p, vkt::absolute(dy), vkt::absolute(w)), p.K * p.R * p.S,
                     what + ": backward-data");
    vkt::check_close(dw, vkconv::reference::backward_filter(p, x, dy),
                     vkconv::reference::backward_filter(p, vkt::absolute(x), vkt::absolute(dy)), p.N * p.P() * p.Q(),
                     what + ": backward-filter");
    vkt::check_close(db, vkconv::reference::backward_bias(p, dy),
                     vkconv::reference::backward_bias(p, vkt::absolute(dy)), p.N * p.P() * p.Q(),
                     what + ": backward-bias");
}

}  // namespace

TEST_CASE("a forward and a backward step recorded into the application's command buffer, submitted by it",
          "[interop][recording]") {
    auto app = AppVulkan::create();
    if (!app) return;
    vkconv::Context context(app->external(), external_options());
    const ConvProblem p = layer();
    const auto x = vkt::random_values(size_t(p.input_elements()), 31);
    const auto w = vkt::random_values(size_t(p.filter_elements()), 32);
    const auto b = vkt::random_values(size_t(p.K), 33);
    const auto dy = vkt::random_values(size_t(p.output_elements()), 34);
    const VkBufferUsageFlags usage =
        VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    // The application's tensors, one buffer each, uploaded through its own staging.
    auto make = [&](const std::vector<float>& values) {
        auto buffer = app->make_buffer(values.size() * 4, usage);
        app->upload(buffer, 0, values);
        return buffer;
    };
    auto bx = make(x), bw = make(w), bb = make(b), bdy = make(dy);
    auto by = make(vkt::poison(p.output_elements())), bdx = make(vkt::poison(p.input_elements()));
    auto bdw = make(vkt::poison(p.filter_elements())), bdb = make(vkt::poison(p.K));
    auto copy_of_y = make(vkt::poison(p.output_elements()));
    for (int round = 0; round < 6; ++round) {
        const Algorithm algorithm = std::array{Algorithm::Im2col, Algorithm::Mec, Algorithm::Direct}[round / 2];
        const std::string what = std::string("application command buffer, ") + vkconv::to_string(algorithm);
        for (auto* buffer : {&by, &bdx, &bdw, &bdb, &copy_of_y})
            app->upload(*buffer, 0, vkt::poison(int64_t(buffer->size / 4)));
        {
            auto wrap = [&](const AppVulkan::Buffer& buffer, const vkconv::Shape& shape) {
                return vkconv::wrap_buffer(context, app->range(buffer, 0, buffer.size), shape);
            };
            auto tx = wrap(bx, p.input_shape()), tw = wrap(bw, p.filter_shape()), tb = wrap(bb, p.bias_shape());
            auto tdy = wrap(bdy, p.output_shape()), ty = wrap(by, p.output_shape());
            auto tdx = wrap(bdx, p.input_shape()), tdw = wrap(bdw, p.filter_shape()), tdb = wrap(bdb, p.bias_shape());
            const uint64_t objects = vkconv::testing::vulkan_objects_created(context);
            VkCommandBuffer commands = app->begin_commands();
            vkconv::Recording recording = vkconv::record_into(context, commands);
            CHECK(recording.external());
            vkconv::forward(recording, p, tx, tw, &tb, ty, algorithm);
            vkconv::layer_backward(recording, p, tx, tw, tdy, tdx, tdw, &tdb, algorithm);
            CHECK_THROWS_AS(recording.submit(), vkconv::Error);  // the application submits this one
            // The application's own command after vkconv's, behind the barrier interop.hpp prescribes.
            VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
            barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
            barrier.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
            vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                                 VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &barrier, 0, nullptr, 0, nullptr);
            const VkBufferCopy region{0, 0, by.size};
            vkCmdCopyBuffer(commands, by.buffer, copy_of_y.buffer, 1, &region);
            // The recording holds pool workspace for the command buffer until complete(), not a moment less.
            const uint64_t held = context.pool_stats().in_use;
            if (algorithm != Algorithm::Direct) CHECK(recording.workspace_bytes() > 0);
            app->submit_and_wait(commands);
            CHECK(context.pool_stats().in_use == held);
            const uint64_t workspace = recording.workspace_bytes();
            recording.complete();
            CHECK(context.pool_stats().in_use == held - workspace);
            CHECK_THROWS_AS(recording.complete(), vkconv::Error);
            if (round % 2 == 1)  // the first record of an algorithm made what the second reuses
                CHECK(vkconv::testing::vulkan_objects_created(context) == objects);
        }
        check_step(p, x, w, b, dy, app->download(by, 0, size_t(p.output_elements())),
                   app->download(bdx, 0, size_t(p.input_elements())),
                   app->download(bdw, 0, size_t(p.filter_elements())), app->download(bdb, 0, size_t(p.K)), what);
        CHECK(app->download(copy_of_y, 0, size_t(p.output_elements())) ==
              app->download(by, 0, size_t(p.output_elements())));
    }
    for (auto* buffer : {&bx, &bw, &bb, &bdy, &by, &bdx, &bdw, &bdb, &copy_of_y}) app->destroy(*buffer);
    CHECK_THROWS_AS(vkconv::record_into(context, VK_NULL_HANDLE), vkconv::Error);
}

TEST_CASE("vkconv's submissions wait for the application's semaphore and signal a timeline it can wait on",
          "[interop][recording]") {
    auto app = AppVulkan::create();
    if (!app) return;
    vkconv::Context context(app->external(), external_options());
    const ConvProblem p = layer();
    const auto x = vkt::random_values(size_t(p.input_elements()), 41);
    const auto w = vkt::random_values(size_t(p.filter_elements()), 42);
    const auto b = vkt::random_values(size_t(p.K), 43);
    auto tx = vkconv::Tensor::from_host(context, p.input_shape(), x);
    auto tw = vkconv::Tensor::from_host(context, p.filter_shape(), w);
    auto tb = vkconv::Tensor::from_host(context, p.bias_shape(), b);
    auto ty = vkconv::Tensor::from_host(context, p.output_shape(), vkt::poison(p.output_elements()));

    // The application signals a binary semaphore from its own (empty) submission.
    VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    VkSemaphore ready = VK_NULL_HANDLE;
    REQUIRE(vkCreateSemaphore(app->device, &info, nullptr, &ready) == VK_SUCCESS);
    VkSubmitInfo signal{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    signal.signalSemaphoreCount = 1;
    signal.pSignalSemaphores = &ready;
    REQUIRE(vkQueueSubmit(app->queue, 1, &signal, VK_NULL_HANDLE) == VK_SUCCESS);

    vkconv::Recording recording(context);
    vkconv::wait_semaphore(recording, ready);
    vkconv::forward(recording, p, tx, tw, &tb, ty, Algorithm::Im2col);
    vkconv::Submission submission = recording.submit();
    const vkconv::SubmissionSync sync = vkconv::submission_sync(submission);
    CHECK(sync.fence != VK_NULL_HANDLE);
    if (app->timeline) {
        REQUIRE(sync.timeline != VK_NULL_HANDLE);
        CHECK(sync.value > 0);
        VkSemaphoreWaitInfo wait{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
        wait.semaphoreCount = 1;
        wait.pSemaphores = &sync.timeline;
        wait.pValues = &sync.value;
        REQUIRE(vkWaitSemaphores(app->device, &wait, UINT64_MAX) == VK_SUCCESS);
        CHECK(submission.done());
    } else {
        CHECK(sync.timeline == VK_NULL_HANDLE);
    }
    submission.wait();
    vkt::check_close(ty.download(), vkconv::reference::forward(p, x, w, b),
                     vkconv::reference::forward(p, vkt::absolute(x), vkt::absolute(w), vkt::absolute(b)),
                     p.C * p.R * p.S + 1, "after the application's semaphore");
    vkDestroySemaphore(app->device, ready, nullptr);

    if (app->timeline) {
        // A timeline semaphore the application signals from the host only after vkconv submitted: the
        // submission must not run before.
        VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
        type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
        VkSemaphoreCreateInfo timeline_info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
        timeline_info.pNext = &type;
        VkSemaphore gate = VK_NULL_HANDLE;
        REQUIRE(vkCreateSemaphore(app->device, &timeline_info, nullptr, &gate) == VK_SUCCESS);
        ty.upload(vkt::poison(p.output_elements()));
        vkconv::Recording gated(context);
        vkconv::wait_semaphore(gated, gate, 5);
        vkconv::forward(gated, p, tx, tw, &tb, ty, Algorithm::Direct);
        vkconv::Submission pending = gated.submit();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        CHECK_FALSE(pending.done());  // still waiting for value 5
        VkSemaphoreSignalInfo signal_info{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
        signal_info.semaphore = gate;
        signal_info.value = 5;
        REQUIRE(vkSignalSemaphore(app->device, &signal_info) == VK_SUCCESS);
        pending.wait();
        vkt::check_close(ty.download(), vkconv::reference::forward(p, x, w, b),
                         vkconv::reference::forward(p, vkt::absolute(x), vkt::absolute(w), vkt::absolute(b)),
                         p.C * p.R * p.S + 1, "after the application's timeline semaphore");
        vkDestroySemaphore(app->device, gate, nullptr);
    }
    // Errors: a null semaphore, and waits on a recording the application submits.
    vkconv::Recording another(context);
    CHECK_THROWS_AS(vkconv::wait_semaphore(another, VK_NULL_HANDLE), vkconv::Error);
}
