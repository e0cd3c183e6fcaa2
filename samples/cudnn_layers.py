#!/usr/bin/env python3
"""Times the layers of samples/layers.csv and the GEMM shapes of `vkconv bench` with PyTorch (cuDNN and
cuBLAS) in fp32 with TF32 off, for a side-by-side with `vkconv bench` on the same NVIDIA machine.

Usage: python3 samples/cudnn_layers.py [--batch N] [--repeat R] [--layout nchw|nhwc|both] [--json FILE] [layers.csv]
Every layer in forward, backward-data (torch.nn.grad.conv2d_input) and backward-filter
(torch.nn.grad.conv2d_weight), in NCHW and in NHWC (channels_last memory format, which cuDNN runs as NHWC).
Medians of CUDA-event timings after warm-up; cudnn.benchmark picks the fastest cuDNN algorithm per pass.
"""
import argparse
import csv
import json
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
    parser.add_argument("--layout", choices=["nchw", "nhwc", "both"], default="both")
    parser.add_argument("--json", default="", help="also write the layer timings as JSON to this file")
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

    results = []
    layouts = ["nchw", "nhwc"] if args.layout == "both" else [args.layout]
    for layout in layouts:
        memory_format = torch.channels_last if layout == "nhwc" else torch.contiguous_format
        print(f"\nConvolution passes (cuDNN through PyTorch, {layout.upper()}, fp32, TF32 off)")
        print(f"{'layer':18s} {'N':>4s} {'forward ms':>12s} {'bwd-data ms':>12s} {'bwd-filter ms':>14s}")
        rows = csv.reader(line for line in open(args.layers) if not line.startswith("#"))
        for row in rows:
            name = row[0]
            n, c, h, w, k, r, s, sh, sw, ph, pw, dh, dw, g = map(int, row[1:15])
            if args.batch:
                n = args.batch
            x = torch.randn(n, c, h, w, device="cuda").to(memory_format=memory_format)
            weight = torch.randn(k, c // g, r, s, device="cuda").to(memory_format=memory_format)
            geometry = dict(stride=(sh, sw), padding=(ph, pw), dilation=(dh, dw), groups=g)
            y = torch.nn.functional.conv2d(x, weight, None, **geometry)
            dy = torch.randn_like(y).to(memory_format=memory_format)
            forward = timed(lambda: torch.nn.functional.conv2d(x, weight, None, **geometry), args.repeat)
            data = timed(lambda: torch.nn.grad.conv2d_input(x.shape, weight, dy, **geometry), args.repeat)
            filt = timed(lambda: torch.nn.grad.conv2d_weight(x, weight.shape, dy, **geometry), args.repeat)
            p, q = y.shape[2], y.shape[3]
            flops = 2.0 * n * k * p * q * (c // g) * r * s
            print(f"{name:18s} {n:4d} {forward:12.4f} {data:12.4f} {filt:14.4f}   "
                  f"({flops / forward / 1e6:.1f} / {flops / data / 1e6:.1f} / {flops / filt / 1e6:.1f} GFLOP/s)")
            results.append({"layer": name, "batch": n, "layout": layout, "forward_ms": forward,
                            "backward_data_ms": data, "backward_filter_ms": filt, "flops": flops})
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "cudnn": torch.backends.cudnn.version(), "rows": results}, out, indent=1)

if __name__ == "__main__":
    main()
