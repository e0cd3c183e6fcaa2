#include "conv/heuristic.hpp"

#include <algorithm>
#include <string>

#include "conv/lowered/lowered.hpp"
#include "conv/tiled/tiled.hpp"

namespace vkconv::detail {

Refusal nothing_fits(ContextImpl& context, const ConvProblem& p, const PassOptions& options) {
    const uint64_t im2col = smallest_lowered_workspace(context, p, Algorithm::Im2col);
    const uint64_t mec = smallest_lowered_workspace(context, p, Algorithm::Mec);
    const bool mec_smaller = mec < im2col;
    return {options.workspace_limit ? ErrorCategory::InvalidArgument : ErrorCategory::Unsupported,
            "no algorithm fits: the smallest workspace any algorithm needs is " +
                std::to_string(std::min(im2col, mec)) + " bytes (" + (mec_smaller ? "mec" : "im2col") +
                ", one output row a chunk), the workspace limit is " +
                (options.workspace_limit ? std::to_string(options.workspace_limit) + " bytes" : "none") +
                ", and direct cannot bind these tensors whole within maxStorageBufferRange nor run them in tiles " +
                "within the limit (" + p.str() + ")"};
}

Planned<AlgorithmPlan> heuristic_whole_plan(ContextImpl& context, const ConvProblem& p, Pass pass,
                                            const PassOptions& options) {
    auto plan = [&](Algorithm algorithm) { return plan_algorithm(context, p, pass, algorithm, options); };
    // First the algorithms whose rows prefer the problem, in the table's order, where they plan.
    for (Algorithm algorithm : all_algorithms()) {
        const AlgorithmEntry& entry = algorithm_entry(algorithm);
        if (entry.preferred && algorithm_applies(algorithm, p, pass) && entry.preferred(context, p, pass))
            if (auto preferred = plan(algorithm)) return preferred;
    }
    // One input channel per group: a GEMM with a reduction of R·S per group (backward-data: K/G) is all
    // overhead. Direct where the depthwise kernels (preferred above) cannot run, one image too large for them.
    if (p.channels_per_group() == 1)
        if (auto direct = plan(Algorithm::Direct)) return direct;
    // In NHWC the smaller lowering is MEC unless the kernel is one row tall (then the two are the same
    // size and im2col's plain GEMM wins); in NCHW, MEC's OHWI filter copy can outweigh its smaller lowered
    // matrix on late layers with many channels. A lowering that cannot fit even one row of output under
    // the binding limit is out of the running.
    auto im2col = plan(Algorithm::Im2col), mec = plan(Algorithm::Mec);
    if (mec && (!im2col || mec->workspace_bytes < im2col->workspace_bytes)) return mec;
    if (im2col) return im2col;
    // No lowering fits the workspace: the GEMM without one, then direct.
    if (auto implicit = plan(Algorithm::ImplicitGemm)) return implicit;
    if (auto direct = plan(Algorithm::Direct)) return direct;
    return nothing_fits(context, p, options);
}

Planned<Algorithm> heuristic_algorithm(ContextImpl& context, const ConvProblem& p, Pass pass,
                                       const PassOptions& options) {
    if (pass == Pass::BackwardBias) return Algorithm::Direct;  // one kernel
    // Too large to bind: the heuristic's algorithm for the tiles.
    if (needs_tiling(context, p, Algorithm::Auto, options)) {
        auto tiles = plan_tiled(context, p, pass, Algorithm::Auto, options);
        if (!tiles) return tiles.refusal();
        return tiles->algorithm;
    }
    auto whole = heuristic_whole_plan(context, p, pass, options);
    if (whole) return whole->algorithm;
    // A 16-bit problem whose fp32 sums no algorithm binds whole: the first whose fp32 tiles run it, as
    // plan_pass_on runs them for that algorithm.
    if (p.data_type != DataType::F32)
        for (Algorithm algorithm : {Algorithm::Im2col, Algorithm::Mec, Algorithm::ImplicitGemm, Algorithm::Direct}) {
            auto planned = plan_algorithm(context, p, pass, algorithm, options);
            if (!planned && fp32_tiles_for(context, p, pass, algorithm, options, planned.refusal())) return algorithm;
        }
    // Nothing binds whole and no lowering fits: direct in tiles, where those fit.
    if (needs_tiling(context, p, Algorithm::Direct, options) &&
        plan_tiled(context, p, pass, Algorithm::Direct, options))
        return Algorithm::Direct;
    return whole.refusal();
}

}  // namespace vkconv::detail
