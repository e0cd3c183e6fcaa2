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
                   [](const TiledBiasPlan&) { return Algorithm::Direct; }},
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
                          }},
               how);
    return stats;
}

Planned<PassPlan> plan_pass(ContextImpl& context, const ConvProblem& problem, Pass pass, Algorithm algorithm,
                            const PassOptions& options) {
    PassPlan plan;
    plan.pass = pass;
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
                          }},
               plan.how);
    // A backward-data pass with a bias is a transposed convolution's: the bias goes on once dx is whole.
    if (plan.pass == Pass::BackwardData && operands.bias) record_bias_add(context, stream, problem, operands.input, operands.bias);
}

}  // namespace vkconv::detail
