#include "vulkan/spirv_reflect.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace vkconv::detail {
namespace {

// The SPIR-V opcodes and enumerants this reader needs (SPIR-V 1.0 specification, section 3).
enum Op : uint32_t {
    OpDecorate = 71,
    OpTypeBool = 20,
    OpTypeInt = 21,
    OpTypeFloat = 22,
    OpTypeVector = 23,
    OpTypeMatrix = 24,
    OpTypeArray = 28,
    OpTypeStruct = 30,
    OpTypePointer = 32,
    OpConstantTrue = 41,
    OpConstantFalse = 42,
    OpConstant = 43,
    OpSpecConstantTrue = 48,
    OpSpecConstantFalse = 49,
    OpSpecConstant = 50,
    OpSpecConstantOp = 52,
    OpVariable = 59,
};
constexpr uint32_t kDecorationSpecId = 1, kStorageClassWorkgroup = 4;

// The integer value of a spec-constant operation, or nothing for an operation not evaluated here.
std::optional<int64_t> evaluate(uint32_t opcode, const std::vector<int64_t>& a) {
    // In unsigned 64-bit arithmetic, which wraps rather than overflows; shifts past the width are not
    // evaluated.
    auto u = [&](size_t i) { return uint64_t(i < a.size() ? a[i] : 0); };
    auto s = [&](size_t i) { return i < a.size() ? a[i] : 0; };
    auto wrap = [](uint64_t v) { return int64_t(v); };
    switch (opcode) {
        case 126: return wrap(0 - u(0));                                // SNegate
        case 128: return wrap(u(0) + u(1));                             // IAdd
        case 130: return wrap(u(0) - u(1));                             // ISub
        case 132: return wrap(u(0) * u(1));                             // IMul
        case 134: return u(1) ? wrap(u(0) / u(1)) : 0;                  // UDiv
        case 135: return s(1) && !(s(0) == INT64_MIN && s(1) == -1) ? s(0) / s(1) : 0;  // SDiv
        case 137: return u(1) ? wrap(u(0) % u(1)) : 0;                  // UMod
        case 138: case 139: return s(1) && s(1) != -1 ? s(0) % s(1) : 0;  // SRem, SMod
        case 166: return int64_t(s(0) || s(1));                         // LogicalOr
        case 167: return int64_t(s(0) && s(1));                         // LogicalAnd
        case 168: return int64_t(!s(0));                                // LogicalNot
        case 169: return s(0) ? s(1) : s(2);                            // Select
        case 170: return int64_t(s(0) == s(1));                         // IEqual
        case 171: return int64_t(s(0) != s(1));                         // INotEqual
        case 172: case 173: return int64_t(s(0) > s(1));                // UGreaterThan, SGreaterThan
        case 174: case 175: return int64_t(s(0) >= s(1));               // UGreaterThanEqual, SGreaterThanEqual
        case 176: case 177: return int64_t(s(0) < s(1));                // ULessThan, SLessThan
        case 178: case 179: return int64_t(s(0) <= s(1));               // ULessThanEqual, SLessThanEqual
        case 194: case 195: case 196:                                   // shifts
            if (u(1) >= 64) return std::nullopt;
            return opcode == 196 ? wrap(u(0) << u(1)) : wrap(u(0) >> u(1));
        case 197: return wrap(u(0) | u(1));                             // BitwiseOr
        case 198: return wrap(u(0) ^ u(1));                             // BitwiseXor
        case 199: return wrap(u(0) & u(1));                             // BitwiseAnd
        default: return std::nullopt;
    }
}

}  // namespace

