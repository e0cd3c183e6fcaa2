#version 450
// separable_grad_plus — the frame gradients that e3 = backward_data(g, k_plus) reaches, for one clip:
// df3 = -e3 and df2 += e3 (df2 already holds g + e1).
//
// Specialization constants: 0 WORKGROUP_SIZE (set by vkconv::Kernel).
// Bindings: 0 e3 (readonly), 1 df3 (written), 2 df2 (read and written).
// Push constants: offset[b] (element 0 of binding b, in floats from its start: frames are views that may
//   start at any element), then base, count: this dispatch covers elements [base, base + count).
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1), one invocation per element, each element written
//   once by its own invocation (no atomics, no scatter).

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer E { float e[]; };
layout(std430, binding = 1) writeonly buffer DF3 { float df3[]; };
layout(std430, binding = 2) buffer DF2 { float df2[]; };
layout(push_constant) uniform Params { uint offset[3]; uint base, count; } pc;

void main() {
    if (gl_GlobalInvocationID.x >= pc.count) return;
    const uint i = pc.base + gl_GlobalInvocationID.x;
    const float v = e[pc.offset[0] + i];
    df3[pc.offset[1] + i] = -v;
    df2[pc.offset[2] + i] += v;
}
