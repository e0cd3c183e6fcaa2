"""What the Python layer adds to each call: a small layer's forward pass called N times from Python; for each
call the wall time measured in Python minus the time the C++ call itself took (vkconv._last_native_seconds,
measured inside the binding around the library call), so what remains is argument conversion, the GIL and the
interpreter. Prints medians and percentiles of both, and the GPU time of the pass.

    PYTHONPATH=build/python python3 samples/python/python_overhead.py [--calls 1000] [--algorithm direct]
"""

import argparse
import statistics
import time

import numpy as np

import vkconv


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--algorithm", default="direct")
    parser.add_argument("--shape", default="1,8,8,8,8,3,3", help="N,C,H,W,K,R,S (padding 1)")
    args = parser.parse_args()
    if args.calls < 1:
        parser.error("--calls must be at least 1")
    n, c, h, w, k, r, s = (int(v) for v in args.shape.split(","))
    context = vkconv.Context()
    problem = vkconv.ConvProblem(N=n, C=c, H=h, W=w, K=k, R=r, S=s, pad_h=r // 2, pad_w=s // 2)
    rng = np.random.default_rng(0)
    x = vkconv.Tensor.from_host(context, rng.random(problem.input_shape(), dtype=np.float32))
    f = vkconv.Tensor.from_host(context, rng.random(problem.filter_shape(), dtype=np.float32))
    y = vkconv.Tensor(context, problem.output_shape())
    algorithm = vkconv.Algorithm(args.algorithm)
    vkconv.forward(context, problem, x, f, None, y, algorithm)  # pipelines built, workspace pooled

    python_us, native_us, gpu_us = [], [], []
    for _ in range(args.calls):
        start = time.perf_counter()
        stats = vkconv.forward(context, problem, x, f, None, y, algorithm)
        wall = time.perf_counter() - start
        native = vkconv._last_native_seconds()
        python_us.append((wall - native) * 1e6)
        native_us.append(native * 1e6)
        gpu_us.append(stats.gpu_ms * 1e3)

    def describe(values):
        ordered = sorted(values)
        return (f"median {statistics.median(values):8.2f} us   p10 {ordered[len(values) // 10]:8.2f}   "
                f"p90 {ordered[(len(values) * 9) // 10]:8.2f}")

    print(f"device: {context.device.name} ({context.device.driver})")
    print(f"layer: {problem}   algorithm {algorithm}   {args.calls} blocking calls")
    print(f"Python layer (wall - C++ call): {describe(python_us)}")
    print(f"C++ call (host, blocking):      {describe(native_us)}")
    print(f"GPU time of the pass:           {describe(gpu_us)}")


if __name__ == "__main__":
    main()
