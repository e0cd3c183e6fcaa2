// Passes over paged tensors, in slices of the batch (paged/sliced.hpp).
#include "conv/paged/sliced.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "context/context_impl.hpp"
#include "conv/heuristic.hpp"
#include "conv/pass_plan.hpp"
#include "memory/paging.hpp"

namespace vkconv::detail {
namespace {

// The first element of each page after the first of a tensor of `shape` and `type` as the context allocates it.
std::vector<uint64_t> page_starts(const Shape& shape, uint64_t largest_bytes, DataType type) {
    uint64_t page = 0;
    try {
        page = page_elements_of(shape, largest_bytes, element_bytes(type));
    } catch (const Error&) {
        return {};  // not even a row fits a buffer: no such tensor exists, and no plan binds one either
    }
    std::vector<uint64_t> starts;
    if (!page) return starts;
    uint64_t elements = 1;
    for (int64_t d : shape) elements *= uint64_t(d);
    for (uint64_t at = page; at < elements; at += page) starts.push_back(at);
    return starts;
}

std::vector<uint64_t> page_starts(const Operand& op) {
    std::vector<uint64_t> starts;
    if (op.paged())
        for (size_t i = 1; i < op.pages->size(); ++i) starts.push_back((*op.pages)[i].begin);
    return starts;
}

// The plan of a slice whose tensors span pages: tiles, whose copies split at page boundaries.
Planned<PassPlan> plan_in_tiles(ContextImpl& context, const ConvProblem& q, Pass pass, Algorithm algorithm,
                                const PassOptions& options) {
    PassPlan plan;
    plan.pass = pass;
    if (pass == Pass::BackwardBias) {
        auto tiles = plan_tiled_bias(context, q);
        if (!tiles) return tiles.refusal();
        plan.how = *tiles;
    } else {
        auto tiles = plan_tiled(context, q, pass, algorithm, options);
        if (!tiles) return tiles.refusal();
        plan.how = std::move(*tiles);
    }
    return plan;
}

// Where a sliced backward-filter or backward-bias sums its slices' dw and db (the outputs, or with wide_sums
// their fp32 copies in the workspace) and where each slice after the first writes its own.
struct SliceSums {
    Operand dw, db, dw_slice, db_slice;
};
SliceSums slice_sums(const ConvProblem& p, const SlicedPlan& plan, const ConvOperands& ops,
                     std::span<const Operand> workspace) {
    auto fp32 = [](const Operand& slot, int64_t count) { return Operand{slot.allocation, uint64_t(count)}; };
    SliceSums sums;
    if (plan.accumulators == 0) return sums;
    sums.dw_slice = fp32(workspace[0], p.filter_elements());
    sums.db_slice = fp32(workspace[1], p.K);
    if (p.weight_gradient_type() == DataType::F32) {
        sums.dw = ops.filter, sums.db = ops.bias;
    } else {
        sums.dw = fp32(workspace[2], p.filter_elements()), sums.db = fp32(workspace[3], p.K);
    }
    return sums;
}

}  // namespace

ConvProblem SlicedPlan::slice_problem(const ConvProblem& problem, int64_t images) const {
    ConvProblem q = problem;
    q.N = images;
    if (wide_sums) q.fp32_weight_gradients = true;
    return q;
}

Paging canonical_paging(const ContextImpl& context, const ConvProblem& p, Pass pass) {
    const uint64_t largest = context.pool->largest_allocation();
    // dw and db in their own type (ConvProblem::weight_gradient_type), every other tensor in data_type.
    const bool gradients = pass == Pass::BackwardFilter || pass == Pass::BackwardBias;
    const DataType type = p.data_type, weights = gradients ? p.weight_gradient_type() : type;
    Paging paging;
    if (pass != Pass::BackwardBias) {
        paging.input = page_starts(p.input_shape(), largest, type);
        paging.filter = !page_starts(p.filter_shape(), largest, weights).empty();
    }
    paging.output = page_starts(p.output_shape(), largest, type);
    if (p.has_bias) paging.bias = !page_starts(p.bias_shape(), largest, weights).empty();
    return paging;
}

Paging paging_of(const ConvOperands& ops) {
    Paging paging;
    paging.input = page_starts(ops.input);
    paging.output = page_starts(ops.output);
    paging.residual = page_starts(ops.epilogue.residual);
    paging.filter = ops.filter.paged();
    paging.bias = ops.bias.paged();
    return paging;
}

std::vector<std::pair<Slice, bool>> slices_for(const ConvProblem& p, const Paging& paging) {
    std::set<int64_t> cuts{0, p.N}, split;
    auto add = [&](const std::vector<uint64_t>& starts, uint64_t image) {
        for (uint64_t start : starts) {
            const int64_t n = int64_t(start / image);
            cuts.insert(n);
            if (start % image) cuts.insert(n + 1), split.insert(n);  // a page starts inside image n
        }
    };
    add(paging.input, uint64_t(p.C * p.H * p.W));
    add(paging.output, uint64_t(p.K * p.P() * p.Q()));
    add(paging.residual, uint64_t(p.K * p.P() * p.Q()));
    std::vector<std::pair<Slice, bool>> slices;
    for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it)
        slices.push_back({{*it, *std::next(it), 0}, paging.filter || paging.bias || split.count(*it) > 0});
    return slices;
}

