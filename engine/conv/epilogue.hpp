// The forward pass's fused epilogue, y = act(alpha * conv(x, w) + bias + beta * z) (vkconv::Epilogue in
// conv.hpp), as the recordings apply it: in the shader that writes each value of y, exactly once.
//
// Where the product's own kernel writes y (direct, depthwise, the GEMM of im2col and MEC's Solution B), that
// kernel applies all of it. Where a later shader writes y (MEC's Solution A moves its result through
// permute4d; a tiled pass copies each tile's result into place with copy_box), the product's kernel applies
// alpha (and the bias, as always) and the later shader the residual and the activation: scale_part() and
// write_part() below split the epilogue that way. (MEC's Solution A applies all of it in its GEMM, the
// residual parked first, where the residual is in place or the tensors are 16-bit: its permute then only
// moves values, and a 16-bit value is rounded once.)
//
// The shaders take the activation and whether a residual is read as specialization constants (ACTIVATION,
// HAS_RESIDUAL), and alpha, beta, negative_slope and the residual's element 0 as push constants. The residual
// is one more storage-buffer binding (the output's memory when it is in place, any buffer without one).
#pragma once

#include <cstdint>

#include "context/operands.hpp"
#include "gemm/gemm.hpp"
#include "vkconv/conv.hpp"
#include "vkconv/tensor.hpp"

namespace vkconv::detail {

struct FusedEpilogue {
    float alpha = 1.0f, beta = 0.0f, negative_slope = 0.0f;
    Activation activation = Activation::None;
    Operand residual;  // z, output-shaped; empty: none. Its memory may be the output's own (in place).

    bool has_residual() const { return static_cast<bool>(residual); }
    // What a product's kernel applies when a later shader writes y: alpha alone.
    FusedEpilogue scale_part() const { return {alpha, 0.0f, 0.0f, Activation::None, {}}; }
    // What that later shader applies: beta * z and the activation.
    FusedEpilogue write_part() const { return {1.0f, beta, negative_slope, activation, residual}; }
};

// The ACTIVATION specialization constant's value (the shaders' numbering, shaders/common/epilogue.glsl).
inline uint32_t activation_constant(Activation activation) {
    return static_cast<uint32_t>(activation);
}

// True when the residual is the output's own memory (an in-place residual add).
inline bool residual_in_place(const FusedEpilogue& epilogue, const Operand& output) {
    return epilogue.has_residual() && epilogue.residual.allocation.buffer == output.allocation.buffer &&
           epilogue.residual.allocation.offset + epilogue.residual.first * epilogue.residual.element_bytes ==
               output.allocation.offset + output.first * output.element_bytes;
}

// The residual's window over elements [first, first + count), the same elements as an output window; without
// a residual, `stand_in` (an output window: bound, never read).
inline Window residual_window(const FusedEpilogue& epilogue, uint64_t first, uint64_t count, uint64_t alignment,
                              const Window& stand_in) {
    return epilogue.has_residual() ? window(epilogue.residual, first, count, alignment) : stand_in;
}

// `gp` applying `epilogue` as it writes C (set gp.c first): C lies in the output window `y`, and `z` is the
// residual's window over the same elements (residual_window).
inline void set_gemm_epilogue(GemmProblem& gp, const FusedEpilogue& epilogue, const Window& y, const Window& z) {
    gp.alpha = epilogue.alpha;
    gp.activation = epilogue.activation;
    gp.negative_slope = epilogue.negative_slope;
    if (epilogue.has_residual()) {
        gp.beta = epilogue.beta;
        gp.residual = z.range;
        gp.residual_offset = gp.c.offset - y.delta + z.delta;
    }
}

// For kernels built to read the residual from the output (where the device allows too few storage
// buffers to bind it apart): z copied into y first; nothing to copy without a residual or in place.
void copy_residual_into_output(ContextImpl& context, CommandStream& stream, const FusedEpilogue& epilogue,
                               const Operand& output, DataType type);

// The public call's Epilogue as the recordings take it, after checking its rules against the pass's tensors
// (Error(InvalidArgument) naming the problem): finite numbers, beta != 0 exactly with a residual, a residual of
// the output's shape on `context` that is the output itself or shares no memory with it, nor with the input,
// filter or bias.
FusedEpilogue fused_epilogue(ContextImpl& context, const ConvProblem& problem, const Epilogue& epilogue,
                             const Tensor& input, const Tensor& filter, const Tensor* bias, const Tensor& output);

}  // namespace vkconv::detail
