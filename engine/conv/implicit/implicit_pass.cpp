// The implicit-GEMM algorithm (implicit.hpp): its plan (tile configuration, reduction pieces, backward-filter's
// slices) and its dispatches.
#include <algorithm>
#include <array>
#include <cmath>
#include <span>
#include <string>

#include "context/element_build.hpp"
#include "conv/algorithm_plan.hpp"
#include "conv/epilogue.hpp"
#include "conv/implicit/implicit.hpp"
#include "conv/shared/whole_tensors.hpp"
#include "conv/shared/wide_output.hpp"
#include "conv/tiled/copy_run.hpp"
#include "gemm/gemm_config.hpp"
#include "gemm/splitk_reduce.hpp"
#include "gemm/tuning.hpp"
#include "vulkan/shader_limits.hpp"

namespace vkconv::detail {
namespace {

struct ImplicitPush {
    uint32_t first_x, first_w, first_y, first_bias, first_z, first_out;
    uint32_t N, col_base;
    uint32_t k_begin, k_end, piece;
    uint32_t slice_floats;
    uint32_t accumulate, last;
    uint32_t z_base;
    float alpha, beta, negative_slope;
    uint32_t row_base, row_end;
};
VKCONV_PUSH_SIZE(ImplicitPush, implicit_gemm)
VKCONV_PUSH_MEMBER(ImplicitPush, implicit_gemm, first_out)
VKCONV_PUSH_MEMBER(ImplicitPush, implicit_gemm, col_base)
VKCONV_PUSH_MEMBER(ImplicitPush, implicit_gemm, piece)
VKCONV_PUSH_MEMBER(ImplicitPush, implicit_gemm, slice_floats)
VKCONV_PUSH_MEMBER(ImplicitPush, implicit_gemm, last)
VKCONV_PUSH_MEMBER(ImplicitPush, implicit_gemm, negative_slope)
VKCONV_PUSH_MEMBER(ImplicitPush, implicit_gemm, z_base)
VKCONV_PUSH_MEMBER(ImplicitPush, implicit_gemm, row_end)

uint64_t ceil_div(uint64_t a, uint64_t b) {
    return (a + b - 1) / b;
}

// The product of one group: rows, columns and reduction of the pass.
struct Product {
    uint64_t rows, columns, reduction;
};

Product product_of(const ConvProblem& p, Pass pass) {
    const uint64_t rs = uint64_t(p.R * p.S), cg = uint64_t(p.channels_per_group()), kg = uint64_t(p.filters_per_group());
    switch (pass) {
        case Pass::Forward:
            return {kg, uint64_t(p.N * p.P() * p.Q()), cg * rs};
        case Pass::BackwardData:
            return {cg, uint64_t(p.N * p.H * p.W), kg * rs};
        default:
            return {kg, cg * rs, uint64_t(p.N * p.P() * p.Q())};
    }
}

// Loop iterations one invocation makes per K step (its share of staging both tiles, the step's products,
// the step itself): what lavapipe's cap on iterations per invocation (shader_limits.hpp) counts. The register
// kernel's step is 4 taps, its inner loops counted as if the compiler kept them.
uint64_t iterations_per_step(const GemmConfig& c) {
    if (c.kernel == GemmKernel::Registers) return 1 + 4 * (1 + c.tm + c.tn);
    const uint64_t threads = uint64_t(c.wg_m) * c.wg_n;
    return ceil_div(uint64_t(c.bk) * c.tile_m(), threads) + ceil_div(uint64_t(c.bk) * c.tile_n(), threads) + c.bk + 1;
}

// Whether x, w and dy fit uniform texel views (the register kernel's texel path), each from its offset
// alignment.
bool texel_views_fit(ContextImpl& context, const ConvProblem& p) {
    if (p.data_type != DataType::F32) return false;  // (r32f views: 16-bit tensors are read as storage buffers)
    const uint64_t most = context.device->limits().maxTexelBufferElements;
    const uint64_t slack = context.pool->alignment() / 4;
    return uint64_t(p.input_elements()) + slack <= most && uint64_t(p.filter_elements()) + slack <= most &&
           uint64_t(p.output_elements()) + slack <= most;
}

// The configuration whose tiles waste least of the product, with the most register reuse, among those that
// give the device enough workgroups (as the GEMM picks its own): the shared-memory kernel's on GPUs, the
// register kernel's on CPU devices.
Planned<uint32_t> pick_config(ContextImpl& context, const ConvProblem& p, Pass pass, const Product& product,
                              uint64_t batches) {
    const GemmConfigTable& table = gemm_configs(context);
    int best = -1;
    double best_score = -1;
    for (size_t i = 0; i < table.any_count(); ++i) {
        const GemmConfig& c = table.any(i);
        if (!implicit_candidate(context, pass, c, p)) continue;
        const uint64_t tiles_m = ceil_div(product.rows, c.tile_m()), tiles_n = ceil_div(product.columns, c.tile_n());
        const double used = double(product.rows * product.columns) / double(tiles_m * c.tile_m() * tiles_n * c.tile_n());
        double reuse = double(c.tm * c.tn) / double(c.tm + c.tn);
        // The register kernel wants 8 lanes along the columns, so a CPU subgroup shares its filter rows
        // (as the GEMM's own choice weighs it, gemm_config.cpp); fewer only where a product is 8 to 32 wide.
        if (c.kernel == GemmKernel::Registers && c.wg_n < 8) {
            if (product.columns > 32 || product.columns < 8) continue;
            reuse *= std::sqrt(double(c.wg_n) / 8.0);
        }
        const double busy = std::min(1.0, double(tiles_m * tiles_n * batches) / double(table.wanted_workgroups));
        const double score = used * reuse * busy;
        if (score > best_score) best_score = score, best = int(i);
    }
    if (best < 0) return unsupported("implicit-gemm: the device has no GEMM configuration it can run");
    return static_cast<uint32_t>(best);
}

// Whether the device allows fewer storage buffers per stage than the shared kernel's 6: it then runs the
// variant with 4 (implicit_gemm.comp's FOUR_BINDINGS).
bool four_bindings(const ContextImpl& context) {
    return context.device->limits().maxPerStageDescriptorStorageBuffers < 6;
}

// The register kernel's build: reading x and the filter through uniform texel views, or storage buffers.
const char* registers_shader(bool texel) {
    return texel ? "implicit_gemm_registers_utexel" : "implicit_gemm_registers";
}

// The CPU-device kernel binds 7 storage buffers; a device that allows fewer runs the shared kernel.
bool registers_kernel(ContextImpl& context, Pass pass) {
    return pass != Pass::BackwardData && context.device->info().type == "CPU" &&
           context.device->limits().maxPerStageDescriptorStorageBuffers >= 7;
}

// Output elements of one image: y's (forward) or dx's (backward-data).
uint64_t image_output_elements(const ConvProblem& p, Pass pass) {
    return pass == Pass::Forward ? uint64_t(p.K) * p.P() * p.Q() : uint64_t(p.C) * p.H * p.W;
}

// A 16-bit forward or backward-data whose reduction runs in pieces would round its output once a piece: the
// pieces add into an fp32 copy of a chunk of images' output instead, rounded into the output once, after the
// chunk's last piece. The copy holds the images a twelfth of the pass's 16-bit tensors would (at least one),
// so the pool's peak stays within 0.55x of the fp32 twin's, which needs no copy; within a binding and the
// workspace limit, else refused. (On a device with 4 storage buffers a stage, the kernel reads a residual
// from its output: each chunk's residual is widened into the copy first.)
std::optional<Refusal> plan_wide_chunks(ContextImpl& context, const ConvProblem& p, Pass pass,
                                        const PassOptions& options, AlgorithmPlan& plan) {
    const uint64_t image_bytes = image_output_elements(p, pass) * 4;
    const uint64_t tensors = uint64_t(p.input_elements() + p.filter_elements() + p.output_elements()) *
                             element_bytes(p.data_type);
    uint64_t images = std::clamp<uint64_t>(tensors / 12 / image_bytes, 1, uint64_t(p.N));
    images = std::min(images, std::max<uint64_t>(1, context.device->limits().maxStorageBufferRange / image_bytes));
    if (options.workspace_limit)
        while (images > 1 && context.pool->round(images * image_bytes) > options.workspace_limit)
            images = std::max<uint64_t>(1, std::min(images - 1, options.workspace_limit / image_bytes));
    const uint64_t bytes = images * image_bytes;
    const std::string what = "implicit-gemm: a " + std::string(to_string(p.data_type)) + " " + to_string(pass) +
                             " whose reduction of " + std::to_string(plan.own_as<ImplicitPlan>().reduction) +
                             " runs in pieces adds up in an fp32 copy of one image's output, " +
                             std::to_string(bytes) + " bytes, ";
    if (bytes > context.device->limits().maxStorageBufferRange)
        return wide_copy_refusal(what + "above the device's maxStorageBufferRange (" +
                           std::to_string(context.device->limits().maxStorageBufferRange) + " bytes): " + p.str());
    if (options.workspace_limit && context.pool->round(bytes) > options.workspace_limit)
        return unsupported(what + "above the workspace limit of " + std::to_string(options.workspace_limit) +
                           " bytes (" + p.str() + ")");
    plan.own_as<ImplicitPlan>().wide_images = images;
    plan.slot(Slot::WideOutput) = images * image_output_elements(p, pass);
    plan.chunks = static_cast<uint32_t>(ceil_div(uint64_t(p.N), images));
    return std::nullopt;
}

// The filters (GEMM rows) a 16-bit dw's fp32 copy holds at a time (ImplicitPlan::wide_rows): all of them, or
// with one group as many as a twelfth of the pass's 16-bit tensors would hold (the fp32 twin sums into dw
// itself), within the binding limit and the workspace limit. Too little room for 4 filters leaves the copy
// whole, refused by the workspace limit's check.
uint64_t wide_filter_rows(ContextImpl& context, const ConvProblem& p, const GemmConfig& config,
                          const PassOptions& options) {
    const uint64_t filters = uint64_t(p.K), row_bytes = uint64_t(p.filter_elements()) / filters * 4;
    if (p.groups != 1) return filters;
    const uint64_t tensors = uint64_t(p.input_elements() + p.filter_elements() + p.output_elements()) *
                             element_bytes(p.data_type);
    uint64_t room = std::min<uint64_t>(tensors / 12, context.device->limits().maxStorageBufferRange);
    if (options.workspace_limit) {
        // (Less the bias gradient's fp32 partial sums, which a 16-bit db needs beside the copy.)
        uint64_t bias_bytes = 0;
        if (p.has_bias)
            if (auto bias = plan_bias_grad(context, p, options.max_binding_bytes))
                bias_bytes = context.pool->round(bias->partial_floats * 4);
        room = std::min(room, options.workspace_limit - std::min(options.workspace_limit, bias_bytes));
    }
    // Whole tiles where a tile fits, else fours of rows (the register kernel's vec4 loads of dy start on a
    // filter that is a multiple of 4; its rows past a chunk's end go idle).
    const uint64_t step = room / row_bytes >= config.tile_m() ? config.tile_m() : 4;
    uint64_t rows = std::min(filters, room / row_bytes / step * step);
    if (options.workspace_limit)  // (the pool rounds the copy up)
        while (rows > 0 && context.pool->round(rows * row_bytes) > options.workspace_limit) rows = (rows - 1) / step * step;
    return rows == 0 ? filters : rows;
}

Planned<AlgorithmPlan> plan_implicit_pass(ContextImpl& context, const ConvProblem& p, Pass pass,
                                          const PassOptions& options) {
    // x, w, dy, the bias, the residual and the output, whichever pass it runs; 4 in the variant for devices
    // that allow fewer (dy or the bias on one binding, the residual read from the output).
    if (auto refusal = descriptor_refusal(storage_buffer_shortfall(
            *context.device, "implicit-gemm", registers_kernel(context, pass) ? 7 : four_bindings(context) ? 4 : 6)))
        return *refusal;
    if (auto refusal = whole_tensors_refusal(context, p, "implicit-gemm")) return *refusal;
    AlgorithmPlan plan;
    plan.pass = pass;
    plan.algorithm = Algorithm::ImplicitGemm;
    const Product product = product_of(p, pass);
    const uint64_t groups = uint64_t(p.groups);
    auto config_index = pick_config(context, p, pass, product, groups);
    // A winner `vkconv tune` stored for this pass and problem, where the device still has it.
    if (context.tuning)
        if (auto name = context.tuning->implicit(pass, p))
            for (size_t i = 0; i < gemm_configs(context).any_count(); ++i) {
                const GemmConfig& c = gemm_configs(context).any(i);
                if (c.name == *name && implicit_candidate(context, pass, c, p)) config_index = static_cast<uint32_t>(i);
            }
    if (!config_index) return config_index.refusal();
    const GemmConfigTable& table = gemm_configs(context);
    const GemmConfig& config = table.any(*config_index);
    if (ceil_div(product.rows, config.tile_m()) > context.device->max_workgroups(1))
        return unsupported("implicit-gemm: " + std::to_string(product.rows) +
                           " rows per group need more workgroups than one dispatch may have (" + p.str() + ")");
    ImplicitPlan& ip = plan.own.emplace<ImplicitPlan>();
    ip.config = *config_index;
    ip.registers = config.kernel == GemmKernel::Registers;
    ip.reduction = product.reduction;
    // The longest reduction one dispatch may run within lavapipe's loop cap, in whole K steps.
    const uint64_t step = ip.registers ? 4 : config.bk;
    const uint64_t longest = std::max<uint64_t>(1, kMaxLoopIterations / iterations_per_step(config)) * step;
    auto round_piece = [&](uint64_t pieces) { return ceil_div(ceil_div(product.reduction, pieces), step) * step; };
    if (pass != Pass::BackwardFilter) {
        ip.piece = round_piece(ceil_div(product.reduction, longest));
        // Pieces add into the output: a 16-bit one adds up in fp32 copies of chunks of images instead.
        if (p.data_type != DataType::F32 && ip.piece < product.reduction)
            if (auto refusal = plan_wide_chunks(context, p, pass, options, plan)) return *refusal;
        return plan;
    }
    // Backward-filter: slices of the N*P*Q reduction until the tiles fill the device, each a partial product
    // in the workspace. A slice longer than the loop cap allows runs in rounds (each slice's next piece, added
    // into its partial product): the slices fill the device, not the loop cap, so their workspace stays small.
    const uint64_t tiles = ceil_div(product.rows, config.tile_m()) * ceil_div(product.columns, config.tile_n()) * groups;
    const uint64_t filter_floats = uint64_t(p.filter_elements());
    const uint64_t needed = ceil_div(product.reduction, longest);
    // At least 8 K steps a slice; within the binding limit, the grid's z limit and the workspace limit.
    uint64_t slices = std::min(ceil_div(table.wanted_workgroups, tiles),
                               std::max<uint64_t>(1, ceil_div(product.reduction, 8 * uint64_t(config.bk))));
    // A 16-bit problem's partial products (fp32, as its fp32 twin's) take half the twin's bytes: half the
    // slices, so that the pool's peak halves with the operands.
    if (p.data_type != DataType::F32) slices = std::max<uint64_t>(1, slices / 2);

    const uint64_t range = context.device->limits().maxStorageBufferRange;
    while (slices > 1 && slices * filter_floats * 4 > range) --slices;
    auto bytes = [&](uint64_t s) { return context.pool->round(s * filter_floats * 4); };
    while (options.workspace_limit && slices > 1 && bytes(slices) > options.workspace_limit) --slices;
    if (slices >= 2) {
        ip.piece = std::min(round_piece(slices), longest);
        ip.slices = static_cast<uint32_t>(std::min(slices, ceil_div(product.reduction, ip.piece)));
        ip.partials = ip.slices > 1;
    }
    if (!ip.partials) {
        // No room for partial products: pieces one after another, each adding into dw (in order).
        ip.piece = round_piece(needed);
        ip.slices = 1;
        ip.partials = false;
    }
    if (ip.partials) plan.slot(Slot::Partials) = uint64_t(ip.slices) * filter_floats;
    plan.partial_products = ip.partials ? ip.slices : 0;
    // A 16-bit dw summed piece by piece: into an fp32 copy, rounded once at the end.
    if (p.weight_gradient_type() != DataType::F32 && !ip.partials && ip.piece < product.reduction) {
        ip.wide_rows = wide_filter_rows(context, p, config, options);
        plan.slot(Slot::WideOutput) = ip.wide_rows * (filter_floats / uint64_t(p.K));
        if (plan.slot(Slot::WideOutput) * 4 > range)
            return wide_copy_refusal("implicit-gemm: a " + std::string(to_string(p.data_type)) +
                               " dw summed in pieces needs an fp32 copy of " +
                               std::to_string(plan.slot(Slot::WideOutput) * 4) +
                               " bytes, above the device's maxStorageBufferRange (" + std::to_string(range) +
                               " bytes): " + p.str());
        plan.chunks = static_cast<uint32_t>(ceil_div(uint64_t(p.K), ip.wide_rows));
        if (options.workspace_limit && workspace_bytes_of(context, plan.slots) > options.workspace_limit)
            return unsupported("implicit-gemm: a " + std::string(to_string(p.data_type)) +
                               " dw summed in pieces needs an fp32 copy of " +
                               std::to_string(workspace_bytes_of(context, plan.slots)) +
                               " bytes, above the workspace limit of " + std::to_string(options.workspace_limit) +
                               " bytes (" + p.str() + ")");
    }
    return plan;
}

// What a pass's kernel writes, in which type, and where partial products are summed: dw's partial products
// (fp32) summed into dw; a 16-bit output summed piece by piece into its fp32 copy (Slot::WideOutput: all of
// dw, rounded into it at the end; a chunk of images' y or dx, rounded after the chunk); else the output itself.
struct OutputOf {
    Window window;
    DataType type;
    Window sum_into;
};
OutputOf output_of(const ConvProblem& p, Pass pass, const Operand& output, bool partials, Workspace workspace) {
    const Operand& wide = workspace[Slot::WideOutput];
    if (partials) return {workspace[Slot::Partials].whole(), DataType::F32, output.whole()};
    if (wide) return {wide.whole(), DataType::F32, wide.whole()};
    const DataType type = pass == Pass::BackwardFilter ? p.weight_gradient_type() : p.data_type;
    return {output.whole(), type, output.whole()};
}

// A backward-filter's fp32 dw copy rounded into dw, where it has one.
void round_filter_copy(ContextImpl& context, CommandStream& stream, const ConvProblem& p, Pass pass,
                       const ConvOperands& ops, Workspace workspace) {
    if (pass == Pass::BackwardFilter)
        round_wide_output(context, stream, workspace[Slot::WideOutput], ops.filter, uint64_t(p.filter_elements()),
                          p.weight_gradient_type());
}

// What both kernels do once their pipeline and bindings are set: the dispatches of the pass's reduction,
// either every slice at once into its partial product and then their fixed-order sum into dw (`partials`),
// or pieces one after another, each after the first adding to what the output holds. Columns past the x
// limit and (slice, group) pairs past the z limit go in further dispatches. `Push` is either kernel's push
// constants (the same member names).
template <typename Push>
void record_reduction(ContextImpl& context, CommandStream& stream, const ConvProblem& p, Pass pass,
                      const ImplicitPlan& ip, const GemmConfig& config, const Pipeline& pipeline,
                      std::span<const Binding> bindings, Push& push, const Window& partials, const Window& dw,
                      bool add_first = false) {
    const Product product = product_of(p, pass);
    const uint64_t rows = push.row_end - push.row_base;  // of each group, from row_base on
    const uint64_t tiles_m = ceil_div(rows, config.tile_m());
    const uint64_t step = uint64_t(context.device->max_workgroups(0)) * config.tile_n();  // columns a dispatch
    const uint64_t groups = uint64_t(p.groups), max_z = context.device->max_workgroups(2);
    auto dispatch_columns = [&](uint32_t slices) {
        for (uint64_t col0 = 0; col0 < product.columns; col0 += step) {
            const uint64_t count = std::min(step, product.columns - col0);
            push.col_base = uint32_t(col0);
            const uint64_t reduction = std::min<uint64_t>(push.k_end - push.k_begin, uint64_t(push.piece) * slices);
            const uint64_t flops = 2 * count * rows * groups * reduction;
            const uint64_t serial =
                uint64_t(config.tm) * config.tn * std::min<uint64_t>(push.piece, push.k_end - push.k_begin);
            const uint64_t z_total = groups * slices;
            for (uint64_t z0 = 0; z0 < z_total; z0 += max_z) {
                push.z_base = uint32_t(z0);
                const uint64_t share = std::min(max_z, z_total - z0);
                stream.note_work(flops * share / z_total, serial);
                stream.dispatch(pipeline, bindings, &push, uint32_t(ceil_div(count, config.tile_n())),
                                uint32_t(tiles_m), uint32_t(share));
            }
        }
    };
    if (pass == Pass::BackwardFilter && ip.partials) {
        // Rounds of every slice's next piece, each after the first adding into the partial products.
        const uint64_t round = uint64_t(ip.slices) * ip.piece;
        for (uint64_t k0 = 0; k0 < product.reduction; k0 += round) {
            push.k_begin = uint32_t(k0), push.k_end = uint32_t(std::min(product.reduction, k0 + round));
            push.piece = uint32_t(ip.piece), push.accumulate = k0 > 0 ? 1u : 0u, push.last = 1;
            dispatch_columns(uint32_t(ceil_div(push.k_end - push.k_begin, ip.piece)));
        }
        record_splitk_reduce(context, stream, partials.range, dw.range, dw.delta, uint64_t(p.filter_elements()),
                             int64_t(ip.slices), false, p.weight_gradient_type());
        return;
    }
    for (uint64_t k0 = 0; k0 < product.reduction; k0 += ip.piece) {
        push.k_begin = uint32_t(k0);
        push.k_end = uint32_t(std::min(product.reduction, k0 + ip.piece));
        push.piece = push.k_end - push.k_begin;
        push.accumulate = k0 > 0 || add_first ? 1u : 0u;  // (add_first: ConvOperands::add_into_dx)
        push.last = push.k_end == product.reduction ? 1u : 0u;
        dispatch_columns(1);
    }
}

// A 16-bit forward or backward-data in pieces (ImplicitPlan::wide_images), chunk by chunk of images: the
// chunk's residual widened into the fp32 copy where the kernel reads it from its output (`widen_residual`),
// `record(chunk, first_image)` the chunk's pieces into the copy, then the copy rounded into `output` (added to
// what it holds, `add_into`: ConvOperands::add_into_dx).
template <typename Record>
void record_wide_chunks(ContextImpl& context, CommandStream& stream, const ConvProblem& p, Pass pass,
                        const ImplicitPlan& ip, const Operand& output, const Operand& wide,
                        const Operand* widen_residual, bool add_into, Record&& record) {
    const uint64_t per_image = image_output_elements(p, pass);
    for (uint64_t n0 = 0; n0 < uint64_t(p.N); n0 += ip.wide_images) {
        ConvProblem chunk = p;
        chunk.N = int64_t(std::min<uint64_t>(ip.wide_images, uint64_t(p.N) - n0));
        const uint64_t count = uint64_t(chunk.N) * per_image;
        if (widen_residual)
            record_run(context, stream, *widen_residual, n0 * per_image, wide, 0, count, false, p.data_type,
                       DataType::F32);
        record(chunk, n0);
        record_run(context, stream, wide, 0, output, n0 * per_image, count, add_into, DataType::F32, p.data_type);
    }
}

// Sets the rows the kernel computes (all of each group's) and, where a 16-bit dw adds up in an fp32 copy of
// a chunk of filters (ImplicitPlan::wide_rows < K, one group), records the pass chunk by chunk: the chunk's
// pieces into the copy, its first filter at the copy's start, then the copy rounded into the chunk's filters of
// dw (whole rows of dw in either layout). Returns whether it did. `first_out` is the push constant the kernel
// writes at.
template <typename Push>
bool recorded_in_filter_chunks(ContextImpl& context, CommandStream& stream, const ConvProblem& p, Pass pass,
                               const ImplicitPlan& ip, const GemmConfig& config, const Pipeline& pipeline,
                               std::span<const Binding> bindings, Push& push, uint32_t Push::*first_out,
                               const ConvOperands& ops, const Workspace& workspace, const OutputOf& written) {
    push.row_base = 0, push.row_end = uint32_t(product_of(p, pass).rows);
    if (!ip.wide_rows || ip.wide_rows >= uint64_t(p.K)) return false;
    const uint64_t taps = uint64_t(p.filter_elements() / p.K);
    const uint32_t copy_first = push.*first_out;
    for (uint64_t r0 = 0; r0 < uint64_t(p.K); r0 += ip.wide_rows) {
        const uint64_t r1 = std::min<uint64_t>(uint64_t(p.K), r0 + ip.wide_rows);
        push.row_base = uint32_t(r0), push.row_end = uint32_t(r1);
        // The kernel writes filter m at m * taps past first_out: back by r0 filters (unsigned, it wraps).
        push.*first_out = copy_first - uint32_t(r0 * taps);
        record_reduction(context, stream, p, pass, ip, config, pipeline, bindings, push, written.window,
                         written.sum_into);
        record_run(context, stream, workspace[Slot::WideOutput], 0, ops.filter, r0 * taps, (r1 - r0) * taps, false,
                   DataType::F32, p.weight_gradient_type());
    }
    return true;
}

struct RegistersPush {
    uint32_t first_x, first_w, first_bias, first_z, first_y;
    uint32_t N, col_base;
    uint32_t k_begin, k_end;
    uint32_t accumulate, last;
    float alpha, beta, negative_slope;
    uint32_t piece, slice_floats;
    uint32_t z_base;
    uint32_t row_base, row_end;
};
VKCONV_PUSH_SIZE(RegistersPush, implicit_gemm_registers)
VKCONV_PUSH_MEMBER(RegistersPush, implicit_gemm_registers, first_y)
VKCONV_PUSH_MEMBER(RegistersPush, implicit_gemm_registers, col_base)
VKCONV_PUSH_MEMBER(RegistersPush, implicit_gemm_registers, k_end)
VKCONV_PUSH_MEMBER(RegistersPush, implicit_gemm_registers, last)
VKCONV_PUSH_MEMBER(RegistersPush, implicit_gemm_registers, negative_slope)
VKCONV_PUSH_MEMBER(RegistersPush, implicit_gemm_registers, slice_floats)
VKCONV_PUSH_MEMBER(RegistersPush, implicit_gemm_registers, z_base)
VKCONV_PUSH_MEMBER(RegistersPush, implicit_gemm_registers, row_end)

// Forward and backward-filter through the register kernel (CPU devices). Forward: pieces of the taps in
// order, each after the first adding to y. Backward-filter: slices of the positions into partial products
// added by splitk_reduce, or (no room for them) pieces in order adding into dw.
void record_registers(ContextImpl& context, CommandStream& stream, const ConvProblem& p, Pass pass,
                      const ImplicitPlan& ip, const GemmConfig& config, const ConvOperands& ops, Workspace workspace) {
    const bool forward = pass == Pass::Forward;
    const FusedEpilogue& epilogue = ops.epilogue;
    const Window x = ops.input.whole(), w = ops.filter.whole(), y = ops.output.whole();
    const bool partials = !forward && ip.partials;
    // Forward reads w and writes y; backward-filter reads dy in w's place and writes dw, its partials or its
    // fp32 copy.
    const Window a_operand = forward ? w : y;
    const OutputOf written = output_of(p, pass, forward ? ops.output : ops.filter, partials, workspace);
    const Window out = written.window;
    // An application's buffer is never viewed as texels (its usage may not allow it): read it as storage.
    // Nor is a 16-bit tensor (the views are r32f).
    const bool texel = config.access == GemmAccess::UniformTexel && !context.device->foreign_buffer(x.range.buffer) &&
                       !context.device->foreign_buffer(a_operand.range.buffer) && p.data_type == DataType::F32;
    // Whole vec4s of taps (forward): every filter's taps a multiple of 4 long, w's element 0 on a 4-float
    // boundary, and every piece starting on a multiple of 4 taps (pieces are whole steps of 4).
    const bool w_vec4 =
        forward && uint64_t(p.filter_elements() / p.K) % 4 == 0 && w.delta % 4 == 0 && ip.piece % 4 == 0;
    // NHWC with channels in whole vec4s: 4 consecutive channels of x (forward: a step's taps; backward-filter:
    // 4 of an invocation's taps) and of dy (backward-filter: 4 of an invocation's filters) load as one vec4.
    const bool nhwc = p.layout == Layout::NHWC;
    const bool x_vec4 = nhwc && p.C % 4 == 0 && (p.C / p.groups) % 4 == 0 && x.delta % 4 == 0 && ip.piece % 4 == 0;
    const bool dy_vec4 = !forward && nhwc && p.K % 4 == 0 && (p.K / p.groups) % 4 == 0 && a_operand.delta % 4 == 0;

    using Id = contract::implicit_gemm_registers::spec;
    Specialization<contract::implicit_gemm_registers> spec;
    spec.set(Id::LOCAL_SIZE_X, config.wg_n).set(Id::LOCAL_SIZE_Y, config.wg_m).set(Id::TM, config.tm).set(Id::TN, config.tn);
    spec.set(Id::R, p.R).set(Id::S, p.S).set(Id::STRIDE_H, p.stride_h).set(Id::STRIDE_W, p.stride_w);
    spec.set(Id::PAD_H, p.pad_h).set(Id::PAD_W, p.pad_w).set(Id::DIL_H, p.dilation_h).set(Id::DIL_W, p.dilation_w);
    spec.set(Id::NHWC, p.layout == Layout::NHWC).set(Id::HAS_BIAS, forward && p.has_bias);
    spec.set(Id::ACTIVATION, forward ? activation_constant(epilogue.activation) : 0u);
    spec.set(Id::HAS_RESIDUAL, forward && epilogue.has_residual());
    spec.set(Id::C, p.C).set(Id::H, p.H).set(Id::W, p.W).set(Id::K, p.K).set(Id::P, p.P()).set(Id::Q, p.Q());
    spec.set(Id::GROUPS, p.groups).set(Id::W_VEC4, w_vec4).set(Id::PASS, forward ? 0u : 2u);
    // Whether every window lies inside the image: no top or left pad, and the last window ends inside.
    const bool unpadded = p.pad_top() == 0 && p.pad_left() == 0 &&
                          (p.P() - 1) * p.stride_h + (p.R - 1) * p.dilation_h < p.H &&
                          (p.Q() - 1) * p.stride_w + (p.S - 1) * p.dilation_w < p.W;
    spec.set(Id::X_VEC4, x_vec4).set(Id::DY_VEC4, dy_vec4).set(Id::UNPADDED, unpadded);
    spec.set(Id::TENSOR_TYPE, element_constant(p.data_type)).set(Id::OUT_TYPE, element_constant(written.type));
    PipelineDesc desc;
    desc.shader = registers_shader(texel) + element_build(context, p.data_type);
    desc.bindings.assign(7, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    if (texel)
        desc.bindings[0] = desc.bindings[1] = desc.bindings[5] = desc.bindings[6] =
            VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
    desc.push_constant_bytes = sizeof(RegistersPush);
    desc.specialization = spec.values();
    const Pipeline& pipeline = context.pipelines->get(desc);
    const Window b = forward && p.has_bias ? ops.bias.whole() : a_operand;
    const Window z = forward && epilogue.has_residual() ? epilogue.residual.whole() : a_operand;
    const VkFormat format = texel ? VK_FORMAT_R32_SFLOAT : VK_FORMAT_UNDEFINED;
    const VkFormat format4 = texel ? VK_FORMAT_R32G32B32A32_SFLOAT : VK_FORMAT_UNDEFINED;
    const std::array<Binding, 7> bindings{Binding{x.range, false, format},         Binding{a_operand.range, false, format},
                                          Binding{b.range, false},                 Binding{z.range, false},
                                          Binding{out.range, true},                Binding{a_operand.range, false, format4},
                                          Binding{x.range, false, format4}};
    RegistersPush push{};
    push.first_x = uint32_t(x.delta), push.first_w = uint32_t(a_operand.delta), push.first_bias = uint32_t(b.delta);
    push.first_z = uint32_t(z.delta), push.first_y = uint32_t(out.delta);
    push.N = uint32_t(p.N);
    push.alpha = forward ? epilogue.alpha : 1.0f, push.beta = forward ? epilogue.beta : 0.0f;
    push.negative_slope = epilogue.negative_slope;
    push.slice_floats = partials ? uint32_t(p.filter_elements()) : 0;
    if (recorded_in_filter_chunks(context, stream, p, pass, ip, config, pipeline, bindings, push,
                                  &RegistersPush::first_y, ops, workspace, written))
        return;
    if (ip.wide_images) {
        // (Forward: x's and the residual's images from the chunk's first on.)
        const RegistersPush whole = push;
        const uint64_t x_image = uint64_t(p.C) * p.H * p.W, y_image = image_output_elements(p, pass);
        return record_wide_chunks(context, stream, p, pass, ip, ops.output, workspace[Slot::WideOutput], nullptr,
                                  false, [&](const ConvProblem& chunk, uint64_t n0) {
                                      push.N = uint32_t(chunk.N);
                                      push.first_x = uint32_t(whole.first_x + n0 * x_image);
                                      if (epilogue.has_residual())
                                          push.first_z = uint32_t(whole.first_z + n0 * y_image);
                                      record_reduction(context, stream, chunk, pass, ip, config, pipeline, bindings,
                                                       push, out, written.sum_into);
                                  });
    }
    record_reduction(context, stream, p, pass, ip, config, pipeline, bindings, push, out, written.sum_into,
                     pass == Pass::BackwardData && ops.add_into_dx);
    round_filter_copy(context, stream, p, pass, ops, workspace);
}

void record_implicit_pass(ContextImpl& context, CommandStream& stream, const ConvProblem& p, const AlgorithmPlan& plan,
                          const ConvOperands& ops, Workspace shared) {
    const ImplicitPlan& ip = plan.own_as<ImplicitPlan>();
    // (A layer step's shared workspace: the fp32 dw copy only where this plan has one, AlgorithmPlan::own_slot.
    // A sliced pass's span may hold more slots than the algorithm's: its tiled slices' too.)
    std::array<Operand, kSlots> own;
    std::copy_n(shared.operands.begin(), std::min(shared.operands.size(), kSlots), own.begin());
    own[static_cast<size_t>(Slot::WideOutput)] = plan.own_slot(shared, Slot::WideOutput);
    const Workspace workspace{own};
    if (ip.registers)
        return record_registers(context, stream, p, plan.pass, ip, gemm_configs(context).any(ip.config), ops,
                                workspace);
    const GemmConfig& config = gemm_configs(context).any(ip.config);
    const Pass pass = plan.pass;
    const bool nhwc = p.layout == Layout::NHWC;
    const FusedEpilogue& epilogue = ops.epilogue;
    const bool forward = pass == Pass::Forward;

    using Id = contract::implicit_gemm::spec;
    Specialization<contract::implicit_gemm> spec;
    spec.set(Id::WG_N, config.wg_n).set(Id::WG_M, config.wg_m).set(Id::TM, config.tm).set(Id::TN, config.tn);
    spec.set(Id::R, p.R).set(Id::S, p.S).set(Id::STRIDE_H, p.stride_h).set(Id::STRIDE_W, p.stride_w);
    spec.set(Id::PAD_H, p.pad_h).set(Id::PAD_W, p.pad_w).set(Id::DIL_H, p.dilation_h).set(Id::DIL_W, p.dilation_w);
    spec.set(Id::NHWC, nhwc).set(Id::PASS, uint32_t(pass == Pass::Forward ? 0 : pass == Pass::BackwardData ? 1 : 2));
    spec.set(Id::HAS_BIAS, forward && p.has_bias)
        .set(Id::ACTIVATION, forward ? activation_constant(epilogue.activation) : 0u)
        .set(Id::HAS_RESIDUAL, forward && epilogue.has_residual())
        .set(Id::BK, config.bk);
    spec.set(Id::C, p.C).set(Id::H, p.H).set(Id::W, p.W).set(Id::K, p.K).set(Id::P, p.P()).set(Id::Q, p.Q());
    spec.set(Id::GROUPS, p.groups);
    // Staging order: consecutive invocations along whichever index is contiguous in memory (implicit_gemm.comp).
    const bool a_k_fast = pass == Pass::Forward ? true : pass == Pass::BackwardData ? !nhwc : !nhwc;
    const bool b_n_fast = pass == Pass::BackwardFilter ? nhwc : !nhwc;
    spec.set(Id::A_K_FAST, a_k_fast).set(Id::B_N_FAST, b_n_fast);
    const bool partials = pass == Pass::BackwardFilter && ip.partials;
    const Operand& output = forward ? ops.output : pass == Pass::BackwardData ? ops.input : ops.filter;
    const OutputOf written = output_of(p, pass, output, partials, workspace);
    spec.set(Id::TENSOR_TYPE, element_constant(p.data_type)).set(Id::OUT_TYPE, element_constant(written.type));
    const bool four = four_bindings(context);
    PipelineDesc desc;
    desc.shader = implicit_shader(context, config) + element_build(context, p.data_type);
    desc.bindings.assign(four ? 4 : 6, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    desc.push_constant_bytes = sizeof(ImplicitPush);
    desc.specialization = spec.values();
    const Pipeline& pipeline = context.pipelines->get(desc);

    // What the pass reads, and what it writes (bound once, as `out`); a binding it does not read is bound to
    // the filter (read only).
    const Window x = ops.input.whole(), w = ops.filter.whole(), y = ops.output.whole();
    const Window out = written.window;
    const Window x_read = pass == Pass::BackwardData ? w : x, w_read = pass == Pass::BackwardFilter ? x : w;
    const Window y_read = forward ? w : y;
    const Window b = forward && p.has_bias ? ops.bias.whole() : w;
    const Window z = forward && epilogue.has_residual() ? epilogue.residual.whole() : w;
    std::array<Binding, 6> all{Binding{x_read.range, false}, Binding{w_read.range, false},
                               Binding{y_read.range, false}, Binding{b.range, false},
                               Binding{z.range, false},      Binding{out.range, true}};
    ImplicitPush push{};
    push.first_x = uint32_t(x_read.delta), push.first_w = uint32_t(w_read.delta), push.first_y = uint32_t(y_read.delta);
    push.first_bias = uint32_t(b.delta), push.first_z = uint32_t(z.delta), push.first_out = uint32_t(out.delta);
    if (four) {
        // Binding 2 holds dy (backward) or the bias (forward), binding 3 the output; the residual is copied
        // into y first (nothing to copy in place), where the kernel reads it.
        const Window& shared = forward ? b : y_read;
        all[2] = Binding{shared.range, false};
        all[3] = Binding{out.range, true};
        push.first_y = push.first_bias = uint32_t(shared.delta);
        if (forward && !ip.wide_images) copy_residual_into_output(context, stream, epilogue, ops.output, p.data_type);
    }
    const std::span<const Binding> bindings(all.data(), four ? 4 : 6);
    push.N = uint32_t(p.N);
    push.alpha = forward ? epilogue.alpha : 1.0f, push.beta = forward ? epilogue.beta : 0.0f;
    push.negative_slope = epilogue.negative_slope;
    push.slice_floats = partials ? uint32_t(p.filter_elements()) : 0;
    if (recorded_in_filter_chunks(context, stream, p, pass, ip, config, pipeline, bindings, push,
                                  &ImplicitPush::first_out, ops, workspace, written))
        return;
    if (ip.wide_images) {
        // Forward: x's and the residual's images from the chunk's first on (with 4 bindings the residual is
        // widened into the copy, where the kernel reads it). Backward-data: dy's.
        const ImplicitPush whole = push;
        const uint64_t x_image = uint64_t(p.C) * p.H * p.W, y_image = uint64_t(p.K) * p.P() * p.Q();
        const Operand* widen = four && forward && epilogue.has_residual() ? &epilogue.residual : nullptr;
        return record_wide_chunks(context, stream, p, pass, ip, output, workspace[Slot::WideOutput], widen,
                                  pass == Pass::BackwardData && ops.add_into_dx,
                                  [&](const ConvProblem& chunk, uint64_t n0) {
                                      push.N = uint32_t(chunk.N);
                                      if (forward) {
                                          push.first_x = uint32_t(whole.first_x + n0 * x_image);
                                          if (epilogue.has_residual() && !four)
                                              push.first_z = uint32_t(whole.first_z + n0 * y_image);
                                      } else if (four) {
                                          push.first_y = push.first_bias = uint32_t(whole.first_y + n0 * y_image);
                                      } else {
                                          push.first_y = uint32_t(whole.first_y + n0 * y_image);
                                      }
                                      record_reduction(context, stream, chunk, pass, ip, config, pipeline, bindings,
                                                       push, out, written.sum_into);
                                  });
    }
    record_reduction(context, stream, p, pass, ip, config, pipeline, bindings, push, out, written.sum_into,
                     pass == Pass::BackwardData && ops.add_into_dx);
    round_filter_copy(context, stream, p, pass, ops, workspace);
}

}  // namespace

std::string implicit_shader(const ContextImpl& context, const GemmConfig& c) {
    if (c.kernel == GemmKernel::Registers) return registers_shader(c.access == GemmAccess::UniformTexel);
    return std::string(four_bindings(context) ? "implicit_gemm_4_t" : "implicit_gemm_t") + std::to_string(c.tm) + "x" +
           std::to_string(c.tn);
}

bool implicit_candidate(ContextImpl& context, Pass pass, const GemmConfig& c, const ConvProblem& problem) {
    if (registers_kernel(context, pass))
        return c.kernel == GemmKernel::Registers && c.tm % 4 == 0 && c.tn % 4 == 0 &&
               (c.access == GemmAccess::StorageBuffer ||
                (c.access == GemmAccess::UniformTexel && texel_views_fit(context, problem)));
    return c.kernel == GemmKernel::Shared && c.access == GemmAccess::StorageBuffer && c.stages == 1 && !c.vec4_shared;
}

extern const AlgorithmEntry implicit_gemm_algorithm{
    .plan = plan_implicit_pass, .record = record_implicit_pass, .passes_16bit = kConvPasses};

}  // namespace vkconv::detail
