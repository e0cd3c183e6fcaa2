#!/usr/bin/env python3
"""Times the layers of samples/layers.csv and GEMM shapes with PyTorch (cuDNN and cuBLAS) in fp32 with
TF32 off, and the layers in fp16 or bf16 where asked, for a side-by-side with `vkconv bench` on the same
NVIDIA machine.

Usage: python3 samples/cudnn_layers.py [--batch N] [--repeat R] [--layout nchw|nhwc|both] [--layer NAME ...]
                                       [--dtype f32,f16,bf16] [--gemm M,N,K ...] [--no-gemm] [--json FILE]
                                       [layers.csv]
Every layer in forward, backward-data (torch.nn.grad.conv2d_input) and backward-filter
(torch.nn.grad.conv2d_weight), in NCHW and in NHWC (channels_last memory format, which cuDNN runs as NHWC),
in each element type of --dtype (default f32), fp32 first. 16-bit layers run on torch.float16 or
torch.bfloat16 tensors; PyTorch gives cuDNN a FLOAT compute type for them, so they accumulate in fp32 as
vkconv does. The GEMMs stay fp32, the type of vkconv's GEMM benchmark.
Medians of CUDA-event timings after warm-up; cudnn.benchmark picks the fastest cuDNN algorithm per pass.
The JSON file is rewritten after every GEMM and layer, so a run stopped early leaves what it measured;
every row carries its element type ("dtype").
"""
import argparse
import csv
import json
import os
import statistics

import torch

TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DTYPE_NAMES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16"}
DEFAULT_GEMMS = [("256^3", 256, 256, 256), ("512^3", 512, 512, 512), ("1024^3", 1024, 1024, 1024),
                 ("2048^3", 2048, 2048, 2048), ("4096^3", 4096, 4096, 4096),
                 ("conv 3136x64x576", 3136, 64, 576), ("conv 12100x96x363", 12100, 96, 363),
                 ("conv 49x512x4608", 49, 512, 4608)]


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


def gemm_shapes(texts):
    if not texts:
        return DEFAULT_GEMMS
    shapes = []
    for text in texts:
        named = [s for s in DEFAULT_GEMMS if s[0] == text]
        if named:
            shapes += named
            continue
        m, n, k = (int(v) for v in text.split(","))
        shapes.append((f"{m}x{n}x{k}", m, n, k))
    return shapes


def time_gemms(args, save):
    print("\nGEMM (torch.matmul, fp32, TF32 off)")
    for name, m, n, k in gemm_shapes(args.gemm):
        a = torch.randn(m, k, device="cuda")
        b = torch.randn(k, n, device="cuda")
        ms = timed(lambda: a @ b, args.repeat)
        gflops = 2.0 * m * n * k / ms / 1e6
        print(f"{name:20s} {ms:10.4f} ms {gflops:10.1f} GFLOP/s")
        save({"kind": "gemm", "dtype": "f32", "shape": name, "M": m, "N": n, "K": k, "ms": ms, "gflops": gflops})
        del a, b


def read_layers(path, only):
    rows = list(csv.reader(line for line in open(path) if line.strip() and not line.startswith("#")))
    names = [row[0] for row in rows]
    unknown = [name for name in only if name not in names]
    if unknown:
        raise SystemExit(f"cudnn_layers.py: --layer {', '.join(unknown)}: not in {path}")
    return [row for row in rows if not only or row[0] in only]


def pad_pair(text):
    """A pad column: one pad for both sides, or BEGIN:END (torch pads both sides alike: BEGIN:END is run
    as max(BEGIN, END), the same output size only when they are equal)."""
    parts = [int(v) for v in text.split(":")]
    return parts[0] if len(parts) == 1 else None


def time_layer(row, layout, dtype, args):
    """One layer's three passes in one layout and element type: its JSON row (with "error" where torch refused)."""
    try:
        return dict(time_layer_passes(row, layout, TORCH_DTYPES[dtype], args), dtype=dtype)
    except RuntimeError as e:  # e.g. bf16 on a GPU without it, or out of memory: keep timing the other layers
        print(f"{row[0]:18s} {layout} {dtype}: {str(e).splitlines()[0]}", flush=True)
        return {"layer": row[0], "layout": layout, "dtype": dtype, "error": str(e).splitlines()[0]}


