// The implicit-GEMM algorithm: every pass as one tiled GEMM whose loaders compute the lowered matrix's
// addresses on the fly (shaders/implicit/implicit_gemm.comp), so it stores no lowered matrix. Its only
// workspace is backward-filter's partial products where its long N*P*Q reduction is split to fill the
// device (added in a fixed order: the same bits every run). Refused where one of the problem's tensors
// exceeds maxStorageBufferRange (the passes then run it in tiles, tiled/tiled.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "vkconv/conv.hpp"

namespace vkconv::detail {

struct ContextImpl;
struct GemmConfig;

// Whether implicit GEMM can run `pass` of `problem` with `config` on this context's device: forward and
// backward-filter on a CPU device run the register kernel (implicit_gemm_registers.comp) with the GEMM's
// register configurations that read storage buffers or uniform texel buffers (where the tensors fit texel
// views); everything else the shared-memory kernel with its single-buffered storage-buffer configurations.
// `vkconv tune` times exactly these.
bool implicit_candidate(ContextImpl& context, Pass pass, const GemmConfig& config, const ConvProblem& problem);
// The shader implicit GEMM runs with `config` on this context's device (the register kernel's texel build
// gives way to its storage-buffer one where an operand is an application's buffer, which it never reads
// through texel views).
std::string implicit_shader(const ContextImpl& context, const GemmConfig& config);

struct ImplicitPlan {
    uint32_t config = 0;      // index into the device's GEMM configurations (a shared-memory, storage-buffer one)
    uint64_t reduction = 0;   // the pass's reduction length (C/G*R*S, K/G*R*S or N*P*Q)
    uint64_t piece = 0;       // reduction per dispatch piece or slice (a multiple of the tile's K step)
    uint32_t slices = 1;      // backward-filter: slices in one dispatch, each its own partial product, summed
                              // in rounds of `piece` (ceil(reduction / (slices * piece)) of them)
    bool partials = false;    // backward-filter: slices > 1 write partial products (else pieces add into dw)
    bool registers = false;   // the register kernel (forward on CPU devices)
    // A 16-bit forward or backward-data in pieces: images per chunk whose output adds up in an fp32 copy
    // (Slot::WideOutput), rounded into the output after the chunk's last piece (0: no copy).
    uint64_t wide_images = 0;
    // A 16-bit dw in pieces: filters per chunk whose dw adds up in an fp32 copy (Slot::WideOutput), rounded
    // into dw after the chunk's last piece (0: no copy).
    uint64_t wide_rows = 0;
};

}  // namespace vkconv::detail
