#!/usr/bin/env python3
"""Train a small CNN on scikit-learn's digits with vkconv convolutions.

The data set is the 1,797 8x8 grey images bundled with scikit-learn (`sklearn.datasets.load_digits`), so
nothing is downloaded. The model is

    conv 1->8 3x3 pad 1, ReLU, conv 8->16 3x3 pad 1, ReLU, max-pool 2, flatten, linear 256 -> 10

with its two convolutions either `vkconv.torch.Conv2d` (`--conv vkconv`, the default) or `torch.nn.Conv2d`
(`--conv torch`, the reference). Both start from the same parameters and see the data in the same order for
a given `--seed`, so their loss curves can be compared step by step.

Run (the Python package is built into build/python):

    PYTHONPATH=build/python python3 samples/python/train_digits.py
    PYTHONPATH=build/python python3 samples/python/train_digits.py --conv torch --json torch.json
    PYTHONPATH=build/python python3 samples/python/train_digits.py --algorithm im2col --layout nhwc
    PYTHONPATH=build/python python3 samples/python/train_digits.py --dtype bf16
    PYTHONPATH=build/python python3 samples/python/train_digits.py --world-size 2 --device 0,0

On a machine without a GPU, lavapipe is picked with
VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json.

Data parallel: `--world-size N` starts N processes on this machine, joined over gloo on 127.0.0.1, each
with a vkconv Context of its own and the model wrapped in DistributedDataParallel. Every global batch is the
one the single-process run takes; each rank computes its contiguous share of it, and the gradients are
averaged so that the update equals the single-process one. Launched by torchrun instead (RANK and
WORLD_SIZE set), the script joins the group torchrun describes, across machines too:

    torchrun --nproc_per_node=2 samples/python/train_digits.py --device 0,1

(torchrun only sets MASTER_ADDR, MASTER_PORT, RANK, LOCAL_RANK and WORLD_SIZE for each process it starts;
any launcher that sets them, or a shell loop, does as well.)

`--dtype bf16` trains in mixed precision with torch.autocast: the forward pass (the convolutions and the
linear layer) computes in bfloat16, while the parameters, their gradients and the optimizer stay float32.

`--device` is a vkconv device selector (an index or a substring of the device name); a comma-separated
list gives one per local rank.
"""

import argparse
import contextlib
import json
import os
import socket
import sys
import time
import warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

ALGORITHMS = ("auto", "direct", "im2col", "mec", "depthwise", "implicit-gemm")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--conv", choices=("vkconv", "torch"), default="vkconv",
                   help="convolution modules: vkconv.torch.Conv2d or the reference torch.nn.Conv2d")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=32, help="global batch, over all ranks")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=0, help="parameters and data order depend on this alone")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: all epochs)")
    p.add_argument("--algorithm", default="auto", help="vkconv algorithm: " + ", ".join(ALGORITHMS))
    p.add_argument("--layout", choices=("nchw", "nhwc"), default="nchw")
    p.add_argument("--dtype", choices=("f32", "bf16"), default="f32",
                   help="bf16: the forward pass in bfloat16 under torch.autocast, float32 parameters")
    p.add_argument("--device", default="",
                   help="vkconv device selector (index or name substring); a comma-separated list gives "
                        "one per local rank; empty: VKCONV_DEVICE, else the best device")
    p.add_argument("--world-size", type=int, default=1, help="data-parallel processes to start here")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads per process")
    p.add_argument("--log-every", type=int, default=10, help="print every this many steps (0: never)")
    p.add_argument("--json", default="", help="write losses, pool peaks, accuracy and seconds here")
    args = p.parse_args(argv)
    if args.batch_size < 1 or args.epochs < 1 or args.world_size < 1:
        p.error("--batch-size, --epochs and --world-size must be positive")
    return args


# ---------------------------------------------------------------------------------------------------------
# Data


def load_data(test_size=0.25, random_state=0):
    """The digits as float32 tensors (N, 1, 8, 8) in [0, 1] and int64 labels, split train/test.

    The split is fixed (stratified, random_state 0) whatever --seed is, so accuracies are comparable."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images.astype(np.float32) / 16.0)[:, None, :, :]  # pixel values are 0..16
    y = digits.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_size, random_state=random_state,
                                              stratify=y)
    return (torch.from_numpy(np.ascontiguousarray(x_tr)), torch.from_numpy(y_tr),
            torch.from_numpy(np.ascontiguousarray(x_te)), torch.from_numpy(y_te))


def epoch_batches(n, batch_size, generator):
    """The global batches of one epoch: a permutation from `generator`, cut into full batches.

    The incomplete last batch is dropped so that every step has the same batch size: the data order and
    every batch are then the same for any world size, and the pool's steady state is one shape."""
    perm = torch.randperm(n, generator=generator)
    return [perm[i:i + batch_size] for i in range(0, n - batch_size + 1, batch_size)]


def shard(indices, rank, world_size):
    """This rank's contiguous share of a global batch (shares differ by at most one sample)."""
    return torch.tensor_split(indices, world_size)[rank]


