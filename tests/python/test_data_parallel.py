"""Data-parallel training of the digits sample (samples/python/train_digits.py) with vkconv convolutions:
two processes joined over gloo on 127.0.0.1, each with its own vkconv Context and the model wrapped in
DistributedDataParallel, run the sample's own training loop for a few steps. At every step, on each rank,
the gradients DDP leaves (averaged over the ranks) must equal those of one model computing the whole
global batch, and after every optimizer step the two replicas' parameters must be identical bit for bit.

Run (from the repository root; lavapipe picked by VK_DRIVER_FILES):
    VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json PYTHONPATH=build/python \
        python3 -m unittest discover -s tests/python -p test_data_parallel.py -v
"""

import glob
import math
import os
import sys
import tempfile
import time
import unittest

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "samples", "python"))
import train_digits  # noqa: E402

# The convolutions under test; "torch" runs the same checks on PyTorch's own, a check of the test itself.
CONV = "vkconv"
WORLD_SIZE = 2
STEPS = 4
BATCH = 32  # 16 images per rank


def reduction_lengths(batch_size):
    """Per parameter of the model (in parameters() order), the terms each gradient value adds up over the
    global batch: every output position of every image for the convolutions' weights and biases
    (N * 8 * 8, padding 1 keeps the 8x8 size), every image for the linear layer."""
    positions = batch_size * 8 * 8
    return [positions, positions, positions, positions, batch_size, batch_size]


def fp32_tolerance(reduction_length, reference):
    """How far two fp32 computations of one gradient may be apart.

    The rank's gradient and the reference add the same terms in different orders: the batch is cut in
    two and each half summed apart (then averaged across the ranks), and vkconv may choose another
    algorithm, with another order inside its reductions, for 16 images than for 32. Recursive fp32
    summation of L terms is off by at most (L + 2) * 2^-24 * sum|terms| from the exact sum; sum|terms| is
    not available here, so the bound is taken per element against the largest gradient value of the
    tensor times 8, a factor for the cancellation in the sum (the cross-entropy gradient's terms have
    both signs) and for the rounding the values carry in from the layers above. It stays far below the
    difference a missing average makes, which the test checks too."""
    return (reduction_length + 2) * math.ldexp(1.0, -24) * 8 * reference.abs().max().item()


class Recorder:
    """The sample's observer (train_digits.train): in each rank's process it records what DDP left and
    what one process computes, into files the parent test reads. It asserts nothing itself: the parent
    does, so a rank that fails to write its files fails the test."""

    def __init__(self, folder, conv, layout):
        self.folder, self.conv, self.layout = folder, conv, layout
        self.reference = None

    def _reference_model(self, module):
        # A plain (non-DDP) model with the same convolutions, on this process's vkconv context, loaded
        # with the replica's parameters at this step.
        if self.reference is None:
            if self.conv == "vkconv":
                factory = train_digits.vkconv_conv_factory("auto", self.layout, None)
            else:
                factory = train_digits.torch_conv
            self.reference = train_digits.build_model(factory)
        self.reference.load_state_dict(module.state_dict())
        return self.reference

    def _gradients(self, module, x, loss_of_logits):
        model = self._reference_model(module)
        model.zero_grad(set_to_none=True)
        loss_of_logits(model(train_digits.to_layout(x, self.layout))).backward()
        return [p.grad.detach().clone() for p in model.parameters()]

    def after_backward(self, info):
        model, rank, world = info["model"], info["rank"], info["world_size"]
        module = model.module  # a DDP model is required: a plain one has no .module
        batch, mine = info["batch"], info["shard"]
        x_train, y_train = info["x_train"], info["y_train"]
        ddp = [p.grad.detach().clone() for p in module.parameters()]
        # The whole global batch on one model: the mean loss, written here rather than taken from the
        # sample, so a wrong scaling in the sample's loss shows.
        whole = self._gradients(module, x_train[batch],
                                lambda logits: F.cross_entropy(logits, y_train[batch]))
        # What this rank's gradients are before any averaging: its own share only (the sample's loss).
        alone = self._gradients(module, x_train[mine],
                                lambda logits: train_digits.local_loss(logits, y_train[mine], len(batch), world))
        torch.save(dict(step=info["step"], rank=rank, batch=batch, shard=mine, ddp=ddp, whole=whole,
                        alone=alone, names=[n for n, _ in module.named_parameters()]),
                   os.path.join(self.folder, f"gradients_rank{rank}_step{info['step']}.pt"))

    def after_step(self, info):
        params = [p.detach().clone() for p in info["model"].module.parameters()]
        torch.save(params, os.path.join(self.folder, f"parameters_rank{info['rank']}_step{info['step']}.pt"))


