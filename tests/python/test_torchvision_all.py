"""Slow (registered with VKCONV_SLOW_TESTS=ON): one model of every torchvision family that has a
convolution, converted with vkconv.torch.convert, with every torch.nn.Conv2d replaced. Randomly
initialised, in eval mode (no dropout), 10 classes; each family's smallest model at 64x64 (inception_v3
needs 80, maxvit_t its 224). About 4 minutes on lavapipe.

Checked: the model's output as close to the float64 result as PyTorch's own fp32 output
(test_torch_models.assert_like_torch), and every convolution of the model, on the operands it met in the
run, at the fp32 summation bound: its output, and the dx and dw (and db) it gave for the gradient it
received, against float64. Whole-network parameter gradients are not compared: a ReLU whose input lies
within rounding of zero goes either way in fp32 (PyTorch's own fp32 run flips some against float64 too),
and in a layer with a few pixels one flip moves a weight gradient by a whole term.
Run: PYTHONPATH=<build>/python python3 -m unittest tests/python/test_torchvision_all.py"""
import copy
import unittest

import torch
import torchvision

import vkconv.torch as vt
from support import assert_within_bound, context
from test_torch_models import assert_like_torch

NO_AUX = {"aux_logits": False, "init_weights": True}
MODELS = [  # name, constructor arguments beyond num_classes, image size
    ("alexnet", {}, 64), ("convnext_tiny", {}, 64), ("densenet121", {}, 64), ("efficientnet_b0", {}, 64),
    ("efficientnet_v2_s", {}, 64), ("googlenet", NO_AUX, 64), ("inception_v3", NO_AUX, 80), ("maxvit_t", {}, 224),
    ("mnasnet0_5", {}, 64), ("mobilenet_v2", {}, 64), ("mobilenet_v3_small", {}, 64), ("regnet_x_400mf", {}, 64),
    ("regnet_y_400mf", {}, 64), ("resnet18", {}, 64), ("resnet50", {}, 64), ("resnext50_32x4d", {}, 64),
    ("shufflenet_v2_x0_5", {}, 64), ("squeezenet1_0", {}, 64), ("swin_t", {}, 64), ("vgg11_bn", {}, 64),
    ("vit_b_32", {"image_size": 64}, 64), ("wide_resnet50_2", {}, 64),
]
NHWC = {"convnext_tiny", "efficientnet_b0", "mobilenet_v3_small", "regnet_y_400mf", "shufflenet_v2_x0_5", "swin_t",
        "vit_b_32"}


def record_convolutions(model):
    """Hooks that keep, for every vkconv convolution of `model`, its input, output, and the gradients of its
    output and input from the backward pass."""
    seen = {}
    for layer in model.modules():  # module backward hooks refuse an in-place operation on their output
        if getattr(layer, "inplace", False):
            layer.inplace = False
    for name, layer in model.named_modules():
        if isinstance(layer, vt.Conv2d):
            def forward_hook(module, inputs, output, name=name):
                seen[name] = {"layer": module, "x": inputs[0].detach().clone(), "y": output.detach().clone()}

            def backward_hook(module, grad_input, grad_output, name=name):
                seen[name]["dx"] = grad_input[0].detach().clone()
                seen[name]["dy"] = grad_output[0].detach().clone()
            layer.register_forward_hook(forward_hook)
            layer.register_full_backward_hook(backward_hook)
    return seen


def check_convolution(testcase, name, record):
    """One layer's output, dx, dw and db against float64 on its own operands, at the fp32 summation bound."""
    layer = record["layer"]
    testcase.assertEqual(layer.padding_mode, "zeros", name)
    args = dict(stride=layer.stride, padding=layer.padding, dilation=layer.dilation, groups=layer.groups)

    def run(x, w, b, dy):
        x, w = x.double().requires_grad_(), w.double().requires_grad_()
        b = b.double().requires_grad_() if b is not None else None
        y = torch.nn.functional.conv2d(x, w, b, **args)
        y.backward(dy.double())
        return y.detach(), x.grad, w.grad, b.grad if b is not None else None

    bias = layer.bias.detach() if layer.bias is not None else None
    exact = run(record["x"], layer.weight.detach(), bias, record["dy"])
    magnitude = run(record["x"].abs(), layer.weight.detach().abs(), bias.abs() if bias is not None else None,
                    record["dy"].abs())
    n, k, p, q = record["y"].shape
    per_group = layer.weight.shape[1] * layer.weight.shape[2] * layer.weight.shape[3]
    got = (record["y"], record["dx"], layer.weight.grad, layer.bias.grad if layer.bias is not None else None)
    lengths = (per_group + 1, k // layer.groups * layer.weight.shape[2] * layer.weight.shape[3], n * p * q, n * p * q)
    for what, ours, reference, size, length in zip(("y", "dx", "dw", "db"), got, exact, magnitude, lengths):
        if reference is not None:
            assert_within_bound(testcase, ours.numpy(), reference.numpy(), size.numpy(), length, f"{name}: {what}")


class EveryFamily(unittest.TestCase):
    def test_every_torchvision_family(self):
        for name, arguments, size in MODELS:
            for layout in ("nchw", "nhwc") if name in NHWC else ("nchw",):
                with self.subTest(model=name, layout=layout):
                    torch.manual_seed(0)
                    reference = getattr(torchvision.models, name)(num_classes=10, **arguments).eval()
                    convs = sum(isinstance(m, torch.nn.Conv2d) for m in reference.modules())
                    converted = vt.convert(copy.deepcopy(reference), layout=layout, context=context())
                    self.assertGreater(convs, 0, name)
                    self.assertEqual(sum(isinstance(m, vt.Conv2d) for m in converted.modules()), convs, name)
                    self.assertFalse(any(type(m) is torch.nn.Conv2d for m in converted.modules()), name)
                    x = torch.rand(2, 3, size, size)
                    exact = copy.deepcopy(reference).double()(x.double()).detach()
                    seen = record_convolutions(converted)
                    ours = converted(x.clone().requires_grad_())
                    assert_like_torch(self, ours.detach(), reference(x).detach(), exact, f"{name} {layout}: output")
                    ours.sum().backward()
                    self.assertEqual(len(seen), convs, name)
                    for layer_name, record in seen.items():
                        check_convolution(self, f"{name} {layout} {layer_name}", record)


if __name__ == "__main__":
    unittest.main()