def local_loss(logits, targets, global_batch_size, world_size):
    """This rank's loss, scaled so that DDP's average over ranks is the mean over the global batch.

    DDP averages gradients (sum over ranks / world_size). With a loss of sum(local) * world_size / B on
    each rank, the average is sum(all samples) / B: the single-process mean, also when the shares differ
    in size. With world_size 1 this is the ordinary mean."""
    return F.cross_entropy(logits, targets, reduction="sum") * (world_size / global_batch_size)


# ---------------------------------------------------------------------------------------------------------
# Model


def build_model(conv):
    """The network, with `conv(in_channels, out_channels)` making its 3x3 padding-1 convolutions."""
    return nn.Sequential(
        conv(1, 8), nn.ReLU(),
        conv(8, 16), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 4 * 4, 10),
    )


def torch_conv(in_channels, out_channels):
    return nn.Conv2d(in_channels, out_channels, 3, padding=1)


def vkconv_conv_factory(algorithm, layout, context):
    import vkconv.torch as vt

    def conv(in_channels, out_channels):
        return vt.Conv2d(in_channels, out_channels, 3, padding=1, algorithm=algorithm, layout=layout,
                         context=context)
    return conv


def make_model(args, context=None):
    """The model for args.conv, its parameters drawn from torch's generator seeded with args.seed.

    The torch model is always built first, from the seed, and the vkconv model takes its state_dict, so
    --conv torch and --conv vkconv start from identical parameters whatever vkconv's modules would draw."""
    torch.manual_seed(args.seed)
    model = build_model(torch_conv)
    if args.conv == "vkconv":
        vk_model = build_model(vkconv_conv_factory(args.algorithm, args.layout, context))
        vk_model.load_state_dict(model.state_dict())
        model = vk_model
    return model


def to_layout(x, layout):
    # With NHWC the images are given channels-last, the layout the convolutions then work in.
    return x.contiguous(memory_format=torch.channels_last) if layout == "nhwc" else x


def precision(dtype):
    """Where the forward pass and the loss run for --dtype. bf16 is autocast, as PyTorch users train in mixed
    precision: the convolutions and the linear layer compute in bfloat16 and the loss in float32, while the
    parameters stay float32 and get float32 gradients. bfloat16 parameters would train worse: with 8
    significant bits, an SGD update smaller than 1/256 of a weight rounds away, and late in the cosine
    schedule most updates are that small."""
    return torch.autocast("cpu", dtype=torch.bfloat16) if dtype == "bf16" else contextlib.nullcontext()


# ---------------------------------------------------------------------------------------------------------
# Processes and devices


def device_for_local_rank(selector, local_rank):
    """The vkconv device selector for this local rank: one entry per rank, or one for all."""
    parts = [s.strip() for s in selector.split(",")] if selector else [""]
    if len(parts) == 1:
        return parts[0]
    if local_rank >= len(parts):
        raise SystemExit(f"--device lists {len(parts)} devices, but local rank {local_rank} needs one")
    return parts[local_rank]


def make_context(selector):
    """A vkconv Context on the selected device, made the default of vkconv.torch in this process."""
    import vkconv
    import vkconv.torch as vt

    context = vkconv.Context(vkconv.ContextOptions(device=selector)) if selector else vkconv.Context()
    vt.set_default_context(context)
    return context


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launched_by_torchrun():
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


# ---------------------------------------------------------------------------------------------------------
# Training


def evaluate(model, x, y, layout, dtype):
    model.eval()
    with torch.no_grad(), precision(dtype):
        predicted = model(to_layout(x, layout)).argmax(dim=1)
    model.train()
    return (predicted == y).float().mean().item()


