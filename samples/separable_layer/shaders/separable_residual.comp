#version 450
// separable_residual — z += t + f2 for one clip: adds the second convolution's output (bias included)
// and the skip connection to z, which holds the first convolution's output (bias included).
//
// Specialization constants: 0 WORKGROUP_SIZE (set by vkconv::Kernel).
// Bindings: 0 t (readonly), 1 f2 (readonly), 2 z (read and written).
// Push constants: offset[b] (element 0 of binding b, in floats from its start: frames are views that may
//   start at any element), then base, count: this dispatch covers elements [base, base + count).
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1), one invocation per element, each element written
//   once by its own invocation (no atomics, no scatter).

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer T { float t[]; };
layout(std430, binding = 1) readonly buffer F { float f[]; };
layout(std430, binding = 2) buffer Z { float z[]; };
layout(push_constant) uniform Params { uint offset[3]; uint base, count; } pc;

void main() {
    if (gl_GlobalInvocationID.x >= pc.count) return;
    const uint i = pc.base + gl_GlobalInvocationID.x;
    z[pc.offset[2] + i] += t[pc.offset[0] + i] + f[pc.offset[1] + i];
}