Planned<SlicedPlan> plan_sliced(ContextImpl& context, const ConvProblem& problem, Pass pass, Algorithm algorithm,
                                const PassOptions& options, const Paging& paging) {
    if (pass == Pass::BackwardBias) algorithm = Algorithm::Direct;
    if (algorithm == Algorithm::Auto) {
        auto chosen = heuristic_algorithm(context, problem, pass, options);
        if (!chosen) return chosen.refusal();
        algorithm = *chosen;
    }
    const auto cut = slices_for(problem, paging);
    SlicedPlan plan;
    plan.pass = pass;
    plan.algorithm = algorithm;
    // Sums over images: later slices' dw and db go to accumulators and are added in. A 16-bit dw and db
    // are summed in fp32 (every slice writes fp32 ones, the first into the sums) and rounded once at the end.
    const bool sums = cut.size() > 1 && (pass == Pass::BackwardFilter || pass == Pass::BackwardBias);
    plan.wide_sums = sums && problem.weight_gradient_type() != DataType::F32;
    const uint64_t dw = pass == Pass::BackwardFilter ? uint64_t(problem.filter_elements()) : 0;
    const uint64_t db = problem.has_bias || pass == Pass::BackwardBias ? uint64_t(problem.K) : 0;
    if (sums) plan.slots = {dw, db};
    if (plan.wide_sums) plan.slots.insert(plan.slots.end(), {dw, db});  // each slice's own, then the sums
    plan.accumulators = plan.slots.size();
    const uint64_t accumulator_bytes = workspace_bytes_of(context, plan.slots);
    PassOptions inner = options;
    if (options.workspace_limit) {
        if (accumulator_bytes >= options.workspace_limit)
            return Refusal{ErrorCategory::InvalidArgument,
                           "the workspace limit of " + std::to_string(options.workspace_limit) +
                               " bytes does not hold the " + std::to_string(accumulator_bytes) +
                               " bytes of accumulators a paged " + to_string(pass) + " pass sums into (" +
                               problem.str() + ")"};
        inner.workspace_limit = options.workspace_limit - accumulator_bytes;
    }
    static const Paging unpaged;
    for (const auto& entry : cut) {
        const Slice& slice = entry.first;
        const bool tiled = entry.second;  // (not a structured binding: lambdas below capture it)
        const int64_t images = slice.n1 - slice.n0;
        auto same = [&](const SliceShape& s) { return s.images == images && s.tiled == tiled; };
        auto found = std::find_if(plan.shapes.begin(), plan.shapes.end(), same);
        if (found == plan.shapes.end()) {
            ConvProblem q = plan.slice_problem(problem, images);
            auto slice_plan = tiled ? plan_in_tiles(context, q, pass, algorithm, inner)
                                    : plan_pass_on(context, q, pass, algorithm, inner, &unpaged);
            if (!slice_plan) return slice_plan.refusal();
            plan.shapes.push_back({images, tiled, std::make_shared<const PassPlan>(std::move(*slice_plan))});
            found = std::prev(plan.shapes.end());
        }
        plan.slices.push_back({slice.n0, slice.n1, size_t(found - plan.shapes.begin())});
    }
    // Each slot after the accumulators the largest any slice's plan needs there (their slots may differ in
    // meaning, tiled or not: every slice finds at least its own).
    for (const SliceShape& shape : plan.shapes) {
        const std::vector<uint64_t> own = shape.plan->slots();
        if (plan.slots.size() < plan.accumulators + own.size()) plan.slots.resize(plan.accumulators + own.size(), 0);
        for (size_t i = 0; i < own.size(); ++i)
            plan.slots[plan.accumulators + i] = std::max(plan.slots[plan.accumulators + i], own[i]);
    }
    plan.workspace_bytes = workspace_bytes_of(context, plan.slots);
    if (options.workspace_limit && plan.workspace_bytes > options.workspace_limit)
        return unsupported(std::string(to_string(algorithm)) + ": its slices of a paged " + to_string(pass) +
                           " pass need " + std::to_string(plan.workspace_bytes) +
                           " bytes of workspace together, the limit is " + std::to_string(options.workspace_limit) +
                           " bytes (" + problem.str() + ")");
    return plan;
}