class DataParallel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder_object = tempfile.TemporaryDirectory()
        cls.folder = cls.folder_object.name
        argv = ["--conv", CONV, "--world-size", str(WORLD_SIZE), "--max-steps", str(STEPS),
                "--batch-size", str(BATCH), "--log-every", "0"]  # the device: VKCONV_DEVICE, else the best one
        start = time.perf_counter()
        # mp.spawn (join=True) raises when a rank exits with an error or a signal, so a crash errors here.
        cls.result = train_digits.main(argv, observer=Recorder(cls.folder, CONV, "nchw"))
        cls.seconds = time.perf_counter() - start

    @classmethod
    def tearDownClass(cls):
        cls.folder_object.cleanup()

    def load(self, kind, rank, step):
        path = os.path.join(self.folder, f"{kind}_rank{rank}_step{step}.pt")
        self.assertTrue(os.path.exists(path), f"rank {rank} wrote no {kind} for step {step}")
        return torch.load(path)

    def test_every_rank_recorded_every_step(self):
        self.assertIsNotNone(self.result, "rank 0 returned no result")
        self.assertEqual(self.result["world_size"], WORLD_SIZE)
        self.assertEqual(self.result["steps"], STEPS)
        self.assertEqual(self.result["conv"], CONV)
        expected = {f"{kind}_rank{r}_step{s}.pt" for kind in ("gradients", "parameters")
                    for r in range(WORLD_SIZE) for s in range(STEPS)}
        self.assertEqual({os.path.basename(p) for p in glob.glob(os.path.join(self.folder, "*.pt"))}, expected)
        sys.stderr.write(f"\n  {WORLD_SIZE} ranks, {STEPS} steps: {self.seconds:.1f} s\n")

    def test_shares_are_different_halves_of_one_global_batch(self):
        # Averaging is only visible when the ranks compute on different images: the shares must be
        # disjoint and together the global batch both ranks were given.
        for step in range(STEPS):
            records = [self.load("gradients", r, step) for r in range(WORLD_SIZE)]
            batch = records[0]["batch"]
            self.assertEqual(len(batch), BATCH)
            for record in records[1:]:
                self.assertTrue(torch.equal(record["batch"], batch), f"step {step}: ranks saw different batches")
            shares = [set(record["shard"].tolist()) for record in records]
            self.assertEqual(sum(len(s) for s in shares), BATCH)
            self.assertEqual(set().union(*shares), set(batch.tolist()))

    def test_gradients_are_the_whole_batch_average(self):
        lengths = reduction_lengths(BATCH)
        worst = {}
        weakest_control = math.inf
        for step in range(STEPS):
            for rank in range(WORLD_SIZE):
                record = self.load("gradients", rank, step)
                # The lengths above are for these parameters, in this order.
                self.assertEqual(record["names"], ["0.weight", "0.bias", "2.weight", "2.bias", "6.weight", "6.bias"])
                missing_average = 0.0  # the largest difference to the reference, as a share of its tolerance
                for name, length, ddp, whole, alone in zip(record["names"], lengths, record["ddp"],
                                                           record["whole"], record["alone"]):
                    what = f"step {step} rank {rank} {name}"
                    self.assertEqual(ddp.shape, whole.shape, what)
                    self.assertTrue(torch.isfinite(ddp).all(), what)
                    self.assertGreater(whole.abs().max().item(), 0.0, f"{what}: a zero gradient checks nothing")
                    tolerance = fp32_tolerance(length, whole)
                    error = (ddp - whole).abs().max().item()
                    self.assertLessEqual(error, tolerance, f"{what}: {error:.3g} from the whole-batch gradient "
                                                           f"(tolerance {tolerance:.3g})")
                    worst[name] = max(worst.get(name, (0.0, 0.0, 0.0)), (error / tolerance, error, tolerance))
                    missing_average = max(missing_average, (alone - whole).abs().max().item() / tolerance)
                # The check must be able to fail: without DDP's average each rank would have its own
                # share's gradient, far outside the tolerance.
                self.assertGreater(missing_average, 100.0, f"step {step} rank {rank}: the unaveraged "
                                   "gradient is too close to the whole-batch one for the test to tell them apart")
                weakest_control = min(weakest_control, missing_average)
        sys.stderr.write("\n" + "".join(f"  {name}: max |ddp - whole| {e:.3g} ({r:.3f} of the tolerance "
                                        f"{t:.3g})\n" for name, (r, e, t) in worst.items()) +
                         f"  without the average, the gradients would be at least {weakest_control:.0f} "
                         "tolerances away\n")

    def test_replicas_stay_identical(self):
        for step in range(STEPS):
            params = [self.load("parameters", r, step) for r in range(WORLD_SIZE)]
            for rank in range(1, WORLD_SIZE):
                for i, (a, b) in enumerate(zip(params[0], params[rank])):
                    self.assertTrue(torch.equal(a, b), f"step {step}: parameter {i} of rank {rank} differs from "
                                    f"rank 0's by up to {(a - b).abs().max().item():.3g}")
        # And the step moved them (identical but frozen parameters would pass the comparison).
        before = self.load("parameters", 0, 0)
        after = self.load("parameters", 0, STEPS - 1)
        self.assertTrue(any(not torch.equal(a, b) for a, b in zip(before, after)))


if __name__ == "__main__":
    unittest.main()
