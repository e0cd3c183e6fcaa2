// Fuzz target: ConvProblem::validate() on every field filled from the input, sizes of any int64 value
// (negative and huge included). A problem validate() accepts must then be safe for everything a caller
// does next: the derived sizes, shapes, element counts, byte counts of float32 tensors, the FLOP count,
// the string, and the engine's GEMM mapping. UBSan reports any signed overflow there; the fix for one
// belongs in validate(), which must refuse such a problem with Error(InvalidArgument).
//
// Input: fourteen little-endian int64 (N, C, H, W, K, R, S, pad_h, pad_w, stride_h, stride_w, dilation_h,
// dilation_w, groups), then a layout byte and a bias byte; fields past the end of the input keep
// ConvProblem's defaults.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "conv/gemm_mapping.hpp"
#include "vkconv/error.hpp"
#include "vkconv/problem.hpp"

namespace {

struct Reader {
    const uint8_t* data;
    size_t size;

    bool read(int64_t& field) {
        if (size < sizeof field) return false;
        uint64_t bits = 0;
        for (size_t i = 0; i < sizeof bits; ++i) bits |= uint64_t(data[i]) << (8 * i);
        std::memcpy(&field, &bits, sizeof field);
        data += sizeof field;
        size -= sizeof field;
        return true;
    }
    bool read_byte(uint8_t& byte) {
        if (size == 0) return false;
        byte = *data++;
        --size;
        return true;
    }
};

// Everything a caller of a validated problem computes. The results are summed (unsigned: the harness's own
// sum may wrap) so that nothing is optimized away.
uint64_t use(const vkconv::ConvProblem& p) {
    using namespace vkconv::detail;
    uint64_t sum =
        uint64_t(p.P()) + uint64_t(p.Q()) + uint64_t(p.channels_per_group()) + uint64_t(p.filters_per_group());
    // Element counts, the shapes' products and float32 byte counts, as tensors and workspaces are sized.
    for (int64_t elements : {p.input_elements(), p.filter_elements(), p.output_elements()})
        sum += uint64_t(elements * int64_t(sizeof(float)));
    for (const vkconv::Shape& shape : {p.input_shape(), p.filter_shape(), p.output_shape(), p.bias_shape()})
        sum += uint64_t(vkconv::shape_elements(shape));
    if (vkconv::shape_elements(p.input_shape()) != p.input_elements() ||
        vkconv::shape_elements(p.filter_shape()) != p.filter_elements() ||
        vkconv::shape_elements(p.output_shape()) != p.output_elements())
        std::abort();
    vkconv::ConvProblem::check_shape("output", p.output_shape(), p.output_shape());
    sum += p.forward_flops() > 0;
    sum += p.str().size();
    // The GEMM each pass maps to, for one chunk of every output position of one image.
    const int64_t positions = p.P() * p.Q();
    for (const GemmExtent& g :
         {forward_gemm(p, positions), backward_data_gemm(p, positions), backward_filter_gemm(p, positions)})
        sum += uint64_t(g.M) + uint64_t(g.N) + uint64_t(g.K);
    sum += uint64_t(group_filter_floats(p)) + uint64_t(input_rows_read(p, p.P()));
    sum += output_matrix(p, 0, p.groups - 1, 0, p.P()).image_stride;
    sum += mec_windows(p, p.H + p.pad_top() + p.pad_bottom()).image;
    return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    vkconv::ConvProblem p;
    Reader in{data, size};
    for (int64_t* field : {&p.N, &p.C, &p.H, &p.W, &p.K, &p.R, &p.S, &p.pad_h, &p.pad_w, &p.stride_h, &p.stride_w,
                           &p.dilation_h, &p.dilation_w, &p.groups})
        in.read(*field);
    uint8_t byte = 0;
    if (in.read_byte(byte)) p.layout = byte & 1 ? vkconv::Layout::NHWC : vkconv::Layout::NCHW;
    if (in.read_byte(byte)) p.has_bias = byte & 1;
    // Then optionally end pads of their own (asymmetric padding); corpora written before them stop above.
    int64_t end = 0;
    if (in.read(end)) p.pad_h_end = end;
    if (in.read(end)) p.pad_w_end = end;

    try {
        p.validate();
    } catch (const vkconv::Error& e) {
        if (e.category() != vkconv::ErrorCategory::InvalidArgument) std::abort();
        if (!std::string_view(e.what()).starts_with("ConvProblem: ")) std::abort();
        return 0;
    }
    volatile uint64_t sink = use(p);
    (void)sink;
    return 0;
}
