#!/usr/bin/env python3
"""Times the layers of samples/layers.csv and the GEMM shapes of `vkconv bench` with PyTorch (cuDNN and
cuBLAS) in fp32 with TF32 off, for a side-by-side with `vkconv bench` on the same NVIDIA machine.

Usage: python3 samples/cudnn_layers.py [--batch N] [--repeat R] [layers.csv]
Medians of CUDA-event timings after warm-up; cudnn.benchmark picks the fastest cuDNN algorithm.
"""
import argparse
import csv
import statistics

import torch


def timed(fn, repeat):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("layers", nargs="?", default="samples/layers.csv")
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")

    print("\nGEMM (torch.matmul, fp32, TF32 off)")
    for name, m, n, k in [("256^3", 256, 256, 256), ("512^3", 512, 512, 512), ("1024^3", 1024, 1024, 1024),
                          ("4096^3", 4096, 4096, 4096), ("conv 3136x64x576", 3136, 64, 576),
                          ("conv 12100x96x363", 12100, 96, 363), ("conv 49x512x4608", 49, 512, 4608)]:
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(k, n, device="cuda")
        ms = timed(lambda: a @ b, args.repeat)
        print(f"{name:20s} {ms:10.4f} ms {2.0 * m * n * k / ms / 1e6:10.1f} GFLOP/s")

    print(f"\nForward convolution (cuDNN via torch.nn.functional.conv2d, NCHW, fp32, TF32 off)")
    rows = csv.reader(line for line in open(args.layers) if not line.startswith("#"))
    for row in rows:
        name = row[0]
        n, c, h, w, k, r, s, sh, sw, ph, pw, dh, dw, g = map(int, row[1:15])
        if args.batch:
            n = args.batch
        x = torch.randn(n, c, h, w, device="cuda")
        weight = torch.randn(k, c // g, r, s, device="cuda")
        ms = timed(lambda: torch.nn.functional.conv2d(x, weight, None, (sh, sw), (ph, pw), (dh, dw), g), args.repeat)
        p = (h + 2 * ph - dh * (r - 1) - 1) // sh + 1
        q = (w + 2 * pw - dw * (s - 1) - 1) // sw + 1
        flops = 2.0 * n * k * p * q * (c // g) * r * s
        print(f"{name:18s} N={n:<3d} {ms:10.4f} ms {flops / ms / 1e6:10.1f} GFLOP/s")


if __name__ == "__main__":
    main()
