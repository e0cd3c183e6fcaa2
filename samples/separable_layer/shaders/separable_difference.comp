#version 450
// separable_difference — d = a - b for one clip: the inputs of both depthwise convolutions (f2 - f1 and
// f2 - f3), made again in the backward pass rather than kept from the forward.
//
// Specialization constants: 0 WORKGROUP_SIZE (set by vkconv::Kernel).
// Bindings: 0 a (readonly, frame f2), 1 b (readonly, f1 or f3), 2 d (written).
// Push constants: offset[b] (element 0 of binding b, in floats from its start: frames are views that may
//   start at any element), then base, count: this dispatch covers elements [base, base + count).
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1), one invocation per element, each element written
//   once by its own invocation (no atomics, no scatter).

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer D { float d[]; };
layout(push_constant) uniform Params { uint offset[3]; uint base, count; } pc;

void main() {
    if (gl_GlobalInvocationID.x >= pc.count) return;
    const uint i = pc.base + gl_GlobalInvocationID.x;
    d[pc.offset[2] + i] = a[pc.offset[0] + i] - b[pc.offset[1] + i];
}
