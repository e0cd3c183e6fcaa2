#include "conv/pass_plan.hpp"

#include "conv/bias_add.hpp"
#include "conv/heuristic.hpp"

namespace vkconv::detail {
namespace {

template <typename... Ts>
struct Overloaded : Ts... {
    using Ts::operator()...;
};
template <typename... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

Algorithm PassPlan::algorithm() const {
    return std::visit(
        Overloaded{[](const AlgorithmPlan& p) { return p.algorithm; }, [](const TiledPlan& p) { return p.algorithm; },
                   [](const TiledBiasPlan&) { return Algorithm::Direct; },
                   [](const SlicedPlan& p) { return p.algorithm; }},
        how);
}

std::vector<uint64_t> PassPlan::slots() const {
    return std::visit(
        Overloaded{[](const AlgorithmPlan& p) { return std::vector<uint64_t>(p.slots.begin(), p.slots.end()); },
                   [](const auto& p) { return p.slots; }},
        how);
}

uint64_t PassPlan::workspace_bytes() const {
    return std::visit([](const auto& p) { return p.workspace_bytes; }, how);
}

RunStats PassPlan::planned_stats(const ConvProblem& problem, uint64_t operand_bytes) const {
    RunStats stats;
    stats.algorithm = algorithm();
    stats.workspace_bytes = workspace_bytes();
    stats.operand_bytes = operand_bytes;
    std::visit(Overloaded{[&](const AlgorithmPlan& p) {
                              stats.variant = p.variant;
                              stats.chunks = p.chunks;
                              stats.partial_products = p.partial_products;
                              stats.bias_pieces = p.bias_pieces(problem);
                          },
                          [&](const TiledPlan& p) {
                              stats.variant = p.variant();
                              stats.chunks = p.tiles;
                              stats.partial_products = p.partial_products;
                              stats.bias_pieces = p.bias_pieces;
                          },
                          [&](const TiledBiasPlan& p) {
                              stats.chunks = p.tiles;
                              stats.bias_pieces = p.bias_pieces;
                          },
                          [&](const SlicedPlan& p) {
                              // Chunks over all slices; the split reductions the most any slice uses.
                              stats.chunks = 0;
                              for (const Slice& slice : p.slices) {
                                  ConvProblem q = problem;
                                  q.N = slice.n1 - slice.n0;
                                  const RunStats part = p.shapes[slice.shape].plan->planned_stats(q, 0);
                                  stats.chunks += part.chunks;
                                  stats.partial_products = std::max(stats.partial_products, part.partial_products);
                                  stats.bias_pieces = std::max(stats.bias_pieces, part.bias_pieces);
                                  if (stats.variant.empty()) stats.variant = part.variant;
                              }
                          }},
               how);
    return stats;
}

Planned<PassPlan> plan_pass_on(ContextImpl& context, const ConvProblem& problem, Pass pass, Algorithm algorithm,
                            const PassOptions& options, const Paging* paging) {
    PassPlan plan;
    plan.pass = pass;
    const Paging canonical = paging ? Paging{} : canonical_paging(context, problem, pass);
    if (const Paging& pages = paging ? *paging : canonical; pages.any()) {
        auto sliced = plan_sliced(context, problem, pass, algorithm, options, pages);
        if (!sliced) return sliced.refusal();
        plan.how = std::move(*sliced);
        return plan;
    }
    if (pass == Pass::BackwardBias) {
        if (bias_needs_tiling(context, problem)) {
            auto tiles = plan_tiled_bias(context, problem);
            if (!tiles) return tiles.refusal();
            plan.how = *tiles;
        } else {
            auto whole = plan_algorithm(context, problem, pass, Algorithm::Direct, options);
            if (!whole) return whole.refusal();
            plan.how = *whole;
        }
        return plan;
    }
    if (algorithm == Algorithm::Auto) {
        auto chosen = heuristic_algorithm(context, problem, pass, options);
        if (!chosen) return chosen.refusal();
        algorithm = *chosen;
    }
    if (needs_tiling(context, problem, algorithm, options)) {
        auto tiles = plan_tiled(context, problem, pass, algorithm, options);
        if (!tiles) return tiles.refusal();
        plan.how = std::move(*tiles);
    } else {
        auto whole = plan_algorithm(context, problem, pass, algorithm, options);
        if (!whole) {
            auto tiles = fp32_tiles_for(context, problem, pass, algorithm, options, whole.refusal());
            if (!tiles) return whole.refusal();
            plan.how = std::move(*tiles);
            return plan;
        }
        plan.how = *whole;
    }
    return plan;
}

namespace {

// A pass, for prebuilt_passes: its problem, pass, algorithm and workspace slots (FNV-1a). A pass that
// collides with another only builds its pipelines one at a time, as the recording meets them.
uint64_t pass_key(const ConvProblem& p, const PassPlan& plan) {
    uint64_t hash = 14695981039346656037ull;
    auto mix = [&](uint64_t value) { hash = (hash ^ value) * 1099511628211ull; };
    for (int64_t v : {p.N, p.C, p.H, p.W, p.K, p.R, p.S, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w, p.groups})
        mix(uint64_t(v));
    for (int64_t pad : {p.pad_top(), p.pad_bottom(), p.pad_left(), p.pad_right()}) mix(uint64_t(pad));
    mix(uint64_t(p.layout)), mix(p.has_bias), mix(uint64_t(p.data_type)), mix(uint64_t(p.weight_gradient_type()));
    mix(uint64_t(plan.pass));
    mix(uint64_t(plan.algorithm()));
    mix(plan.how.index());
    for (uint64_t floats : plan.slots()) mix(floats);
    return hash;
}

// The first time a context records a pass: the pass is recorded first into a planning stream, with the
// pipeline cache noting the pipelines it lacks, which are then built together on several threads
// (PipelineCache::build). Drivers compile a pipeline on the calling thread, and a first training step
// builds dozens. Whatever fails here is left to the real recording, which reports it.
void prebuild_pipelines(ContextImpl& context, const ConvProblem& problem, const PassPlan& plan,
                        const ConvOperands& operands, std::span<const Operand> workspace) {
    if (!context.prebuilt_passes.insert(pass_key(problem, plan)).second) return;
    std::vector<PlannedDispatch> ignored;
    CommandStream dry_run(*context.device, ignored);
    context.pipelines->begin_collecting();
    try {
        record_pass(context, dry_run, problem, plan, operands, workspace);
    } catch (...) {
    }
    const std::vector<PipelineDesc> lacking = context.pipelines->end_collecting();
    try {
        if (lacking.size() > 1) context.pipelines->build(lacking);
    } catch (...) {
    }
}

}  // namespace

void record_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const PassPlan& plan,
                 const ConvOperands& operands, std::span<const Operand> workspace) {
    if (!stream.planning() && !context.device->modelled())
        prebuild_pipelines(context, problem, plan, operands, workspace);
    // A backward-data pass with a bias is a transposed convolution's: the bias goes into dx first and the
    // pass (an algorithm's, or its tiles' copies) adds its sums to it, rounding each value once. A sliced
    // pass's slices each do so on their own images.
    ConvOperands ops = operands;
    if (plan.pass == Pass::BackwardData && operands.bias && !plan.sliced()) {
        record_bias_add(context, stream, problem, operands.input, operands.bias, true);
        ops.add_into_dx = true;
    }
    std::visit(Overloaded{[&](const AlgorithmPlan& p) {
                              record_algorithm(context, stream, problem, p, ops, Workspace{workspace});
                          },
                          [&](const TiledPlan& p) { record_tiled(context, stream, problem, p, ops, workspace); },
                          [&](const TiledBiasPlan& p) {
                              record_tiled_bias(context, stream, problem, p, operands.output, operands.bias, workspace);
                          },
                          [&](const SlicedPlan& p) { record_sliced(context, stream, problem, p, ops, workspace); }},
               plan.how);
}

PassPlan plan_for_operands(ContextImpl& context, const ConvProblem& problem, PassPlan plan,
                           const PassOptions& options, const ConvOperands& operands) {
    const Paging paging = paging_of(operands);
    if (plan_fits_paging(problem, plan, paging)) return plan;
    return plan_pass_on(context, problem, plan.pass, plan.algorithm(), options, &paging).value();
}

}  // namespace vkconv::detail