std::optional<uint64_t> workgroup_memory_bytes(std::span<const uint32_t> spirv,
                                               std::span<const uint32_t> specialization) {
    if (spirv.size() < 5) return std::nullopt;
    std::unordered_map<uint32_t, uint32_t> spec_id;            // result id -> SpecId
    std::unordered_map<uint32_t, int64_t> constant;            // result id -> value
    std::unordered_map<uint32_t, std::optional<uint64_t>> size;  // type id -> bytes
    std::unordered_map<uint32_t, uint32_t> pointee;            // Workgroup pointer type id -> pointee type
    uint64_t total = 0;
    bool known = true;
    for (size_t at = 5; at < spirv.size();) {
        const uint32_t count = spirv[at] >> 16, opcode = spirv[at] & 0xFFFF;
        if (count == 0 || at + count > spirv.size()) return std::nullopt;
        auto word = [&](uint32_t i) { return spirv[at + i]; };
        auto size_of = [&](uint32_t type) -> std::optional<uint64_t> {
            auto it = size.find(type);
            return it == size.end() ? std::nullopt : it->second;
        };
        switch (opcode) {
            case OpDecorate:
                if (count >= 4 && word(2) == kDecorationSpecId) spec_id[word(1)] = word(3);
                break;
            case OpTypeBool: size[word(1)] = 4; break;
            case OpTypeInt:
            case OpTypeFloat: size[word(1)] = word(2) / 8; break;
            case OpTypeVector:
            case OpTypeMatrix:
                if (auto s = size_of(word(2))) size[word(1)] = *s * word(3);
                else size[word(1)] = std::nullopt;
                break;
            case OpTypeArray: {
                auto s = size_of(word(2));
                auto n = constant.find(word(3));
                // (A length past 2^32 is no real shared array: left unknown rather than overflowed.)
                size[word(1)] = s && n != constant.end() && n->second >= 0 && n->second < (int64_t{1} << 32) &&
                                        *s < (uint64_t{1} << 32)
                                    ? std::optional(*s * uint64_t(n->second))
                                    : std::nullopt;
                break;
            }
            case OpTypeStruct: {
                std::optional<uint64_t> s = 0;
                for (uint32_t i = 2; i < count && s; ++i) {
                    auto m = size_of(word(i));
                    s = m ? std::optional(*s + *m) : std::nullopt;
                }
                size[word(1)] = s;
                break;
            }
            case OpTypePointer:
                if (word(2) == kStorageClassWorkgroup) pointee[word(1)] = word(3);
                break;
            case OpConstantTrue: case OpSpecConstantTrue: case OpConstantFalse: case OpSpecConstantFalse: {
                bool value = opcode == OpConstantTrue || opcode == OpSpecConstantTrue;
                if (opcode == OpSpecConstantTrue || opcode == OpSpecConstantFalse)
                    if (auto id = spec_id.find(word(2)); id != spec_id.end() && id->second < specialization.size())
                        value = specialization[id->second] != 0;
                constant[word(2)] = value;
                break;
            }
            case OpConstant:
            case OpSpecConstant: {
                int64_t value = count > 3 ? int64_t(int32_t(word(3))) : 0;
                if (opcode == OpSpecConstant)
                    if (auto id = spec_id.find(word(2)); id != spec_id.end() && id->second < specialization.size())
                        value = int64_t(int32_t(specialization[id->second]));
                constant[word(2)] = value;
                break;
            }
            case OpSpecConstantOp: {
                std::vector<int64_t> operands;
                bool all = true;
                for (uint32_t i = 4; i < count; ++i) {
                    auto it = constant.find(word(i));
                    if (it == constant.end()) all = false;
                    else operands.push_back(it->second);
                }
                if (all)
                    if (auto v = evaluate(word(3), operands)) constant[word(2)] = *v;
                break;
            }
            case OpVariable:
                if (count >= 4 && word(3) == kStorageClassWorkgroup) {
                    auto p = pointee.find(word(1));
                    auto s = p == pointee.end() ? std::nullopt : size_of(p->second);
                    if (s) total += *s;
                    else known = false;
                }
                break;
            default:
                break;
        }
        at += count;
    }
    if (!known) return std::nullopt;
    return total;
}

}  // namespace vkconv::detail