def train(args, rank=0, world_size=1, local_rank=0, observer=None):
    """Trains on this process (one rank of world_size); returns the result dict on rank 0, else None.

    With world_size > 1 the process group must be initialised already. `observer`, if given, is called
    as observer.after_backward(info) after each step's backward pass (gradients reduced, not yet applied)
    and observer.after_step(info) after the optimizer step; info is a dict with the step, the model (the
    DDP wrapper when distributed), the global batch and this rank's share. Tests look at the gradients
    and parameters through it."""
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    context = None
    device_name = "cpu"
    if args.conv == "vkconv":
        context = make_context(device_for_local_rank(args.device, local_rank))
        device_name = context.device.name

    x_train, y_train, x_test, y_test = load_data()
    model = make_model(args, context)
    if world_size > 1:
        # PyTorch's CPU convolution gives a one-channel filter's gradient strides other than the
        # parameter's (the same element order, the size-1 dimension aside); DDP warns about it as a cost
        # of copying, on every step, and the copy is correct.
        warnings.filterwarnings("ignore", message="Grad strides do not match bucket view strides")
        # DDP broadcasts rank 0's parameters at construction and averages the gradients in backward.
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    # Cosine decay over the whole run (by epochs, not --max-steps, so a shortened run is the same run's
    # beginning): large steps early, small ones at the end settle the accuracy from seed to seed.
    steps_per_epoch = len(x_train) // args.batch_size
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * steps_per_epoch)
    # A generator of its own, seeded alone: the data order does not depend on what else draws numbers.
    order = torch.Generator().manual_seed(args.seed)

    losses, pool_peaks = [], []
    step = 0
    if rank == 0 and args.log_every:
        conv = f"vkconv ({device_name}, {args.algorithm}, {args.layout})" if context else "torch"
        mixed = " under bfloat16 autocast" if args.dtype == "bf16" else ""
        print(f"training {sum(p.numel() for p in model.parameters())} parameters with {conv} convolutions{mixed}, "
              f"world size {world_size}", flush=True)
    for epoch in range(args.epochs):
        for batch in epoch_batches(len(x_train), args.batch_size, order):
            if args.max_steps and step >= args.max_steps:
                break
            mine = shard(batch, rank, world_size)
            x, y = to_layout(x_train[mine], args.layout), y_train[mine]
            if context is not None:
                context.reset_peak()
            optimizer.zero_grad(set_to_none=True)
            with precision(args.dtype):
                logits = model(x)
                loss = local_loss(logits, y, len(batch), world_size)
            loss.backward()
            # This process's pool (rank 0's when distributed) at its highest during the step's passes.
            peak = context.pool_stats().peak_in_use if context is not None else 0
            if observer is not None:
                observer.after_backward(dict(step=step, model=model, batch=batch, shard=mine,
                                             x_train=x_train, y_train=y_train, rank=rank,
                                             world_size=world_size))
            optimizer.step()
            schedule.step()
            if observer is not None:
                observer.after_step(dict(step=step, model=model, rank=rank, world_size=world_size))

            # The global batch's mean loss: the ranks' sums added up (one number per step).
            total = F.cross_entropy(logits.detach().float(), y, reduction="sum")
            if world_size > 1:
                dist.all_reduce(total)
            mean_loss = total.item() / len(batch)
            losses.append(mean_loss)
            pool_peaks.append(peak)
            if rank == 0 and args.log_every and step % args.log_every == 0:
                pool = f" pool peak {peak} B" if context is not None else ""
                print(f"epoch {epoch} step {step:4d} loss {mean_loss:.6f}{pool}", flush=True)
            step += 1
        if args.max_steps and step >= args.max_steps:
            break

    if rank != 0:
        return None
    plain = model.module if world_size > 1 else model
    accuracy = evaluate(plain, x_test, y_test, args.layout, args.dtype)
    seconds = time.perf_counter() - start
    if args.log_every:
        print(f"test accuracy {accuracy * 100:.2f}% ({len(x_test)} images), {step} steps, "
              f"{seconds:.1f} s", flush=True)
    result = dict(conv=args.conv, algorithm=args.algorithm, layout=args.layout, dtype=args.dtype, device=device_name,
                  world_size=world_size, seed=args.seed, epochs=args.epochs, batch_size=args.batch_size,
                  lr=args.lr, momentum=args.momentum, steps=step, losses=losses, pool_peaks=pool_peaks,
                  test_accuracy=accuracy, seconds=seconds)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return result


def _spawned(rank, args, port, result_path, observer):
    # One of the processes --world-size starts; all on this machine, so the rank is the local rank.
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.world_size)
    try:
        result = train(args, rank, args.world_size, rank, observer)
        if rank == 0:
            # A file rather than a queue: a result larger than a pipe's buffer would block the process
            # on its way out while the parent waits for it to end.
            with open(result_path, "w") as f:
                json.dump(result, f)
    finally:
        dist.destroy_process_group()


def main(argv=None, observer=None):
    """Runs the sample; returns rank 0's result dict (None on other ranks under torchrun)."""
    args = parse_args(argv)
    if launched_by_torchrun():
        world_size = int(os.environ["WORLD_SIZE"])
        if args.world_size not in (1, world_size):
            raise SystemExit(f"--world-size {args.world_size}, but the launcher started {world_size} processes")
        if args.batch_size < world_size:
            raise SystemExit(f"--batch-size {args.batch_size} leaves some of the {world_size} ranks no images")
        dist.init_process_group("gloo")  # MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE from the launcher
        try:
            return train(args, dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", 0)),
                         observer)
        finally:
            dist.destroy_process_group()
    if args.world_size == 1:
        return train(args, observer=observer)

    if args.batch_size < args.world_size:
        raise SystemExit(f"--batch-size {args.batch_size} leaves some of the {args.world_size} ranks no images")
    import tempfile

    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as folder:
        result_path = os.path.join(folder, "result.json")
        # join=True raises if any process fails, so a crash never passes for a result.
        mp.spawn(_spawned, args=(args, free_port(), result_path, observer), nprocs=args.world_size, join=True)
        if not os.path.exists(result_path):
            raise RuntimeError("rank 0 finished without a result")
        with open(result_path) as f:
            return json.load(f)


if __name__ == "__main__":
    main(sys.argv[1:])
