// The MEX's device: one vkconv::Context, made on the first call that needs it and kept (with its pipelines,
// pool and cached layers) while the MEX stays loaded, so only the first call pays for device creation and
// pipeline builds. `clear vkconv`, `clear mex` and MATLAB's or Octave's exit release it (mexAtExit).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <vkconv/vkconv.hpp>

#include "separable_layer.hpp"

namespace vkconv::mex {

// The context, made with the options of the last select_device (at first: VKCONV_DEVICE or the best device).
Context& context();
// Makes a context with `options` and drops the current one for it (options.device: an index or part of a
// name, "" for the default; a memory cap, imposed limits, a pipeline cache file). Made at once, so a
// selector that matches nothing is an error here, and the context in use stays.
void select_device(const ContextOptions& options);
// Drops the context and everything made on it.
void release();

// The separable layer for `shape`, `budget` and `type`, made once per combination and kept on the context.
separable::Layer& separable_layer(const separable::Shape& shape, uint64_t budget, DataType type);

// What the last pass ran and cost (vkconv('stats')).
struct LastRun {
    std::string command;
    RunStats stats;
};
LastRun& last_run();

}  // namespace vkconv::mex
