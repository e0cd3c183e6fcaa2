"""The digits training sample (samples/python/train_digits.py) with vkconv convolutions: it reaches 95% test
accuracy; its loss curve follows PyTorch's own convolutions' from the same parameters and data order; the
vkconv pool's peak is measured on every step, and is the same on every step once the first is done. With
--dtype bf16 (bfloat16 autocast) it trains to within a point of the float32 run's accuracy.

Run (from the repository root; lavapipe picked by VK_DRIVER_FILES):
    VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json PYTHONPATH=build/python \
        python3 -m unittest discover -s tests/python -p test_train_digits.py -v
"""

import json
import os
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "samples", "python"))
import train_digits  # noqa: E402

# How far the vkconv loss curve may be from PyTorch's. At step 0 the parameters are identical and the two
# losses differ only by the fp32 rounding of the forward convolutions (sums of 9 and 72 products, added in
# other orders). From then on each step's gradients differ by the rounding of the backward reductions (up
# to N*P*Q = 2,048 terms per filter value) and the parameters carry those differences along. Measured with
# PyTorch against itself (its convolutions computed in float64 and rounded to float32, or every initial
# parameter moved by one ulp), the curves stay within 1.1e-7 relative over the first 20 steps and 2e-6
# absolute over the whole run: this training damps small differences. The bounds are 100 times that.
EARLY_STEPS = 20
EARLY_RELATIVE = 1e-5
WHOLE_RUN_ABSOLUTE = 2e-4


class PassPeaks:
    """The sample's observer (train_digits.train): after each optimizer step, the pool peak each of the
    step's vkconv passes reported, and the algorithms they ran (each vkconv.torch.Conv2d keeps its last
    passes' statistics)."""

    def __init__(self):
        self.per_step = []
        self.algorithms = set()  # every algorithm the passes ran

    def after_backward(self, info):
        pass

    def after_step(self, info):
        peaks = {}
        for name, module in info["model"].named_modules():
            for pass_name, stats in getattr(module, "last_stats", {}).items():
                # A layer step (dx, dw and db in one submission) reports its whole step's RunStats as .step.
                peaks[f"{name}.{pass_name}"] = getattr(stats, "step", stats).peak_bytes
                if hasattr(stats, "step"):
                    self.algorithms |= {stats.data_algorithm, stats.filter_algorithm}
                else:
                    self.algorithms.add(stats.algorithm)
        self.per_step.append(peaks)


class Precision:
    """The sample's observer for --dtype bf16: the types of the vkconv layers' outputs (through forward hooks
    added after the first backward pass, so from the second step and the evaluation on), and of every
    parameter and its gradient after each backward pass."""

    def __init__(self):
        self.outputs, self.parameters, self.hooked = set(), set(), False

    def after_backward(self, info):
        import vkconv.torch as vt
        if not self.hooked:
            for module in info["model"].modules():
                if isinstance(module, vt.Conv2d):
                    module.register_forward_hook(lambda module, inputs, output: self.outputs.add(output.dtype))
            self.hooked = True
        self.parameters |= {(p.dtype, p.grad.dtype) for p in info["model"].parameters()}

    def after_step(self, info):
        pass


def run(argv, observer=None):
    start = time.perf_counter()
    result = train_digits.main(argv, observer=observer)
    return result, time.perf_counter() - start


