// Name-value options of the MEX's commands, and the vkconv problem a MATLAB convolution is.
//
// MATLAB's dlconv conventions: data 'SSCB' (height x width x channels x batch), weights height x width x
// channelsPerGroup x filtersPerGroup x groups, cross-correlation. Column-major storage makes the H x W x C x N
// array vkconv's row-major NCHW tensor with height and width exchanged, and the weights vkconv's OIHW filter
// with the taps exchanged the same way, so the problem is the MATLAB one transposed in its two spatial axes:
// every spatial size, stride, dilation and pad swaps its vertical and horizontal parts, and nothing is copied.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <vkconv/vkconv.hpp>

#include "mex.h"

namespace vkconv::mex {

// The options of the convolution commands, in MATLAB's terms (vertical first).
struct ConvOptions {
    std::array<int64_t, 2> stride{1, 1};
    std::array<int64_t, 2> dilation{1, 1};
    bool same = false;                       // 'Padding','same'
    std::array<int64_t, 4> pad{0, 0, 0, 0};  // top, bottom, left, right
    DataType storage = DataType::F32;        // the device tensors' type ('Storage')
    Algorithm algorithm = Algorithm::Auto;
    uint64_t workspace_limit = 0;  // bytes, 0: none
};

// backwardBias's options: Storage and WorkspaceLimit only (it has no geometry and one algorithm).
ConvOptions parse_bias_options(const mxArray* const* args, int count);

// The options of the separable-layer commands.
struct LayerOptions {
    DataType storage = DataType::F32;
    uint64_t workspace_budget = 0;  // bytes beyond the operands; 0: a fifth of the call's operands
};

// Parses Name, Value pairs (names case-insensitive, as MATLAB's). Error(InvalidArgument) naming an unknown
// name (and the names there are), a name without a value, or a value of the wrong kind.
ConvOptions parse_conv_options(const mxArray* const* args, int count);
LayerOptions parse_layer_options(const mxArray* const* args, int count);
// vkconv('device', selector, Name, Value, ...): the selector (an index or part of a name), then MemoryLimit
// (bytes the pool may hold, 0 for no cap), DeviceLimits (a device profile's name or file), PipelineCache (a file).
ContextOptions parse_device_options(const mxArray* const* args, int count);

// MATLAB sizes of a convolution: data [H W C N], weights [R S Cg Kg G].
struct MatlabConv {
    std::vector<int64_t> data;     // 4 extents
    std::vector<int64_t> weights;  // 5 extents
};

// The vkconv problem of that convolution (transposed as the header says). Error(InvalidArgument) in MATLAB's
// terms for channels that do not match the weights, and for a dilated filter larger than the padded data. A
// pad may exceed the dilated filter, as in PyTorch and ONNX: the outer outputs then see padding only.
ConvProblem to_problem(const MatlabConv& conv, const ConvOptions& options, bool bias);

// The MATLAB size of the problem's output: height, width, filters, batch (vkconv's Q, P, K, N: exchanged).
std::vector<int64_t> output_extents(const ConvProblem& problem);

PassOptions pass_options(const ConvOptions& options);

}  // namespace vkconv::mex
