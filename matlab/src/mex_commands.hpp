// The MEX's commands: vkconv(command, arguments...). Each takes its arguments after the command name and the
// number of outputs asked for, and returns its outputs (at most `max_outputs` of mex_entry.cpp's table).
#pragma once

#include <vector>

#include "mex_arrays.hpp"

namespace vkconv::mex {

using Outputs = std::vector<OwnedArray>;

// Y = vkconv('forward', X, weights, bias, Name, Value, ...)
Outputs forward_command(const mxArray* const* args, int count, int outputs);
// dX = vkconv('backwardData', dY, weights, sizeX, Name, Value, ...)
Outputs backward_data_command(const mxArray* const* args, int count, int outputs);
// [dW, db] = vkconv('backwardFilter', X, dY, sizeW, Name, Value, ...)
Outputs backward_filter_command(const mxArray* const* args, int count, int outputs);
// db = vkconv('backwardBias', dY, Name, Value, ...)
Outputs backward_bias_command(const mxArray* const* args, int count, int outputs);

// [Z, report] = vkconv('separableForward', X, Kminus, b1, Kplus, b2, Name, Value, ...)
Outputs separable_forward_command(const mxArray* const* args, int count, int outputs);
// [dX, dKminus, dKplus, db1, db2, report] = vkconv('separableBackward', X, Kminus, Kplus, dZ, Name, Value, ...)
Outputs separable_backward_command(const mxArray* const* args, int count, int outputs);

// info = vkconv('device') | vkconv('device', selector, Name, Value, ...)
Outputs device_command(const mxArray* const* args, int count, int outputs);
// list = vkconv('devices')
Outputs devices_command(const mxArray* const* args, int count, int outputs);
// stats = vkconv('stats')
Outputs stats_command(const mxArray* const* args, int count, int outputs);
// vkconv('trim'): the device memory the pool holds beyond its tensors goes back to the driver
Outputs trim_command(const mxArray* const* args, int count, int outputs);
// vkconv('reset')
Outputs reset_command(const mxArray* const* args, int count, int outputs);

}  // namespace vkconv::mex