bool plan_fits_paging(const ConvProblem& problem, const PassPlan& plan, const Paging& paging) {
    const SlicedPlan* sliced = std::get_if<SlicedPlan>(&plan.how);
    if (!sliced) return !paging.any();
    const auto cut = slices_for(problem, paging);
    if (cut.size() != sliced->slices.size()) return false;
    for (size_t i = 0; i < cut.size(); ++i) {
        const Slice& s = sliced->slices[i];
        if (cut[i].first.n0 != s.n0 || cut[i].first.n1 != s.n1 || cut[i].second != sliced->shapes[s.shape].tiled)
            return false;
    }
    return true;
}

void record_sliced(ContextImpl& context, CommandStream& stream, const ConvProblem& problem, const SlicedPlan& plan,
                   const ConvOperands& ops, std::span<const Operand> workspace) {
    const uint64_t align = context.pool->alignment();
    const uint64_t image_x = uint64_t(problem.C * problem.H * problem.W);
    const uint64_t image_y = uint64_t(problem.K * problem.P() * problem.Q());
    const std::span<const Operand> inner = workspace.subspan(plan.accumulators);
    const bool sums = plan.accumulators > 0;
    const SliceSums to = slice_sums(problem, plan, ops, workspace);
    for (size_t i = 0; i < plan.slices.size(); ++i) {
        const Slice& at = plan.slices[i];
        const uint64_t images = uint64_t(at.n1 - at.n0);
        const ConvProblem q = plan.slice_problem(problem, at.n1 - at.n0);
        ConvOperands part = ops;
        part.input = slice(ops.input, uint64_t(at.n0) * image_x, images * image_x, align);
        part.output = slice(ops.output, uint64_t(at.n0) * image_y, images * image_y, align);
        part.epilogue.residual = slice(ops.epilogue.residual, uint64_t(at.n0) * image_y, images * image_y, align);
        // A sum over images: after the first slice, each slice's dw and db go to the accumulators and are
        // added into the sums (the outputs themselves, or with wide_sums their fp32 copies).
        if (sums) {
            const bool first = i == 0;
            if (plan.pass == Pass::BackwardFilter) part.filter = first ? to.dw : to.dw_slice;
            if (ops.bias) part.bias = first ? to.db : to.db_slice;
        }
        record_pass(context, stream, q, *plan.shapes[at.shape].plan, part, inner);
        if (!sums || i == 0) continue;
        if (plan.pass == Pass::BackwardFilter)
            record_run(context, stream, part.filter, 0, to.dw, 0, uint64_t(problem.filter_elements()), true,
                       q.weight_gradient_type());
        if (ops.bias) record_run(context, stream, part.bias, 0, to.db, 0, uint64_t(problem.K), true, q.weight_gradient_type());
    }
    if (!plan.wide_sums) return;
    // The sums rounded into dw and db once (in runs that each lie in one page of them and fit a binding).
    const DataType type = problem.weight_gradient_type(), f32 = DataType::F32;
    if (plan.pass == Pass::BackwardFilter)
        record_run(context, stream, to.dw, 0, ops.filter, 0, uint64_t(problem.filter_elements()), false, f32, type);
    if (ops.bias) record_run(context, stream, to.db, 0, ops.bias, 0, uint64_t(problem.K), false, f32, type);
}

}  // namespace vkconv::detail
