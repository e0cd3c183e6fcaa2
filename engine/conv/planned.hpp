// A plan, or the reason there is none. Planning asks many "does it fit?" questions (each algorithm, each
// chunk or tile size, each candidate Auto weighs); a refusal is an ordinary answer to them, not an
// exception. Only a public call that must run the plan turns a refusal into an Error, once.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "vkconv/error.hpp"

namespace vkconv::detail {

struct Refusal {
    // Unsupported: the algorithm cannot run this problem here; InvalidArgument: no algorithm fits the
    // caller's own workspace limit.
    ErrorCategory category = ErrorCategory::Unsupported;
    std::string reason;
    // A 16-bit problem whose fp32 sums (the copy an output summed in pieces adds up in, to be rounded once)
    // this algorithm cannot bind whole: in tiles, whose problems are fp32 (tiled/tiled.hpp), it runs.
    bool fp32_tiles_run_it = false;

    [[noreturn]] void raise() const { throw Error(category, reason); }
};

inline Refusal unsupported(std::string reason) {
    return {ErrorCategory::Unsupported, std::move(reason)};
}

inline Refusal wide_copy_refusal(std::string reason) {
    return {ErrorCategory::Unsupported, std::move(reason), true};
}

// The refusal of a kernel that binds more storage buffers than the device allows (vulkan/device.hpp's
// storage_buffer_shortfall), or none when they fit.
inline std::optional<Refusal> descriptor_refusal(const std::string& shortfall) {
    if (shortfall.empty()) return std::nullopt;
    return unsupported(shortfall);
}

template <typename Plan>
class [[nodiscard]] Planned {
public:
    Planned(Plan plan) : value_(std::move(plan)) {}
    Planned(Refusal refusal) : value_(std::move(refusal)) {}

    explicit operator bool() const { return std::holds_alternative<Plan>(value_); }
    const Plan& operator*() const { return std::get<Plan>(value_); }
    Plan& operator*() { return std::get<Plan>(value_); }
    const Plan* operator->() const { return &std::get<Plan>(value_); }
    Plan* operator->() { return &std::get<Plan>(value_); }
    const Refusal& refusal() const { return std::get<Refusal>(value_); }

    // The plan, or the refusal thrown as an Error: for the public call that must run it.
    const Plan& value() const {
        if (!*this) refusal().raise();
        return **this;
    }

private:
    std::variant<Plan, Refusal> value_;
};

}  // namespace vkconv::detail
