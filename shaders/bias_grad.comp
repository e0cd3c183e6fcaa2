#version 450
// bias_grad — db[k] (+)= sum over the images of one chunk and every output position of dy[n][k][p][q].
//
// A workgroup owns CW channels and spreads each one's positions over PL lanes (CW * PL invocations):
// lane l sums positions l, l + PL, l + 2*PL, ... of every image in order, then the lanes' sums are added
// by a fixed tree in shared memory. The order never depends on timing, so results are bit-identical run
// to run; chunks add up in order with `accumulate`. NCHW takes CW = 1 (a channel's positions are
// contiguous, lanes read neighbouring floats); NHWC takes CW = 16 (neighbouring channels are contiguous).
//
// Specialization constants: 0 CW (channels per workgroup, local size x), 1 K, 2 PQ (output positions per
//   image), 3 NHWC, 4 PL (position lanes, local size y; a power of two; CW * PL = 64).
// Bindings: 0 dy (the chunk's window, readonly), 1 db (read when accumulating, written).
// Push constants: dy_offset (floats from the binding's start to the chunk's first image), images in the
//   chunk, accumulate (0/1), then the dispatch's slice [base, base + count) of invocations (64 a workgroup).
// Dispatch grid: (ceil(count / 64), 1, 1) over ceil(K / CW) workgroups in all.

layout(local_size_x_id = 0, local_size_y_id = 4) in;
layout(constant_id = 0) const uint CW = 1;
layout(constant_id = 1) const uint K = 1;
layout(constant_id = 2) const uint PQ = 1;
layout(constant_id = 3) const bool NHWC = false;
layout(constant_id = 4) const uint PL = 64;

layout(std430, binding = 0) readonly buffer GradOutput { float dy[]; };
layout(std430, binding = 1) buffer GradBias { float db[]; };

layout(push_constant) uniform Params {
    uint dy_offset;
    uint images;
    uint accumulate;
    uint base, count;
} pc;

shared float lane_sums[CW * PL];

void main() {
    const uint c = gl_LocalInvocationID.x, lane = gl_LocalInvocationID.y;
    const uint k = (pc.base / (CW * PL) + gl_WorkGroupID.x) * CW + c;
    float acc = 0.0;
    if (k < K) {
        for (uint n = 0; n < pc.images; ++n) {
            const uint image = pc.dy_offset + n * K * PQ;
            if (NHWC) {
                for (uint j = lane; j < PQ; j += PL) acc += dy[image + j * K + k];
            } else {
                for (uint j = lane; j < PQ; j += PL) acc += dy[image + k * PQ + j];
            }
        }
    }
    lane_sums[lane * CW + c] = acc;
    barrier();
    for (uint half_lanes = PL / 2; half_lanes > 0; half_lanes /= 2) {
        if (lane < half_lanes) lane_sums[lane * CW + c] += lane_sums[(lane + half_lanes) * CW + c];
        barrier();
    }
    if (lane == 0 && k < K) db[k] = (pc.accumulate != 0 ? db[k] : 0.0) + lane_sums[c];
}
