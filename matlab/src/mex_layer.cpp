// The channel-wise separable layer (samples/separable_layer) on MATLAB arrays: the whole layer on the device,
// one upload of the frames per pass, its clips and differences made there (no per-time-step copy on the host).
//
// MATLAB's frames are H x W x C x F ('SSCB', F = 3 x clips, each clip's three time steps consecutive); the
// kernels 3 x 3 x 1 x 1 x C (dlconv's channel-wise weights); the biases C values. Column-major, they are the
// layer's NCHW frames and C x 1 x 3 x 3 kernels with height and width exchanged, which a layer of 3x3
// cross-correlations with symmetric padding computes the same way: so nothing is copied or transposed.
#include "mex_commands.hpp"
#include "mex_options.hpp"
#include "mex_session.hpp"

namespace vkconv::mex {

namespace {

[[noreturn]] void invalid(const std::string& message) {
    throw Error(ErrorCategory::InvalidArgument, message);
}

separable::Shape frames_shape(const mxArray* frames) {
    require_float_array(frames, "X");
    const std::vector<int64_t> x = extents(frames, 4, "X");
    if (x[3] % 3 != 0)
        invalid("X must hold clips of three frames: its fourth dimension (" + std::to_string(x[3]) +
                ") is not a multiple of 3");
    return separable::Shape{x[3], x[2], x[1], x[0]};  // the layer's height is MATLAB's width (see above)
}

void require_kernel(const mxArray* kernel, const char* role, int64_t channels) {
    require_float_array(kernel, role);
    const std::vector<int64_t> k = extents(kernel, 5, role);
    if (k != std::vector<int64_t>{3, 3, 1, 1, channels})
        invalid(std::string(role) + " must be 3x3x1x1x" + std::to_string(channels) +
                " (one 3x3 filter per channel); got " + describe(kernel));
}

void require_bias(const mxArray* bias, const char* role, int64_t channels) {
    require_float_array(bias, role);
    if (static_cast<int64_t>(mxGetNumberOfElements(bias)) != channels)
        invalid(std::string(role) + " must hold one value per channel (" + std::to_string(channels) + "); got " +
                describe(bias));
}

// The budget a call runs under: the option, else a fifth of the call's operands (so the pool peaks at no
// more than 1.2 times them).
uint64_t budget(const LayerOptions& options, uint64_t operand_bytes) {
    return options.workspace_budget ? options.workspace_budget : operand_bytes / 5;
}

OwnedArray report(const separable::Layer& layer, const separable::PassReport& r, uint64_t workspace_budget) {
    // The pool holds this call's tensors and the layer's own few (16-bit: its ones), so its peak is the call's.
    return make_struct({{"gpuMs", scalar(r.gpu_ms)},
                        {"wallMs", scalar(r.wall_ms)},
                        {"peakBytes", scalar(double(r.peak_bytes))},
                        {"operandBytes", scalar(double(r.operand_bytes))},
                        {"peakOverOperands", scalar(double(r.peak_bytes) / double(r.operand_bytes))},
                        {"workspacePeakBytes", scalar(double(r.peak_bytes - r.baseline_bytes))},
                        {"peakReservedBytes", scalar(double(r.peak_reserved_bytes))},
                        {"workspaceBudget", scalar(double(workspace_budget))},
                        {"chunkClips", scalar(double(layer.chunk_clips()))},
                        {"chunks", scalar(r.chunks)},
                        {"submissions", scalar(r.submissions)},
                        {"storage", char_array(to_string(layer.type()))},
                        {"convolutions", char_array(to_string(layer.algorithm()))}});
}

}  // namespace

Outputs separable_forward_command(const mxArray* const* args, int count, int) {
    if (count < 5) invalid("not enough arguments: [Z, report] = vkconv('separableForward', X, Kminus, b1, Kplus, b2)");
    const separable::Shape shape = frames_shape(args[0]);
    require_kernel(args[1], "Kminus", shape.channels), require_bias(args[2], "b1", shape.channels);
    require_kernel(args[3], "Kplus", shape.channels), require_bias(args[4], "b2", shape.channels);
    const LayerOptions options = parse_layer_options(args + 5, count - 5);

    const bool as_double = all_double({args[0], args[1], args[2], args[3], args[4]});
    Outputs out;
    out.push_back(result_array({shape.width, shape.height, shape.channels, shape.clips()}, as_double));

    Context& c = context();
    const vkconv::Shape frames{shape.frames, shape.channels, shape.height, shape.width};
    const vkconv::Shape kernel{shape.channels, 1, 3, 3}, bias{shape.channels};
    const Tensor x = upload(c, args[0], frames, options.storage);
    const Tensor k_minus = upload(c, args[1], kernel, options.storage), b1 = upload(c, args[2], bias, options.storage);
    const Tensor k_plus = upload(c, args[3], kernel, options.storage), b2 = upload(c, args[4], bias, options.storage);
    Tensor z(c, {shape.clips(), shape.channels, shape.height, shape.width}, options.storage);
    const uint64_t workspace = budget(options, separable::pool_bytes(c, {&x, &k_minus, &b1, &k_plus, &b2, &z}));
    separable::Layer& layer = separable_layer(shape, workspace, options.storage);
    const separable::PassReport r = layer.forward(x, k_minus, b1, k_plus, b2, z);
    download(z, out[0].get());
    out.push_back(report(layer, r, workspace));
    return out;
}

Outputs separable_backward_command(const mxArray* const* args, int count, int) {
    if (count < 4)
        invalid(
            "not enough arguments: [dX, dKminus, dKplus, db1, db2, report] = "
            "vkconv('separableBackward', X, Kminus, Kplus, dZ)");
    const separable::Shape shape = frames_shape(args[0]);
    require_kernel(args[1], "Kminus", shape.channels), require_kernel(args[2], "Kplus", shape.channels);
    require_float_array(args[3], "dZ");
    ConvProblem::check_shape("dZ (height, width, channels, clips)", extents(args[3], 4, "dZ"),
                             {shape.width, shape.height, shape.channels, shape.clips()});
    const LayerOptions options = parse_layer_options(args + 4, count - 4);

    const bool as_double = all_double({args[0], args[1], args[2], args[3]});
    const std::vector<int64_t> kernel_dims{3, 3, 1, 1, shape.channels}, bias_dims{shape.channels, 1};
    Outputs out;
    out.push_back(result_array(extents(args[0], 4, "X"), as_double));
    for (const auto* dims : {&kernel_dims, &kernel_dims, &bias_dims, &bias_dims})
        out.push_back(result_array(*dims, as_double));

    Context& c = context();
    const DataType type = options.storage;
    const vkconv::Shape kernel{shape.channels, 1, 3, 3}, bias{shape.channels};
    const Tensor x = upload(c, args[0], {shape.frames, shape.channels, shape.height, shape.width}, type);
    const Tensor k_minus = upload(c, args[1], kernel, type), k_plus = upload(c, args[2], kernel, type);
    const Tensor g = upload(c, args[3], {shape.clips(), shape.channels, shape.height, shape.width}, type);
    Tensor dx(c, x.shape(), type), dk_minus(c, kernel, type), dk_plus(c, kernel, type), db1(c, bias, type),
        db2(c, bias, type);
    const uint64_t workspace =
        budget(options, separable::pool_bytes(c, {&x, &k_minus, &k_plus, &g, &dx, &dk_minus, &dk_plus, &db1, &db2}));
    separable::Layer& layer = separable_layer(shape, workspace, type);
    const separable::PassReport r = layer.backward(x, k_minus, k_plus, g, dx, dk_minus, dk_plus, db1, db2);
    const Tensor* results[] = {&dx, &dk_minus, &dk_plus, &db1, &db2};
    for (size_t i = 0; i < 5; ++i) download(*results[i], out[i].get());
    out.push_back(report(layer, r, workspace));
    return out;
}

}  // namespace vkconv::mex
