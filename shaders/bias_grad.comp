#version 450
// bias_grad — db[k] (+)= sum over the images of one chunk and every output position of dy[n][k][p][q],
// one invocation per k, in a fixed order (chunks add up in order with ACCUMULATE): deterministic.
//
// Specialization constants: 0 WORKGROUP_SIZE, 1 K, 2 PQ (output positions per image), 3 NHWC.
// Bindings: 0 dy (the chunk's window, readonly), 1 db (read when accumulating, written).
// Push constants: dy_offset (floats from the binding's start to the chunk's first image), images in the
//   chunk, accumulate (0/1), then the dispatch's slice [base, base + count) of k.
// Dispatch grid: (ceil(count / WORKGROUP_SIZE), 1, 1).

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint K = 1;
layout(constant_id = 2) const uint PQ = 1;
layout(constant_id = 3) const bool NHWC = false;

layout(std430, binding = 0) readonly buffer GradOutput { float dy[]; };
layout(std430, binding = 1) buffer GradBias { float db[]; };

layout(push_constant) uniform Params {
    uint dy_offset;
    uint images;
    uint accumulate;
    uint base, count;
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    const uint k = pc.base + i;
    float acc = pc.accumulate != 0 ? db[k] : 0.0;
    for (uint n = 0; n < pc.images; ++n) {
        const uint image = pc.dy_offset + n * K * PQ;
        if (NHWC) {
            for (uint j = 0; j < PQ; ++j) acc += dy[image + j * K + k];
        } else {
            for (uint j = 0; j < PQ; ++j) acc += dy[image + k * PQ + j];
        }
    }
    db[k] = acc;
}