class TrainDigits(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder_object = tempfile.TemporaryDirectory()
        cls.json_path = os.path.join(cls.folder_object.name, "vkconv.json")
        common = ["--log-every", "0"]  # the sample's defaults otherwise: the run the sample documents
        cls.pass_peaks = PassPeaks()  # the device: VKCONV_DEVICE, else the best one
        cls.vk, cls.vk_seconds = run(["--conv", "vkconv", "--json", cls.json_path] + common, cls.pass_peaks)
        cls.torch, cls.torch_seconds = run(["--conv", "torch"] + common)
        cls.precision = Precision()
        cls.bf16, cls.bf16_seconds = run(["--conv", "vkconv", "--dtype", "bf16"] + common, cls.precision)

    @classmethod
    def tearDownClass(cls):
        cls.folder_object.cleanup()

    def test_reaches_95_percent(self):
        self.assertEqual(self.vk["conv"], "vkconv")
        self.assertGreaterEqual(self.vk["test_accuracy"], 0.95)
        self.assertGreaterEqual(self.torch["test_accuracy"], 0.95)  # the reference trains too
        sys.stderr.write(f"\n  vkconv: {self.vk['test_accuracy'] * 100:.2f}% in {self.vk['steps']} steps, "
                         f"{self.vk_seconds:.1f} s on {self.vk['device']}; torch: "
                         f"{self.torch['test_accuracy'] * 100:.2f}%, {self.torch_seconds:.1f} s\n")

    def test_bfloat16_autocast_trains_as_well(self):
        """Mixed precision: the convolutions compute in bfloat16, the parameters and their gradients stay
        float32, and the accuracy on the same seed is within a point of the float32 run's."""
        import torch
        self.assertEqual((self.vk["dtype"], self.bf16["dtype"]), ("f32", "bf16"))
        self.assertEqual(self.precision.outputs, {torch.bfloat16})
        self.assertEqual(self.precision.parameters, {(torch.float32, torch.float32)})
        self.assertGreaterEqual(self.bf16["test_accuracy"], 0.95)
        self.assertLessEqual(abs(self.bf16["test_accuracy"] - self.vk["test_accuracy"]), 0.01)
        sys.stderr.write(f"\n  bfloat16 autocast: {self.bf16['test_accuracy'] * 100:.2f}% in "
                         f"{self.bf16_seconds:.1f} s; float32: {self.vk['test_accuracy'] * 100:.2f}% in "
                         f"{self.vk_seconds:.1f} s\n")

    def test_json_holds_the_run(self):
        with open(self.json_path) as f:
            written = json.load(f)
        self.assertEqual(written, json.loads(json.dumps(self.vk)))
        self.assertEqual(len(written["losses"]), written["steps"])
        self.assertEqual(len(written["pool_peaks"]), written["steps"])
        self.assertGreater(written["seconds"], 0)

    def test_loss_curve_follows_torch(self):
        vk, ref = self.vk["losses"], self.torch["losses"]
        self.assertEqual(len(vk), len(ref))
        self.assertGreater(len(vk), EARLY_STEPS)
        # The curve must fall, or matching it would say little.
        self.assertLess(ref[-1], 0.25 * ref[0])
        worst_early = max(abs(a - b) / abs(b) for a, b in zip(vk[:EARLY_STEPS], ref[:EARLY_STEPS]))
        worst = max(abs(a - b) for a, b in zip(vk, ref))
        sys.stderr.write(f"\n  loss curves over {len(vk)} steps: first {EARLY_STEPS} within {worst_early:.3g} "
                         f"relative, all within {worst:.3g} absolute\n")
        for step, (a, b) in enumerate(zip(vk, ref)):
            if step < EARLY_STEPS:
                self.assertLessEqual(abs(a - b), EARLY_RELATIVE * abs(b), f"step {step}: {a} against torch's {b}")
            self.assertLessEqual(abs(a - b), WHOLE_RUN_ABSOLUTE, f"step {step}: {a} against torch's {b}")

    def test_pool_peak_is_steady_after_the_first_step(self):
        peaks, passes = self.vk["pool_peaks"], self.pass_peaks.per_step
        self.assertEqual(len(passes), len(peaks))
        self.assertGreater(len(peaks), 2)
        self.assertEqual(len(passes[0]), 4, passes[0])  # two forward passes, two backward
        # With algorithm "auto" the first step also measures every algorithm on each new problem (find),
        # with memory of its own: that step's peak is at least its passes' own.
        self.assertGreaterEqual(peaks[0], max(passes[0].values()))
        # From then on every step has the same shapes (full batches only) and the same algorithms, and
        # nothing lives between steps: the step's peak is the largest peak of its passes, and the same on
        # every step.
        for step in range(1, len(peaks)):
            self.assertEqual(peaks[step], max(passes[step].values()), f"step {step}: {passes[step]}")
        self.assertGreater(peaks[1], 0)
        self.assertEqual(set(peaks[1:]), {peaks[1]}, f"the peaks vary: {sorted(set(peaks))}")
        sys.stderr.write(f"\n  pool peak: first step {peaks[0]} B, every later step {peaks[1]} B "
                         f"(passes: {passes[1]})\n")

    def test_a_named_algorithm_in_nhwc(self):
        # The --algorithm and --layout options reach the convolutions. A named algorithm measures nothing,
        # so even the first step's peak is its passes' and the same as every other step's.
        steps = 10
        pass_peaks = PassPeaks()
        vk, _ = run(["--conv", "vkconv", "--algorithm", "implicit-gemm", "--layout", "nhwc", "--max-steps", str(steps),
                     "--log-every", "0"], pass_peaks)
        self.assertEqual((vk["algorithm"], vk["layout"], vk["steps"]), ("implicit-gemm", "nhwc", steps))
        for step, (a, b) in enumerate(zip(vk["losses"], self.torch["losses"][:steps])):
            self.assertLessEqual(abs(a - b), EARLY_RELATIVE * abs(b), f"step {step}: {a} against torch's {b}")
        for step, (peak, passes) in enumerate(zip(vk["pool_peaks"], pass_peaks.per_step)):
            self.assertEqual(peak, max(passes.values()), f"step {step}: {passes}")
        self.assertGreater(vk["pool_peaks"][0], 0)
        self.assertEqual(set(vk["pool_peaks"]), {vk["pool_peaks"][0]})
        import vkconv
        self.assertEqual(pass_peaks.algorithms, {vkconv.Algorithm("implicit-gemm")})


if __name__ == "__main__":
    unittest.main()
