// The separable layer's operands, and its --check against the CPU reference (reference.hpp, double).
#pragma once

#include <vector>

#include "separable_layer.hpp"

namespace separable {

// The layer's tensors, in its type, and the host values they hold (a 16-bit type's narrowed values, widened
// exactly: what the reference takes as the inputs).
struct Operands {
    vkconv::Tensor frames, k_minus, b1, k_plus, b2, z, g, df, dk_minus, dk_plus, db1, db2;
    std::vector<float> host_frames, host_k_minus, host_b1, host_k_plus, host_b2, host_g;
};

// Deterministic values in [-1, 1), uploaded in the layer's type.
Operands make_operands(vkconv::Context& context, const Layer& layer, const Shape& shape);

// Compares every output of the layer's run (z, df, dk_minus, dk_plus, db1, db2) with the reference, printing
// one line per output; false on a mismatch.
//  - f32: the bound 4·ε·(reduction length)·max|ref| on each output.
//  - 16-bit: each value against its own bound, the stated one of a pass (docs/algorithms.md, "Element types")
//    |ŷ − y| ≤ (1 + u_t)·E + u_t·|y| + η carried through the layer's chain of passes (check.cpp says how).
bool check(vkconv::Context& context, const Layer& layer, const Shape& shape, Operands& o);

}  // namespace separable
