"""Whole models of vkconv.torch layers as training code treats them: copied with copy.deepcopy (EMA copies),
saved and loaded with torch.save / torch.load (checkpoints) and pickled, after they have run and trained,
for every algorithm and both layouts; each copy must compute what the original computes and go on training
as it does.
Run: PYTHONPATH=<build>/python python3 -m unittest tests/python/test_torch_models.py"""

import copy
import io
import pickle
import unittest

import torch

import vkconv
import vkconv.torch as vt
from support import context

torch.backends.cudnn.enabled = False
ALGORITHMS = ["auto", "direct", "im2col", "mec", "implicit-gemm"]


def model(algorithm, layout, ctx, options=None):
    """A stem, a grouped layer and a depthwise one (vkconv's depthwise algorithm where `algorithm` is auto)."""
    torch.manual_seed(5)
    return torch.nn.Sequential(
        vt.Conv2d(3, 6, 3, padding=1, algorithm=algorithm, layout=layout, context=ctx, options=options),
        torch.nn.ReLU(),
        vt.Conv2d(6, 6, 3, stride=2, groups=2, algorithm=algorithm, layout=layout, context=ctx),
        torch.nn.ReLU(),
        vt.Conv2d(6, 6, 3, padding=2, dilation=2, groups=6, bias=False, layout=layout, context=ctx))


def train_step(net, x, target):
    """One SGD step; returns the loss and each parameter's gradient."""
    net.zero_grad()
    loss = ((net(x) - target) ** 2).mean()
    loss.backward()
    grads = [p.grad.clone() for p in net.parameters()]
    with torch.no_grad():
        for p in net.parameters():
            p -= 0.1 * p.grad
    return loss.detach(), grads


class CopiesAndCheckpoints(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(11)
        self.x = torch.randn(2, 3, 11, 9)
        self.target = torch.randn(2, 6, 5, 4)

    def same_training(self, original, copied, what, exact=True):
        """The copy's output and its next training step (loss, gradients, parameters) equal the original's."""
        compare = torch.testing.assert_close if not exact else (lambda a, b, msg: self.assertTrue(
            torch.equal(a, b), msg))
        with torch.no_grad():
            compare(copied(self.x), original(self.x), msg=f"{what}: output")
        loss_a, grads_a = train_step(original, self.x, self.target)
        loss_b, grads_b = train_step(copied, self.x, self.target)
        compare(loss_b, loss_a, msg=f"{what}: loss")
        for index, (a, b) in enumerate(zip(grads_a, grads_b)):
            compare(b, a, msg=f"{what}: gradient {index}")
        for index, (a, b) in enumerate(zip(original.parameters(), copied.parameters())):
            compare(b, a, msg=f"{what}: parameter {index} after the step")

    def trained(self, algorithm, layout, ctx, options=None):
        net = model(algorithm, layout, ctx, options)
        for _ in range(2):
            train_step(net, self.x, self.target)
        self.assertTrue(net[0].last_stats, "the layers have statistics once they have run")
        return net

    def test_deepcopy_shares_the_device_and_trains_alike(self):
        options = vkconv.PassOptions(workspace_limit=1 << 20)
        for layout in ["nchw", "nhwc"]:
            for algorithm in ALGORITHMS:
                what = f"deepcopy {algorithm} {layout}"
                net = self.trained(algorithm, layout, context(), options)
                copied = copy.deepcopy(net)
                self.assertIs(copied[0].vkconv_context, net[0].vkconv_context, what)
                self.assertIs(copied[0].vkconv_options, net[0].vkconv_options, what)
                self.assertEqual(copied[0].last_stats, {}, what)
                for a, b in zip(net.parameters(), copied.parameters()):
                    self.assertIsNot(a, b, what)
                    self.assertTrue(torch.equal(a, b), what)
                # auto may measure again on the copy's first call; the choice is the same context's.
                self.same_training(net, copied, what, exact=algorithm != "auto")
                self.assertTrue(copied[0].last_stats, what)

    def test_torch_save_and_pickle_round_trips(self):
        for layout in ["nchw", "nhwc"]:
            for algorithm in ALGORITHMS:
                net = self.trained(algorithm, layout, None)
                buffer = io.BytesIO()
                torch.save(net, buffer)
                buffer.seek(0)
                loaded = {"torch.load": torch.load(buffer), "pickle": pickle.loads(pickle.dumps(net))}
                for how, copied in loaded.items():
                    what = f"{how} {algorithm} {layout}"
                    self.assertIsNone(copied[0].vkconv_context, what)
                    self.assertEqual(copied[0].vkconv_algorithm, algorithm, what)
                    self.assertEqual(copied[0].vkconv_layout, layout, what)
                    self.assertEqual(copied[0].last_stats, {}, what)
                    reference = copy.deepcopy(net)
                    self.same_training(reference, copied, what, exact=algorithm != "auto")

    def test_a_saved_model_with_its_own_context_and_options_takes_them_back(self):
        options = vkconv.PassOptions(workspace_limit=4096)
        net = self.trained("direct", "nchw", context(), options)
        loaded = pickle.loads(pickle.dumps(net))
        self.assertIsNone(loaded[0].vkconv_options)
        for layer in (loaded[0], loaded[2], loaded[4]):
            self.assertIsNone(layer.vkconv_context)
            layer.vkconv_context = context()
        loaded[0].vkconv_options = options
        self.same_training(net, loaded, "context and options given back")


if __name__ == "__main__":
    unittest.main()
