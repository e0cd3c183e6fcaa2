#version 450
// splitk_reduce_groups — the first level of a two-level fixed-order split-K sum: for each group j of
// `group` consecutive splits and each i < split_floats, partial[j * group * split_floats + i] = the sum of
// partial[s * split_floats + i] over the group's splits s, in order of s (in place: each group's sum lands in its
// first split's slot, which only this invocation reads). splitk_reduce then adds the group sums in order.
// Two short fixed-order loops instead of one long one: the same bits every run, and no invocation walks
// thousands of splits alone.
//
// Specialization constants: 0 WORKGROUP_SIZE.
// Bindings: 0 partial (read and written in place).
// Push constants: split_floats (floats per split), splits, group (splits per group), then the dispatch's
//   slice [base, base + count) of the groups' split_floats * ceil(splits / group) sums.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer Partial { float partial[]; };

layout(push_constant) uniform Params {
    uint split_floats;
    uint splits;
    uint group;
    uint pad0;
    uint base, count;
} pc;

void main() {
    const uint e = gl_GlobalInvocationID.x;
    if (e >= pc.count) return;
    const uint index = pc.base + e;
    const uint j = index / pc.split_floats, i = index % pc.split_floats;
    const uint first = j * pc.group;
    const uint last = min(pc.splits, first + pc.group);
    float acc = 0.0;
    for (uint s = first; s < last; ++s) acc += partial[s * pc.split_floats + i];
    partial[first * pc.split_floats + i] = acc;
}
