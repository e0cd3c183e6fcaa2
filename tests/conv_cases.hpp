// The named table of deliberately odd convolution problems and the random sweep, shared by every
// algorithm's tests; and the check that runs one problem on the GPU against the CPU reference.
#pragma once

#include <string>
#include <vector>

#include "gpu.hpp"

namespace vkt {

struct NamedProblem {
    std::string name;
    vkconv::ConvProblem problem;  // layout NCHW, no bias: tests vary those two themselves
};

// One variation per case (XNNPACK style): kernel sizes, strides, padding, dilation, groups, odd channels.
std::vector<NamedProblem> odd_problems();

// `count` small valid problems drawn from a fixed seed: any stride/padding/dilation/groups, both layouts,
// with and without bias.
std::vector<vkconv::ConvProblem> random_problems(int count, uint32_t seed);

// Every algorithm that runs `problem` in all passes: direct, im2col and mec, and depthwise where each group has
// one input channel. The one list the pass tests iterate: a new algorithm added here is checked by all of them.
std::vector<vkconv::Algorithm> algorithms_for(const vkconv::ConvProblem& problem);

// Runs forward with `algorithm` on poisoned output memory and checks every value against the reference.
// Returns the RunStats of the pass.
vkconv::RunStats check_forward(vkconv::Context& context, const vkconv::ConvProblem& problem,
                               vkconv::Algorithm algorithm, uint32_t seed, const vkconv::ForwardOptions& options = {});

}  // namespace vkt
