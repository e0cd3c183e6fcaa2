// The algorithm table, and the steps every algorithm's plan and recording share.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "conv/algorithm_plan.hpp"

namespace vkconv::detail {

// Each row's entry, defined in its algorithm's folder.
#define VKCONV_DECLARE_ENTRY(enumerator, name, entry, summary) extern const AlgorithmEntry entry##_algorithm;
VKCONV_ALGORITHMS(VKCONV_DECLARE_ENTRY)
#undef VKCONV_DECLARE_ENTRY

namespace {

struct AlgorithmRow {
    Algorithm algorithm;
    const AlgorithmEntry* entry;
};

#define VKCONV_ROW(enumerator, name, entry, summary) AlgorithmRow{Algorithm::enumerator, &entry##_algorithm},
const AlgorithmRow kRows[] = {VKCONV_ALGORITHMS(VKCONV_ROW)};
#undef VKCONV_ROW

const AlgorithmRow* row_of(Algorithm algorithm) noexcept {
    for (const AlgorithmRow& row : kRows)
        if (row.algorithm == algorithm) return &row;
    return nullptr;
}

}  // namespace

const AlgorithmEntry& algorithm_entry(Algorithm algorithm) {
    if (const AlgorithmRow* row = row_of(algorithm)) return *row->entry;
    throw Error(ErrorCategory::InvalidArgument,
                std::string("no algorithm entry for '") + to_string(algorithm) + "' (Auto must be resolved first)");
}

namespace {

// The bias gradient of backward-filter with a bias, or of backward-bias: partial sums where the workspace
// limit leaves room for them, else its pieces added straight into db.
Planned<BiasPlan> plan_bias(ContextImpl& context, const ConvProblem& p, const PassOptions& options,
                            AlgorithmPlan& plan) {
    auto bias = plan_bias_grad(context, p, options.max_binding_bytes);
    if (!bias) return bias;
    plan.bias = *bias;
    plan.slot(Slot::BiasPartials) = plan.bias.partial_floats;
    if (options.workspace_limit && workspace_bytes_of(context, plan.slots) > options.workspace_limit) {
        if (p.weight_gradient_type() != DataType::F32)  // a 16-bit db is rounded once, from fp32 partial sums
            return unsupported("the bias gradient of a " + std::string(to_string(p.data_type)) + " problem needs " +
                               std::to_string(workspace_bytes_of(context, plan.slots)) +
                               " bytes of workspace with its fp32 partial sums, above the workspace limit of " +
                               std::to_string(options.workspace_limit) + " bytes (" + p.str() + ")");
        // No partial sums: the fewest pieces one invocation's loop allows, added straight into db in turn.
        plan.bias.pieces = bias_pieces_for_loop_limit(p, plan.bias.images);
        plan.bias.in_place = plan.bias.pieces > 1;
        plan.bias.partial_floats = 0;
        plan.slot(Slot::BiasPartials) = 0;
    }
    return plan.bias;
}

}  // namespace

uint64_t workspace_bytes_of(const ContextImpl& context, std::span<const uint64_t> slots) {
    uint64_t bytes = 0;
    for (uint64_t floats : slots)
        if (floats) bytes += context.pool->round(floats * 4);
    return bytes;
}

uint32_t AlgorithmPlan::bias_pieces(const ConvProblem& problem) const {
    if (pass == Pass::BackwardBias) return static_cast<uint32_t>(bias.pieces);
    if (pass != Pass::BackwardFilter || !problem.has_bias) return 0;
    return bias.in_place ? 1u : static_cast<uint32_t>(bias.pieces);  // in place: no partial sums
}

Planned<AlgorithmPlan> plan_algorithm(ContextImpl& context, const ConvProblem& p, Pass pass, Algorithm algorithm,
                                      const PassOptions& options) {
    if (pass == Pass::BackwardBias) {
        AlgorithmPlan plan;
        plan.pass = pass;
        auto bias = plan_bias(context, p, options, plan);
        if (!bias) return bias.refusal();
        plan.chunks = static_cast<uint32_t>((p.N + plan.bias.images - 1) / plan.bias.images);
        plan.workspace_bytes = workspace_bytes_of(context, plan.slots);
        return plan;
    }
    const AlgorithmEntry& entry = algorithm_entry(algorithm);
    if (p.data_type != DataType::F32 && !(entry.passes_16bit & pass_bit(pass)))
        return unsupported(std::string(to_string(algorithm)) + " does not run " + to_string(pass) + " on " +
                           to_string(p.data_type) + " tensors (" + p.str() + ")");
    if (!(entry.passes & pass_bit(pass)))
        return unsupported(std::string(to_string(algorithm)) + " does not run " + to_string(pass) + " (" + p.str() + ")");
    if (entry.applies && !entry.applies(p))
        return unsupported(std::string(to_string(algorithm)) + ": the problem is not one it runs (it needs " +
                           entry.requirement + "): " + p.str());
    // A form of another algorithm (asked for with Auto) is not this one's: it plans its own choice.
    const std::vector<std::string> forms = algorithm_variants(algorithm, pass);
    PassOptions own = options;
    if (std::find(forms.begin(), forms.end(), options.variant) == forms.end()) own.variant.clear();
    auto planned = entry.plan(context, p, pass, own);
    if (!planned) return planned;
    AlgorithmPlan& plan = *planned;
    if (pass == Pass::BackwardFilter && p.has_bias)
        if (auto bias = plan_bias(context, p, options, plan); !bias) return bias.refusal();
    plan.workspace_bytes = workspace_bytes_of(context, plan.slots);
    if (options.workspace_limit && plan.workspace_bytes > options.workspace_limit)
        return unsupported(std::string(to_string(algorithm)) + ": needs " + std::to_string(plan.workspace_bytes) +
                           " bytes of workspace, above the workspace limit of " +
                           std::to_string(options.workspace_limit) + " bytes (" + p.str() + ")");
    return planned;
}

void check_variant(Algorithm algorithm, const PassOptions& options) {
    if (options.variant.empty()) return;
    std::string known;
    for (const AlgorithmRow& row : kRows) {
        if (algorithm != Algorithm::Auto && row.algorithm != algorithm) continue;
        std::vector<std::string> forms;
        for (Pass pass : {Pass::Forward, Pass::BackwardData, Pass::BackwardFilter})
            for (const std::string& form : algorithm_variants(row.algorithm, pass))
                if (std::find(forms.begin(), forms.end(), form) == forms.end()) forms.push_back(form);
        for (const std::string& form : forms) {
            if (form == options.variant) return;
            known += (known.empty() ? "" : ", ") + form + " (" + to_string(row.algorithm) + ")";
        }
    }
    const std::string whose = algorithm == Algorithm::Auto ? std::string("any algorithm") : to_string(algorithm);
    throw Error(ErrorCategory::InvalidArgument, "PassOptions::variant '" + options.variant + "' is not a form of " +
                                                    whose + " (" +
                                                    (known.empty() ? std::string("it has none") : "forms: " + known) +
                                                    ")");
}

void record_algorithm(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                      const ConvOperands& operands, Workspace workspace) {
    if (plan.pass != Pass::BackwardBias) algorithm_entry(plan.algorithm).record(context, stream, p, plan, operands, workspace);
    const bool bias_gradient = plan.pass == Pass::BackwardBias || plan.pass == Pass::BackwardFilter;
    if (bias_gradient && operands.bias)
        record_bias_grad(context, stream, p, plan.bias, operands.output, operands.bias, workspace[Slot::BiasPartials]);
}

}  // namespace vkconv::detail

namespace vkconv {

std::vector<std::string> algorithm_variants(Algorithm algorithm, Pass pass) {
    std::vector<std::string> forms;
    const detail::AlgorithmRow* row = detail::row_of(algorithm);
    if (row && (row->entry->variant_passes & detail::pass_bit(pass)))
        for (const char* form : row->entry->variants)
            if (form) forms.push_back(form);
    return forms;
}

bool algorithm_applies(Algorithm algorithm, const ConvProblem& problem, Pass pass) noexcept {
    if (algorithm == Algorithm::Auto) return true;
    const detail::AlgorithmRow* row = detail::row_of(algorithm);
    if (!row || !(row->entry->passes & detail::pass_bit(pass))) return false;
    return !row->entry->applies || row->entry->applies(problem);
}

}  // namespace vkconv
