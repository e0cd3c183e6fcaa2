"""Whole models of vkconv.torch layers as training code treats them: copied with copy.deepcopy (EMA copies),
saved and loaded with torch.save / torch.load (checkpoints) and pickled, after they have run and trained,
for every algorithm and both layouts; each copy must compute what the original computes and go on training
as it does. vkconv.torch.convert on models that nest convolutions in containers, with hooks and training
states, and on torchvision models, against the same models in PyTorch.
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



def assert_like_torch(testcase, got, torch_fp32, exact, what):
    """vkconv's fp32 result is as close to the float64 result as PyTorch's own fp32 result is: through a
    whole network each layer's rounding is bounded alike, but the summation orders differ, so the errors
    are compared (within 4x, plus 2^-20 of the largest value for results that round to near zero)."""
    exact = exact.to(torch.float64)
    scale = exact.abs().max().item()
    ours = (got.to(torch.float64) - exact).abs().max().item()
    theirs = (torch_fp32.to(torch.float64) - exact).abs().max().item()
    testcase.assertFalse(torch.isnan(got).any().item(), f"{what}: NaN")
    testcase.assertLessEqual(ours, 4 * theirs + 2 ** -20 * scale, f"{what}: vkconv's error {ours:.3g}, "
                             f"PyTorch fp32's {theirs:.3g}, largest value {scale:.3g}")


class Nested(torch.nn.Module):
    """Convolutions in a Sequential, a ModuleList, a ModuleDict and a plain attribute."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect"), torch.nn.ReLU())
        self.blocks = torch.nn.ModuleList([torch.nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=4, bias=False),
                                           torch.nn.Conv2d(8, 8, 1)])
        self.heads = torch.nn.ModuleDict({"down": torch.nn.Conv2d(8, 4, 3, stride=2, padding="valid"),
                                          "same": torch.nn.Conv2d(8, 4, 4, padding="same")})
        self.tail = torch.nn.Conv2d(8, 2, 3, padding=1, padding_mode="circular")

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = torch.relu(block(x)) + x
        return self.heads["down"](x).sum() + self.heads["same"](x).sum() + self.tail(x).square().sum()


class Convert(unittest.TestCase):
    def compare(self, torch_model, converted, x, what):
        """Output and every parameter's gradient of the converted model against PyTorch's fp32 and fp64."""
        exact_model = copy.deepcopy(torch_model).double()
        results = []
        for net, inputs in ((converted, x), (torch_model, x), (exact_model, x.double())):
            net.zero_grad()
            out = net(inputs)
            out.sum().backward()
            results.append((out.detach(), [p.grad.detach().clone() for p in net.parameters()]))
        (ours, our_grads), (fp32, fp32_grads), (exact, exact_grads) = results
        assert_like_torch(self, ours, fp32, exact, f"{what}: output")
        for index, (a, b, c) in enumerate(zip(our_grads, fp32_grads, exact_grads)):
            assert_like_torch(self, a, b, c, f"{what}: gradient of parameter {index}")

    def test_nested_containers_hooks_and_training_state(self):
        torch.manual_seed(3)
        original = Nested()
        original.blocks[1].eval()
        calls = []
        original.blocks[0].register_forward_hook(lambda m, i, o: calls.append("hook"))
        original.heads["same"].register_forward_pre_hook(lambda m, i: calls.append("pre-hook"))
        reference = copy.deepcopy(original)
        parameters = list(original.parameters())
        converted = vt.convert(original, algorithm="direct", layout="nhwc", context=context())
        self.assertIs(converted, original)
        convolutions = [m for m in converted.modules() if isinstance(m, torch.nn.Conv2d)]
        self.assertEqual(len(convolutions), 6)
        self.assertTrue(all(type(m) is vt.Conv2d for m in convolutions))
        self.assertTrue(all(a is b for a, b in zip(parameters, converted.parameters())), "the same Parameters")
        self.assertFalse(converted.blocks[1].training)
        self.assertTrue(converted.blocks[0].training)
        self.assertEqual(converted.stem[0].padding_mode, "reflect")
        self.assertEqual(converted.tail.padding_mode, "circular")
        self.assertEqual(converted.heads["same"].padding, "same")
        self.assertEqual(converted.blocks[0].vkconv_layout, "nhwc")
        self.assertEqual(converted.blocks[0].state_dict().keys(), reference.blocks[0].state_dict().keys())
        self.compare(reference, converted, torch.randn(2, 3, 13, 11), "nested")
        self.assertEqual(calls, ["hook", "pre-hook", "hook", "pre-hook", "hook", "pre-hook"])
        self.assertIsInstance(vt.convert(torch.nn.Conv2d(2, 2, 3)), vt.Conv2d)

    def test_bad_input_changes_nothing(self):
        model = torch.nn.Sequential(torch.nn.Conv2d(2, 2, 3), torch.nn.Conv2d(2, 2, 3).double())
        with self.assertRaisesRegex(TypeError, r"model\.1 holds torch.float64"):
            vt.convert(model)
        self.assertIs(type(model[0]), torch.nn.Conv2d, "nothing was converted")
        with self.assertRaisesRegex(ValueError, "frobnicate"):
            vt.convert(torch.nn.Sequential(torch.nn.Conv2d(2, 2, 3)), algorithm="frobnicate")
        with self.assertRaises(TypeError):
            vt.convert("resnet")

    def test_torchvision_models(self):
        import torchvision
        cases = [("resnet18", "nchw", (2, 3, 64, 64)), ("mobilenet_v2", "nhwc", (2, 3, 64, 64)),
                 ("squeezenet1_1", "nhwc", (1, 3, 65, 63))]
        for name, layout, shape in cases:
            torch.manual_seed(7)
            reference = getattr(torchvision.models, name)(num_classes=10)
            reference.eval()
            converted = vt.convert(copy.deepcopy(reference), algorithm="im2col", layout=layout, context=context())
            self.compare(reference, converted, torch.randn(*shape), f"{name} {layout}")


if __name__ == "__main__":
    unittest.main()
