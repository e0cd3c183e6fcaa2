// The context's own layer: ContextImpl's lifetime, the way from a Context to it, the public Context's
// queries and the pool's peak scopes. Making a context (api/context.cpp) wires in the layers above.
#include <string>

#include "context/access.hpp"
#include "context/context_impl.hpp"
#include "memory/staging.hpp"
#include "vkconv/context.hpp"
#include "vkconv/pool.hpp"

namespace vkconv {
namespace detail {

ContextImpl::~ContextImpl() {
    gemm_config_table.reset();
    tuning.reset();
    staging.reset();
    pipelines.reset();
    pool.reset();
    find_cache.reset();
    device.reset();
    instance.reset();
}

ContextImpl& impl_of(const Context& context) {
    const auto& impl = Access::impl(context);
    if (!impl) throw Error(ErrorCategory::InvalidArgument, "the context was moved from");
    return *impl;
}

}  // namespace detail

Context::~Context() = default;
Context::Context(Context&&) noexcept = default;
Context& Context::operator=(Context&&) noexcept = default;

const DeviceInfo& Context::device() const {
    return detail::impl_of(*this).device->info();
}
bool Context::validation_enabled() const {
    return detail::impl_of(*this).instance->validation_enabled();
}
bool Context::external_device() const {
    return !detail::impl_of(*this).device->owned();
}
PoolStats Context::pool_stats() const {
    const auto lock = detail::serialise(*this);
    return detail::impl_of(*this).pool->stats();
}
void Context::reset_peak() {
    const auto lock = detail::serialise(*this);
    detail::impl_of(*this).pool->reset_peak();
}
void Context::save_pipeline_cache() {
    const auto lock = detail::serialise(*this);
    detail::impl_of(*this).pipelines->save();
}

void Context::trim() {
    const auto lock = detail::serialise(*this);
    detail::impl_of(*this).pool->trim();
}

const char* to_string(AutoChoice choice) noexcept {
    switch (choice) {
        case AutoChoice::Measure: return "measure";
        case AutoChoice::Heuristic: return "heuristic";
        case AutoChoice::Stored: return "stored";
    }
    return "?";
}

AutoChoice parse_auto_choice(std::string_view name) {
    for (AutoChoice choice : {AutoChoice::Stored, AutoChoice::Measure, AutoChoice::Heuristic})
        if (name == to_string(choice)) return choice;
    throw Error(ErrorCategory::InvalidArgument,
                "unknown auto choice '" + std::string(name) + "' (expected stored, measure or heuristic)");
}

const char* to_string(ChoiceSource source) noexcept {
    switch (source) {
        case ChoiceSource::Named: return "named";
        case ChoiceSource::Heuristic: return "heuristic";
        case ChoiceSource::Stored: return "stored";
        case ChoiceSource::Measured: return "measured";
    }
    return "?";
}

struct PeakScope::State {
    std::shared_ptr<detail::ContextImpl> context;
    uint64_t baseline = 0;
    uint64_t driver_allocations = 0;  // the pool's count at construction
    detail::BufferPool::PeakTracker peak;
};

PeakScope::PeakScope(Context& context) : state_(std::make_shared<State>()) {
    state_->context = detail::Access::impl(context);
    detail::BufferPool& pool = *detail::impl_of(context).pool;
    state_->baseline = state_->peak.in_use = pool.in_use();
    state_->peak.reserved = pool.reserved();
    state_->driver_allocations = pool.driver_allocations();
    pool.add_peak_tracker(&state_->peak);
}

PeakScope::~PeakScope() {
    state_->context->pool->remove_peak_tracker(&state_->peak);
}
uint64_t PeakScope::peak() const {
    return state_->peak.in_use;
}
uint64_t PeakScope::peak_reserved() const {
    return state_->peak.reserved;
}
uint64_t PeakScope::driver_allocations() const {
    return state_->context->pool->driver_allocations() - state_->driver_allocations;
}
uint64_t PeakScope::baseline() const {
    return state_->baseline;
}

}  // namespace vkconv
