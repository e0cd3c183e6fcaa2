#version 450
// separable_accumulate — acc = part (first chunk) or acc + part: sums the chunks' partial kernel and
// bias gradients one chunk after another, so the result does not depend on timing (deterministic).
//
// Specialization constants: 0 WORKGROUP_SIZE (set by vkconv::Kernel).
// Bindings: 0 part (readonly), 1 acc (written; read unless first).
// Push constants: base, count: this dispatch covers elements [base, base + count); before them, first (1: copy, 0: add).
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1), one invocation per element, each element written
//   once by its own invocation (no atomics, no scatter).

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer Part { float part[]; };
layout(std430, binding = 1) buffer Acc { float acc[]; };
layout(push_constant) uniform Params { uint first; uint base, count; } pc;

void main() {
    if (gl_GlobalInvocationID.x >= pc.count) return;
    const uint i = pc.base + gl_GlobalInvocationID.x;
    acc[i] = pc.first != 0 ? part[i] : acc[i] + part[i];
}
