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

// One instruction of a SPIR-V module: its opcode, its word count and its words (word(0) is the opcode's).
struct Instruction {
    uint32_t opcode, count;
    const uint32_t* words;
    uint32_t word(uint32_t i) const { return words[i]; }
};

// Walks a module's instructions in order, tracking what sizing Workgroup variables needs: spec ids, the
// values of (spec) constants under the given specialization, type sizes and Workgroup pointer types.
class WorkgroupMemoryReader {
public:
    explicit WorkgroupMemoryReader(std::span<const uint32_t> specialization) : specialization_(specialization) {}

    void read(const Instruction& in) {
        switch (in.opcode) {
            case OpDecorate:
                if (in.count >= 4 && in.word(2) == kDecorationSpecId) spec_id_[in.word(1)] = in.word(3);
                break;
            case OpTypeBool: case OpTypeInt: case OpTypeFloat: case OpTypeVector: case OpTypeMatrix:
            case OpTypeArray: case OpTypeStruct: read_type(in); break;
            case OpTypePointer:
                if (in.word(2) == kStorageClassWorkgroup) pointee_[in.word(1)] = in.word(3);
                break;
            case OpConstantTrue: case OpSpecConstantTrue: case OpConstantFalse: case OpSpecConstantFalse:
                read_bool_constant(in);
                break;
            case OpConstant: case OpSpecConstant: read_int_constant(in); break;
            case OpSpecConstantOp: read_constant_op(in); break;
            case OpVariable: read_variable(in); break;
            default: break;
        }
    }

    // The bytes of every Workgroup variable read, or nothing where one's size is not known.
    std::optional<uint64_t> total() const { return known_ ? std::optional<uint64_t>(total_) : std::nullopt; }

private:
    std::optional<uint64_t> size_of(uint32_t type) const {
        auto it = size_.find(type);
        return it == size_.end() ? std::nullopt : it->second;
    }

    // The value a spec constant takes: the specialization's where it sets the constant's SpecId.
    std::optional<uint32_t> specialized(uint32_t result) const {
        if (auto id = spec_id_.find(result); id != spec_id_.end() && id->second < specialization_.size())
            return specialization_[id->second];
        return std::nullopt;
    }

    void read_type(const Instruction& in) {
        switch (in.opcode) {
            case OpTypeBool: size_[in.word(1)] = 4; break;
            case OpTypeInt:
            case OpTypeFloat: size_[in.word(1)] = in.word(2) / 8; break;
            case OpTypeVector:
            case OpTypeMatrix:
                if (auto s = size_of(in.word(2))) size_[in.word(1)] = *s * in.word(3);
                else size_[in.word(1)] = std::nullopt;
                break;
            case OpTypeArray: {
                auto s = size_of(in.word(2));
                auto n = constant_.find(in.word(3));
                // (A length past 2^32 is no real shared array: left unknown rather than overflowed.)
                size_[in.word(1)] = s && n != constant_.end() && n->second >= 0 && n->second < (int64_t{1} << 32) &&
                                            *s < (uint64_t{1} << 32)
                                        ? std::optional(*s * uint64_t(n->second))
                                        : std::nullopt;
                break;
            }
            case OpTypeStruct: {
                std::optional<uint64_t> s = 0;
                for (uint32_t i = 2; i < in.count && s; ++i) {
                    auto m = size_of(in.word(i));
                    s = m ? std::optional(*s + *m) : std::nullopt;
                }
                size_[in.word(1)] = s;
                break;
            }
        }
    }

    void read_bool_constant(const Instruction& in) {
        bool value = in.opcode == OpConstantTrue || in.opcode == OpSpecConstantTrue;
        if (in.opcode == OpSpecConstantTrue || in.opcode == OpSpecConstantFalse)
            if (auto v = specialized(in.word(2))) value = *v != 0;
        constant_[in.word(2)] = value;
    }

    void read_int_constant(const Instruction& in) {
        int64_t value = in.count > 3 ? int64_t(int32_t(in.word(3))) : 0;
        if (in.opcode == OpSpecConstant)
            if (auto v = specialized(in.word(2))) value = int64_t(int32_t(*v));
        constant_[in.word(2)] = value;
    }

    // Evaluated only where every operand is a known constant (array lengths computed from spec constants).
    void read_constant_op(const Instruction& in) {
        std::vector<int64_t> operands;
        bool all = true;
        for (uint32_t i = 4; i < in.count; ++i) {
            auto it = constant_.find(in.word(i));
            if (it == constant_.end()) all = false;
            else operands.push_back(it->second);
        }
        if (all)
            if (auto v = evaluate(in.word(3), operands)) constant_[in.word(2)] = *v;
    }

    void read_variable(const Instruction& in) {
        if (in.count < 4 || in.word(3) != kStorageClassWorkgroup) return;
        auto p = pointee_.find(in.word(1));
        auto s = p == pointee_.end() ? std::nullopt : size_of(p->second);
        if (s) total_ += *s;
        else known_ = false;
    }

    std::span<const uint32_t> specialization_;
    std::unordered_map<uint32_t, uint32_t> spec_id_;              // result id -> SpecId
    std::unordered_map<uint32_t, int64_t> constant_;              // result id -> value
    std::unordered_map<uint32_t, std::optional<uint64_t>> size_;  // type id -> bytes
    std::unordered_map<uint32_t, uint32_t> pointee_;              // Workgroup pointer type id -> pointee type
    uint64_t total_ = 0;
    bool known_ = true;
};

}  // namespace

std::optional<uint64_t> workgroup_memory_bytes(std::span<const uint32_t> spirv,
                                               std::span<const uint32_t> specialization) {
    if (spirv.size() < 5) return std::nullopt;
    WorkgroupMemoryReader reader(specialization);
    for (size_t at = 5; at < spirv.size();) {  // (after the 5-word header)
        const uint32_t count = spirv[at] >> 16, opcode = spirv[at] & 0xFFFF;
        if (count == 0 || at + count > spirv.size()) return std::nullopt;
        reader.read(Instruction{opcode, count, spirv.data() + at});
        at += count;
    }
    return reader.total();
}

}  // namespace vkconv::detail
