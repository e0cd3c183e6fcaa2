#!/usr/bin/env python3
"""How long a model's first training steps take on vkconv, against its later ones: eight convolutions of
different shapes (a stem, strides, a 1x1, groups, a depthwise layer, dilation, a wide late layer), one SGD
step at a time, each step's wall time printed. The first step pays for what a new layer and shape cost:
pipelines built and, with --benchmark (vkconv.torch.benchmark = True), every algorithm measured.

Usage: PYTHONPATH=build/python /usr/bin/python3 samples/python/first_steps.py [--steps 4] [--layout nchw]
                                                                              [--benchmark] [--batch 8]"""
import argparse
import time

import torch

import vkconv.torch as vt


def model(layout):
    def conv(*args, **kwargs):
        return vt.Conv2d(*args, layout=layout, **kwargs)
    return torch.nn.Sequential(
        conv(3, 16, 5, stride=2, padding=2), torch.nn.ReLU(),
        conv(16, 32, 3, padding=1), torch.nn.ReLU(),
        conv(32, 32, 3, stride=2, padding=1, groups=4), torch.nn.ReLU(),
        conv(32, 64, 1), torch.nn.ReLU(),
        conv(64, 64, 3, padding=1, groups=64), torch.nn.ReLU(),
        conv(64, 64, 3, padding=2, dilation=2), torch.nn.ReLU(),
        conv(64, 128, 3, stride=2, padding=1), torch.nn.ReLU(),
        conv(128, 10, 1), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--layout", choices=["nchw", "nhwc"], default="nchw")
    parser.add_argument("--benchmark", action="store_true", help="measure every algorithm on first use")
    args = parser.parse_args()
    vt.benchmark = args.benchmark
    torch.manual_seed(0)
    net = model(args.layout)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    x, labels = torch.randn(args.batch, 3, 64, 64), torch.randint(0, 10, (args.batch,))
    times = []
    for step in range(args.steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), labels)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
        print(f"step {step + 1}: {times[-1] * 1000:8.1f} ms  loss {loss.item():.4f}", flush=True)
    chosen = set()
    for layer in (m for m in net if isinstance(m, vt.Conv2d)):
        for stats in layer.last_stats.values():  # RunStats, or a layer step's LayerBackwardStats
            chosen |= {str(stats.chosen_by)} if hasattr(stats, "chosen_by") else {
                str(stats.data_chosen_by), str(stats.filter_chosen_by)}
    chosen = sorted(chosen)
    print(f"first step / second step: {times[0] / times[1]:.1f}; algorithms chosen by: {', '.join(chosen)}")


if __name__ == "__main__":
    main()
