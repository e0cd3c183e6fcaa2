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
                              stats.mec_schedule = p.mec_schedule();
                              stats.chunks = p.chunks;
                              stats.partial_products = p.partial_products();
                              stats.bias_pieces = p.bias_pieces(problem);
                          },
                          [&](const TiledPlan& p) {
                              stats.mec_schedule = p.pass == Pass::Forward ? p.mec_schedule() : MecSchedule::Auto;
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
                                  if (stats.mec_schedule == MecSchedule::Auto) stats.mec_schedule = part.mec_schedule;
                              }
                          }},
               how);
    return stats;
}

Planned<PassPlan> plan_pass(ContextImpl& context, const ConvProblem& problem, Pass pass, Algorithm algorithm,
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
        if (!whole) return whole.refusal();
        plan.how = *whole;
    }
    return plan;
}

void record_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const PassPlan& plan,
                 const ConvOperands& operands, std::span<const Operand> workspace) {
    std::visit(Overloaded{[&](const AlgorithmPlan& p) {
                              record_algorithm(context, stream, problem, p, operands, Workspace{workspace});
                          },
                          [&](const TiledPlan& p) { record_tiled(context, stream, problem, p, operands, workspace); },
                          [&](const TiledBiasPlan& p) {
                              record_tiled_bias(context, stream, problem, p, operands.output, operands.bias, workspace);
                          },
                          [&](const SlicedPlan& p) { record_sliced(context, stream, problem, p, operands, workspace); }},
               plan.how);
    // A backward-data pass with a bias is a transposed convolution's: the bias goes on once dx is whole
    // (a sliced pass's slices each add it to their own images).
    if (plan.pass == Pass::BackwardData && operands.bias && !plan.sliced())
        record_bias_add(context, stream, problem, operands.input, operands.bias);
}

PassPlan plan_for_operands(ContextImpl& context, const ConvProblem& problem, PassPlan plan,
                           const PassOptions& options, const ConvOperands& operands) {
    const Paging paging = paging_of(operands);
    if (plan_fits_paging(problem, plan, paging)) return plan;
    return plan_pass(context, problem, plan.pass, plan.algorithm(), options, &paging).value();
}

}  // namespace vkconv::detail
