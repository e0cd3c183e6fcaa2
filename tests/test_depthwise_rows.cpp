// Depthwise backward-data's streamed rows (NCHW with one filter per channel, on CPU devices): the kernel
// walks a block's dy rows once each through a ring of the dx rows their taps reach. Blocks of every height
// are forced here, so that rows above a block, rows past H, strides that skip dx rows and rings longer and
// shorter than the stride all occur, in fp32 and both 16-bit types, every dx value checked against the
// reference on the same inputs. (Other devices run their blocks' kernel, whatever the height asked for.)
#include "context/tensor_storage.hpp"
#include "conv/depthwise/depthwise.hpp"
#include "sixteen_bit_checks.hpp"
#include "vulkan/command_stream.hpp"

namespace {

using namespace sixteen;
namespace d = vkconv::detail;

d::Operand operand(const Tensor& t) {
    d::Operand op{d::storage_of(t)->pages.front(), uint64_t(t.elements())};
    op.element_bytes = vkconv::element_bytes(t.data_type());
    return op;
}

// dx of `p` with blocks of `rows` dx rows (a multiple of the stride, rounded down).
std::vector<float> backward_data_in_blocks(vkconv::Context& context, const ConvProblem& p, const Tensor& dy,
                                           const Tensor& w, uint32_t rows) {
    d::ContextImpl& impl = d::impl_of(context);
    d::DepthwisePlan plan = d::plan_depthwise(impl, p, Pass::BackwardData, {}).value();
    plan.data_rows = rows;
    Tensor dx = Tensor::from_host(context, p.input_shape(), vkt::poison(p.input_elements()), p.data_type);
    d::CommandStream stream(*impl.device);
    d::record_depthwise_backward_data(impl, stream, p, operand(dy), operand(w), operand(dx), plan, false);
    stream.submit_and_wait();
    return dx.download();
}

}  // namespace

TEST_CASE("depthwise backward-data is right in streamed blocks of every height", "[depthwise][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const std::vector<vkt::NamedProblem> problems = {
        {"3x3 pad 1", vkt::problem().batch(2).channels(3).depthwise(1).image(13, 20).kernel(3, 3).pad(1)},
        {"stride 2, dilation 2, pad 3",
         vkt::problem().batch(1).channels(2).depthwise(1).image(17, 24).kernel(3, 3).pad(3).stride(2).dilation(2)},
        {"5x3 stride 3,1, pad 0,1",
         vkt::problem().batch(1).channels(3).depthwise(1).image(16, 19).kernel(5, 3).pad(0, 1).stride(3, 1)},
        {"1x1 stride 2 (ring of the stride's rows)",
         vkt::problem().batch(2).channels(2).depthwise(1).image(11, 18).kernel(1, 1).stride(2)},
        {"pad 4 on 3x3", vkt::problem().batch(1).channels(2).depthwise(1).image(9, 12).kernel(3, 3).pad(4)},
        {"5x5 pad 2, width 40", vkt::problem().batch(1).channels(2).depthwise(1).image(10, 40).kernel(5, 5).pad(2)},
        {"7x7 pad 3 (blocks: too many taps to stream)",
         vkt::problem().batch(1).channels(2).depthwise(1).image(10, 40).kernel(7, 7).pad(3)},
    };
    uint32_t seed = 9100;
    for (const auto& [name, base] : problems) {
        for (DataType type : {DataType::F32, DataType::F16, DataType::BF16}) {
            ConvProblem p = base;
            p.data_type = type;
            INFO(name << ", " << vkconv::to_string(type) << ": " << p.str());
            auto [dy, dyv] = upload(*context, p.output_shape(), vkt::random_values(size_t(p.output_elements()), seed++), type);
            auto [w, wv] = upload(*context, p.filter_shape(), vkt::random_values(size_t(p.filter_elements()), seed++), type);
            const auto expected = vkconv::reference::backward_data(p, dyv, wv);
            const auto magnitude = vkconv::reference::backward_data(p, vkt::absolute(dyv), vkt::absolute(wv));
            for (uint32_t rows : {1u, 2u, 3u, 5u, 64u}) {
                INFO("rows " << rows);
                check_16bit(backward_data_in_blocks(*context, p, dy, w, rows), expected, magnitude, p.R * p.S, type,
                            "backward-data");
            }
        }
    }
}

// 16-bit rows read 8 elements a fetch (texel views on CPU devices: backward-data's dy, backward-filter's x
// and dy, where NCHW rows and each chunk's start fall on 8 elements), in every pass, whole and in chunks of
// images, beside shapes where only x's rows or neither qualify.
TEST_CASE("depthwise 16-bit passes are right where rows are read 8 elements a fetch", "[depthwise][types][gpu]") {
    VKT_REQUIRE_CONTEXT(context);
    const std::vector<vkt::NamedProblem> problems = {
        {"rows of 16", vkt::problem().batch(5).channels(4).depthwise(1).image(12, 16).kernel(3, 3).pad(1)},
        {"5x5 stride 2, x rows of 32, dy rows of 16",
         vkt::problem().batch(3).channels(2).depthwise(1).image(10, 32).kernel(5, 5).pad(2).stride(2)},
        {"dilation 2: x rows of 16, dy rows of 18",
         vkt::problem().batch(2).channels(3).depthwise(1).image(12, 16).kernel(3, 3).pad(3).dilation(2)},
        {"multiplier 2, rows of 24", vkt::problem().batch(2).channels(2).depthwise(2).image(9, 24).kernel(3, 3).pad(1)},
    };
    uint32_t seed = 9300;
    for (const auto& [name, base] : problems) {
        for (DataType type : {DataType::F16, DataType::BF16}) {
            ConvProblem p = base;
            p.data_type = type;
            INFO(name << ", " << vkconv::to_string(type));
            check_passes(*context, p, Algorithm::Depthwise, seed += 5);
            // Two images of the larger of x and y a binding: chunks that start 2 images apart.
            vkconv::PassOptions chunked;
            chunked.max_binding_bytes = 2 * uint64_t(std::max(p.input_elements(), p.output_elements()) / p.N) * 2 + 1024;
            check_passes(*context, p, Algorithm::Depthwise, seed += 5, chunked);
            Tensor x = Tensor::from_host(*context, p.input_shape(), vkt::random_values(size_t(p.input_elements()), seed), type);
            Tensor dy = Tensor::from_host(*context, p.output_shape(), vkt::random_values(size_t(p.output_elements()), seed), type);
            Tensor dw = Tensor::from_host(*context, p.filter_shape(), vkt::poison(p.filter_elements()), type);
            const auto stats = vkconv::backward_filter(*context, p, x, dy, dw, nullptr, Algorithm::Depthwise, chunked);
            CHECK(stats.chunks == uint32_t((p.N + 1) / 2));
        }
    }
}
