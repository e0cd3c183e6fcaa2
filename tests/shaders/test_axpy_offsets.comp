#version 450
// test_axpy_offsets — y[i] = a * x[i] + y[i] on views that may start at any element: the kernel the
// vkconv::Kernel tests run with KernelDesc::element_offsets.
//
// Specialization constants: 0 WORKGROUP_SIZE (set by vkconv::Kernel).
// Bindings: 0 x (readonly), 1 y (read and written), each bound from the offset alignment below its view.
// Push constants: a (float), offset[2] (element 0 of x and of y, in floats from each binding's start), then
//   base, count: this dispatch covers elements [base, base + count).
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1), one invocation per element.

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
layout(push_constant) uniform Params { float a; uint offset[2]; uint base, count; } pc;

void main() {
    if (gl_GlobalInvocationID.x >= pc.count) return;
    const uint i = pc.base + gl_GlobalInvocationID.x;
    y[pc.offset[1] + i] = pc.a * x[pc.offset[0] + i] + y[pc.offset[1] + i];
}
