#version 450
// separable_grad_minus — the frame gradients that e1 = backward_data(g, k_minus) reaches, for one clip:
// df1 = -e1 and df2 = g + e1 (the skip connection's g and the f2 side of f2 - f1).
//
// Specialization constants: 0 WORKGROUP_SIZE (set by vkconv::Kernel).
// Bindings: 0 e1 (readonly), 1 g (readonly), 2 df1 (written), 3 df2 (written).
// Push constants: offset[b] (element 0 of binding b, in floats from its start: frames are views that may
//   start at any element), then base, count: this dispatch covers elements [base, base + count).
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1), one invocation per element, each element written
//   once by its own invocation (no atomics, no scatter).

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer E { float e[]; };
layout(std430, binding = 1) readonly buffer G { float g[]; };
layout(std430, binding = 2) writeonly buffer DF1 { float df1[]; };
layout(std430, binding = 3) writeonly buffer DF2 { float df2[]; };
layout(push_constant) uniform Params { uint offset[4]; uint base, count; } pc;

void main() {
    if (gl_GlobalInvocationID.x >= pc.count) return;
    const uint i = pc.base + gl_GlobalInvocationID.x;
    const float v = e[pc.offset[0] + i];
    df1[pc.offset[2] + i] = -v;
    df2[pc.offset[3] + i] = g[pc.offset[1] + i] + v;
}