def time_layer_passes(row, layout, torch_dtype, args):
    name = row[0]
    n, c, h, w, k, r, s, sh, sw = map(int, row[1:10])
    ph, pw = pad_pair(row[10]), pad_pair(row[11])
    dh, dw, g = map(int, row[12:15])
    if ph is None or pw is None:
        return {"layer": name, "layout": layout, "error": "asymmetric padding: torch conv2d has no such padding"}
    if args.batch:
        n = args.batch
    memory_format = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    x = torch.randn(n, c, h, w, device="cuda", dtype=torch_dtype).to(memory_format=memory_format)
    weight = torch.randn(k, c // g, r, s, device="cuda", dtype=torch_dtype).to(memory_format=memory_format)
    geometry = dict(stride=(sh, sw), padding=(ph, pw), dilation=(dh, dw), groups=g)
    y = torch.nn.functional.conv2d(x, weight, None, **geometry)
    dy = torch.randn_like(y).to(memory_format=memory_format)
    forward = timed(lambda: torch.nn.functional.conv2d(x, weight, None, **geometry), args.repeat)
    data = timed(lambda: torch.nn.grad.conv2d_input(x.shape, weight, dy, **geometry), args.repeat)
    filt = timed(lambda: torch.nn.grad.conv2d_weight(x, weight.shape, dy, **geometry), args.repeat)
    p, q = y.shape[2], y.shape[3]
    flops = 2.0 * n * k * p * q * (c // g) * r * s
    print(f"{name:18s} {n:4d} {forward:12.4f} {data:12.4f} {filt:14.4f}   "
          f"({flops / forward / 1e6:.1f} / {flops / data / 1e6:.1f} / {flops / filt / 1e6:.1f} GFLOP/s)", flush=True)
    return {"layer": name, "batch": n, "layout": layout, "forward_ms": forward, "backward_data_ms": data,
            "backward_filter_ms": filt, "flops": flops}


def parse_dtypes(parser, text):
    """--dtype's list in measuring order (fp32 first), or a usage error naming what was given."""
    asked = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in asked if name not in TORCH_DTYPES]
    if unknown or not asked:
        parser.error(f"--dtype {text!r}: " + (f"unknown element type {', '.join(map(repr, unknown))}; " if unknown
                                              else "no element type; ") + "give a comma list of f32, f16, bf16")
    return [name for name in TORCH_DTYPES if name in asked]


def parse_options():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("layers", nargs="?", default=os.path.join(os.path.dirname(__file__), "layers.csv"))
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--layout", choices=["nchw", "nhwc", "both"], default="both")
    parser.add_argument("--layer", action="append", default=[], help="only this layer (repeatable)")
    parser.add_argument("--dtype", default="f32", metavar="LIST",
                        help="element types of the layers: a comma list of f32, f16, bf16 (default f32)")
    parser.add_argument("--gemm", action="append", default=[], help="a GEMM shape: a name or M,N,K (repeatable)")
    parser.add_argument("--no-gemm", action="store_true", help="time no GEMM")
    parser.add_argument("--no-layers", action="store_true", help="time no layer")
    parser.add_argument("--json", default="", help="also write the timings as JSON to this file")
    args = parser.parse_args()
    args.dtypes = parse_dtypes(parser, args.dtype)
    return args


def keep_fp32_arithmetic():
    """No TF32 and no reduced-precision reductions. cuDNN has no such switch for 16-bit convolutions (PyTorch
    already gives them a FLOAT compute type); the matmul ones govern cuBLAS, and are turned off so that nothing
    in this process reduces in 16 bits. Returns the reduction switches it found and turned off: PyTorch has
    the fp16 one since 1.12 and the bf16 one since 2.0, and older versions raise AssertionError (newer
    ones AttributeError) for a name they do not know."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    found = []
    for name in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        try:
            setattr(torch.backends.cuda.matmul, name, False)
            found.append(name)
        except (AttributeError, AssertionError):
            pass
    return found


def time_layers(args, layers, save):
    for dtype in args.dtypes:
        for layout in ["nchw", "nhwc"] if args.layout == "both" else [args.layout]:
            arithmetic = "fp32, TF32 off" if dtype == "f32" else f"{DTYPE_NAMES[dtype]}, fp32 accumulation"
            print(f"\nConvolution passes (cuDNN through PyTorch, {layout.upper()}, {arithmetic})")
            print(f"{'layer':18s} {'N':>4s} {'forward ms':>12s} {'bwd-data ms':>12s} {'bwd-filter ms':>14s}")
            for row in layers:
                save(dict(time_layer(row, layout, dtype, args), kind="layer"))
                torch.cuda.empty_cache()


def main():
    args = parse_options()
    if not torch.cuda.is_available():
        raise SystemExit(f"cudnn_layers.py: PyTorch {torch.__version__} sees no CUDA device "
                         "(torch.cuda.is_available() is False): nothing to time")
    reductions_off = keep_fp32_arithmetic()
    torch.backends.cudnn.benchmark = True
    header = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "cudnn": torch.backends.cudnn.version(), "cuda": torch.version.cuda, "repeat": args.repeat,
              "tf32": False, "cudnn_benchmark": True, "dtypes": args.dtypes, "accumulation": "fp32",
              "reduced_precision_reduction_off": reductions_off, "rows": []}
    print(f"device: {header['device']}, torch {header['torch']}, cuDNN {header['cudnn']}, CUDA {header['cuda']}")

    def save(row):
        header["rows"].append(row)
        if args.json:
            with open(args.json + ".tmp", "w") as out:
                json.dump(header, out, indent=1)
            os.replace(args.json + ".tmp", args.json)

    layers = read_layers(args.layers, args.layer)
    if not args.no_gemm:
        time_gemms(args, save)
    if not args.no_layers:
        time_layers(args, layers, save)


if __name__ == "__main__":
    main()
