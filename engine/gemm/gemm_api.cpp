// The public GEMM entry point: shape checks, then one record_gemm.
#include <cctype>
#include <chrono>

#include "context/operands.hpp"
#include "context/pass.hpp"
#include "context/recording_state.hpp"
#include "context/tensor_storage.hpp"
#include "gemm/gemm.hpp"
#include "vkconv/gemm.hpp"
#include "vkconv/recording.hpp"

namespace vkconv {
namespace {

Error bad(const std::string& message) {
    return Error(ErrorCategory::InvalidArgument, "gemm: " + message);
}

}  // namespace

const char* to_string(Activation activation) noexcept {
    switch (activation) {
        case Activation::None:
            return "none";
        case Activation::ReLU:
            return "relu";
        case Activation::ReLU6:
            return "relu6";
        case Activation::LeakyReLU:
            return "leaky-relu";
    }
    return "unknown";
}

Activation parse_activation(std::string_view text) {
    std::string name(text);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (Activation a : {Activation::None, Activation::ReLU, Activation::ReLU6, Activation::LeakyReLU})
        if (name == to_string(a)) return a;
    throw Error(ErrorCategory::InvalidArgument,
                "unknown activation '" + std::string(text) + "' (expected none, relu, relu6 or leaky-relu)");
}

std::vector<std::string> gemm_configurations(const Context& context) {
    std::vector<std::string> names;
    const auto lock = detail::serialise(context);  // the table is made on first use
    for (const auto& c : detail::gemm_configs(detail::impl_of(context)).all) names.push_back(c.name);
    return names;
}

namespace {

// The product's sizes, from the operands' shapes and the transposes.
struct ProductSizes {
    int64_t batch, M, N, K;
};

// Checks that a, b and c belong to the context and have shapes that make c = op(a) op(b); returns the sizes.
ProductSizes checked_shape(const detail::ContextImpl& impl, const Tensor& a, const Tensor& b, const Tensor& c,
                        const GemmOptions& options) {
    for (const Tensor* t : {&a, &b, &c}) {
        if (t->empty()) throw bad("empty tensor");
        if (detail::storage_of(*t)->context.get() != &impl) throw bad("a tensor belongs to another context");
    }
    const size_t rank = a.shape().size();
    if ((rank != 2 && rank != 3) || b.shape().size() != rank || c.shape().size() != rank)
        throw bad("a, b and c must all be 2-D, or all 3-D with a leading batch dimension; got " +
                  shape_string(a.shape()) + ", " + shape_string(b.shape()) + ", " + shape_string(c.shape()));
    const size_t o = rank - 2;
    const int64_t batch = rank == 3 ? a.shape()[0] : 1;
    if (rank == 3 && (b.shape()[0] != batch || c.shape()[0] != batch))
        throw bad("batch sizes differ: " + shape_string(a.shape()) + ", " + shape_string(b.shape()) + ", " +
                  shape_string(c.shape()));
    const int64_t M = options.transpose_a ? a.shape()[o + 1] : a.shape()[o];
    const int64_t K = options.transpose_a ? a.shape()[o] : a.shape()[o + 1];
    const int64_t Kb = options.transpose_b ? b.shape()[o + 1] : b.shape()[o];
    const int64_t N = options.transpose_b ? b.shape()[o] : b.shape()[o + 1];
    if (K != Kb)
        throw bad("inner dimensions differ: op(a) is " + std::to_string(M) + "x" + std::to_string(K) + ", op(b) is " +
                  std::to_string(Kb) + "x" + std::to_string(N));
    if (c.shape()[o] != M || c.shape()[o + 1] != N)
        throw bad("c has shape " + shape_string(c.shape()) + ", expected " + std::to_string(M) + "x" +
                  std::to_string(N));
    if (detail::overlaps(a, c) || detail::overlaps(b, c)) throw bad("c must not share memory with a or b");
    if (a.elements() > UINT32_MAX || b.elements() > UINT32_MAX || c.elements() > UINT32_MAX)
        throw Error(ErrorCategory::Unsupported, "gemm: operands beyond 2^32 elements");
    return {batch, M, N, K};
}

// The configuration options.configuration names, or null where it names none.
const detail::GemmConfig* named_configuration(detail::ContextImpl& impl, const GemmOptions& options) {
    if (options.configuration.empty()) return nullptr;
    const detail::GemmConfig* config = nullptr;
    for (const auto& candidate : gemm_configs(impl).all)
        if (candidate.name == options.configuration) config = &candidate;
    if (!config) throw bad("unknown configuration '" + options.configuration + "'");
    return config;
}

// The GEMM over the tensors' memory, row-major operands (transposed ones with swapped strides).
detail::GemmProblem gemm_problem(detail::ContextImpl& impl, const Tensor& a, const Tensor& b, const Tensor& c,
                                 const ProductSizes& s, const GemmOptions& options) {
    const int64_t M = s.M, N = s.N, K = s.K;
    // Each operand from the offset alignment at or below its first byte (a view may start at any entry).
    auto whole = [&](const Tensor& t) {
        return detail::operand_of(detail::allocation_of(t, "gemm"), uint64_t(t.elements()), impl.pool->alignment(),
                                  element_bytes(t.data_type()))
            .whole();
    };
    const detail::Window wa = whole(a), wb = whole(b), wc = whole(c);
    detail::GemmProblem p;
    p.M = static_cast<uint32_t>(M), p.N = static_cast<uint32_t>(N), p.K = static_cast<uint32_t>(K);
    p.a = {wa.range,        wa.delta, options.transpose_a ? 1u : uint64_t(K), options.transpose_a ? uint64_t(M) : 1u,
           uint64_t(M * K), 0};
    p.b = {wb.range,        wb.delta, options.transpose_b ? 1u : uint64_t(N), options.transpose_b ? uint64_t(K) : 1u,
           uint64_t(K * N), 0};
    p.c = {wc.range, wc.delta, uint64_t(N), 1, uint64_t(M * N), 0};
    // Each operand in its own type (16-bit A and B into an fp32 C, as mixed-precision GEMMs take them).
    p.a.type = a.data_type(), p.b.type = b.data_type(), p.c.type = c.data_type();
    p.batch_i = static_cast<uint32_t>(s.batch);
    p.alpha = options.alpha, p.beta = options.beta;
    return p;
}

// Bytes the pool holds for the three operands, as every pass counts its own (a tensor passed twice once).
uint64_t operand_bytes(detail::ContextImpl& impl, const Tensor& a, const Tensor& b, const Tensor& c) {
    const uint64_t alignment = impl.pool->alignment();
    auto operand = [&](const Tensor& t) {
        return detail::operand_of(detail::allocation_of(t, "gemm"), uint64_t(t.elements()), alignment,
                                  element_bytes(t.data_type()));
    };
    const detail::Operand oa = operand(a), ob = operand(b), oc = operand(c);
    return detail::operand_bytes({&oa, &ob, &oc});
}

RunStats gemm_to(Context& context, detail::RecordingState* recording, const Tensor& a, const Tensor& b, Tensor& c,
                  const GemmOptions& options) {
    detail::ContextImpl& impl = detail::impl_of(context);
    const auto lock = detail::serialise(impl);
    impl.device->throw_if_lost();
    const ProductSizes shape = checked_shape(impl, a, b, c, options);
    const detail::GemmConfig* config = named_configuration(impl, options);
    const detail::GemmProblem p = gemm_problem(impl, a, b, c, shape, options);
    if (!config) config = &detail::choose_gemm_config(impl, p);
    // Texel views are an access path: operands too large for them are read as storage buffers, by the
    // same kernel and tile shape (stats.variant names what ran).
    if (!detail::texel_views_fit(*impl.device, p)) config = &detail::storage_buffer_twin(gemm_configs(impl), *config);

    RunStats stats;
    stats.variant = config->name;
    stats.operand_bytes = operand_bytes(impl, a, b, c);
    // A product whose tiles cannot fill the device is split along K (deterministic, gemm.hpp).
    const detail::GemmSplit split = detail::plan_gemm_split(impl, p, config);
    const std::vector<uint64_t> workspace =
        split.slices > 1 ? std::vector<uint64_t>{split.partial_floats} : std::vector<uint64_t>{};
    stats.workspace_bytes = split.slices > 1 ? impl.pool->round(split.partial_floats * 4) : 0;
    stats.partial_products = split.slices > 1 ? split.slices : 0;
    auto record = [&](detail::CommandStream& stream, std::span<const detail::Operand> partials) {
        if (split.slices > 1)
            detail::record_split_gemm(impl, stream, p, split, partials[0].whole().range, config);
        else
            detail::record_gemm(impl, stream, p, config);
    };
    if (recording)
        for (const Tensor* t : {&a, &b, static_cast<const Tensor*>(&c)}) recording->keep(t);
    detail::run_pass(impl, stats, workspace, detail::PassTarget{recording, nullptr}, record);
    return stats;
}

}  // namespace

RunStats gemm(Target target, const Tensor& a, const Tensor& b, Tensor& c, const GemmOptions& options) {
    if (!target.recording()) return gemm_to(*target.context(), nullptr, a, b, c, options);
    detail::RecordingState& state = detail::recording_state(*target.recording());
    Context context = detail::Access::context(state.context);
    return gemm_to(context, &state, a, b, c, options);
}

}  // namespace vkconv
