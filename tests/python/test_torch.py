"""vkconv.torch against PyTorch's own convolution: outputs and the gradients autograd gives (dx, dw, db) on
random odd problems with groups, strides, padding and dilation, for every algorithm and both layouts, at
the fp32 summation bound; padding="same" with even kernels and dilations (the odd pad at the end, as PyTorch
puts it) in every algorithm and layout, and through Conv2d in every padding mode; pads beyond the dilated
kernel; Conv2d as a drop-in for torch.nn.Conv2d (arguments,
state_dict both ways, padding modes, unbatched input); determinism; bad input refused. float16 and bfloat16
layers (forward and every gradient within the stated bound of a float64 reference on the same 16-bit
operands, values moved bit for bit, parameters in 16 bits, save and load) and bfloat16 autocast against
torch.nn.Conv2d's.
Run: PYTHONPATH=<build>/python python3 -m unittest tests/python/test_torch.py"""

import io
import math
import pickle
import unittest

import torch
import torch.nn.functional as F

import vkconv
import vkconv.torch as vt
from support import context

torch.backends.cudnn.enabled = False
ALGORITHMS = ["direct", "im2col", "mec", "implicit-gemm"]


def bound(reduction_length, magnitude):
    return (reduction_length + 2) * math.ldexp(1.0, -24) * magnitude + 1e-30


class Gradients(unittest.TestCase):
    """The exact values are PyTorch's convolution in float64; the magnitudes the same on |operands|. vkconv's
    fp32 result must be within the summation bound of the exact one, as PyTorch's own fp32 result is."""

    def check(self, name, got, exact, magnitude, reduction_length, torch_fp32):
        self.assertFalse(torch.isnan(got).any(), f"{name}: NaN")
        limit = bound(reduction_length, magnitude)
        error = (got.double() - exact).abs()
        worst = (error / limit).max().item()
        self.assertLessEqual(worst, 1.0, f"{name}: error {worst:.3g}x the fp32 bound")
        # PyTorch's own fp32 autograd is within the same bound, so the two differ by at most twice it.
        self.assertLessEqual(((got.double() - torch_fp32.double()).abs() / (2 * limit)).max().item(), 1.0, name)

    def run_problem(self, generator, algorithm, layout, shape, options=None):
        n, c, h, w, k, r, s, stride, padding, dilation, groups = shape
        x = torch.rand(n, c, h, w, generator=generator) * 2 - 1
        weight = torch.rand(k, c // groups, r, s, generator=generator) * 2 - 1
        bias = torch.rand(k, generator=generator) * 2 - 1
        args = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)

        leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
        y = vt.conv2d(*leaves, **args, algorithm=algorithm, layout=layout, options=options)
        dy = torch.rand(y.shape, generator=generator) * 2 - 1
        y.backward(dy)

        torch_leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
        y_torch = F.conv2d(*torch_leaves, **args)
        y_torch.backward(dy)

        exact = [t.double().requires_grad_() for t in (x, weight, bias)]
        y_exact = F.conv2d(*exact, **args)
        y_exact.backward(dy.double())
        magnitude = [t.double().abs().requires_grad_() for t in (x, weight, bias)]
        y_magnitude = F.conv2d(*magnitude, **args)
        y_magnitude.backward(dy.double().abs())

        p, q = y.shape[2], y.shape[3]
        what = f"{algorithm} {layout} {shape}"
        self.check(f"y {what}", y, y_exact.detach(), y_magnitude.detach(), c // groups * r * s + 1, y_torch)
        self.check(f"dx {what}", leaves[0].grad, exact[0].grad, magnitude[0].grad, k // groups * r * s,
                   torch_leaves[0].grad)
        self.check(f"dw {what}", leaves[1].grad, exact[1].grad, magnitude[1].grad, n * p * q, torch_leaves[1].grad)
        self.check(f"db {what}", leaves[2].grad, exact[2].grad, magnitude[2].grad, n * p * q, torch_leaves[2].grad)

    def test_random_problems_every_algorithm_both_layouts(self):
        generator = torch.Generator().manual_seed(1234)
        shapes = []
        for _ in range(4):
            groups = int(torch.randint(1, 3, (1,), generator=generator))
            c = groups * int(torch.randint(1, 4, (1,), generator=generator))
            k = groups * int(torch.randint(1, 4, (1,), generator=generator))
            r, s = (int(v) for v in torch.randint(1, 4, (2,), generator=generator))
            stride = tuple(int(v) for v in torch.randint(1, 3, (2,), generator=generator))
            dilation = tuple(int(v) for v in torch.randint(1, 3, (2,), generator=generator))
            padding = (int(torch.randint(0, r, (1,), generator=generator)), int(torch.randint(0, s, (1,), generator=generator)))
            h = dilation[0] * (r - 1) + 1 + int(torch.randint(0, 6, (1,), generator=generator))
            w = dilation[1] * (s - 1) + 1 + int(torch.randint(0, 6, (1,), generator=generator))
            n = int(torch.randint(1, 4, (1,), generator=generator))
            shapes.append((n, c, h, w, k, r, s, stride, padding, dilation, groups))
        self.run_every_algorithm_and_layout(generator, shapes)

    def run_every_algorithm_and_layout(self, generator, shapes):
        for shape in shapes:
            for layout in ("nchw", "nhwc"):
                for algorithm in ALGORITHMS:
                    with self.subTest(shape=shape, layout=layout, algorithm=algorithm):
                        self.run_problem(generator, algorithm, layout, shape)

    def test_depthwise(self):
        generator = torch.Generator().manual_seed(5)
        for layout in ("nchw", "nhwc"):
            with self.subTest(layout=layout):
                self.run_problem(generator, "depthwise", layout, (2, 4, 7, 6, 8, 3, 3, (2, 1), (1, 1), (1, 2), 4))

    def test_auto_and_a_different_algorithm_per_pass(self):
        generator = torch.Generator().manual_seed(8)
        shape = (2, 3, 9, 8, 4, 3, 3, (1, 1), (1, 1), (1, 1), 1)
        self.run_problem(generator, "auto", "nchw", shape)
        self.run_problem(generator, {"forward": "mec", "backward_data": "direct", "backward_filter": "implicit-gemm"},
                         "nhwc", shape)

    def test_a_variant_applies_to_the_passes_that_have_it(self):
        # One options value for the whole step: MEC's schedule and Winograd's tile apply to forward (and
        # Winograd's backward-data), the other passes run without them.
        generator = torch.Generator().manual_seed(12)
        shape = (2, 5, 9, 8, 4, 3, 3, (1, 1), (1, 1), (1, 1), 1)
        self.run_problem(generator, "mec", "nchw", shape, vkconv.PassOptions(variant="A"))
        self.run_problem(generator, {"forward": "winograd", "backward_data": "winograd", "backward_filter": "im2col"},
                         "nhwc", shape, vkconv.PassOptions(variant="F(2x2,3x3)"))

    def test_same_padding_with_even_kernels_and_dilations(self):
        """'same' with an even kernel, or an even dilated extent, pads an odd total: PyTorch puts the extra row and
        column at the end. Odd totals on both axes, on one, and with dilation; every algorithm, both layouts."""
        generator = torch.Generator().manual_seed(31)
        shapes = [  # n, c, h, w, k, r, s, stride, padding, dilation, groups; totals dilation * (taps - 1)
            (2, 3, 9, 8, 4, 2, 4, (1, 1), "same", (1, 1), 1),  # 1 and 3
            (1, 4, 10, 9, 6, 4, 3, (1, 1), "same", (3, 2), 2),  # 9 and 4
            (2, 2, 7, 11, 3, 3, 2, (1, 1), "same", (2, 5), 1),  # 4 and 5
        ]
        self.run_every_algorithm_and_layout(generator, shapes)

    def test_padding_beyond_the_kernel(self):
        """torch.nn.Conv2d accepts a pad larger than the dilated kernel: the outer rows and columns see only
        padding and give the bias. A 3x3 with pad 5, a 1x1 with pad 2 at stride 2, a grouped dilated one."""
        generator = torch.Generator().manual_seed(47)
        shapes = [  # n, c, h, w, k, r, s, stride, padding, dilation, groups
            (2, 3, 6, 5, 4, 3, 3, (1, 1), (5, 5), (1, 1), 1),
            (1, 4, 5, 7, 3, 1, 1, (2, 2), (2, 2), (1, 1), 1),
            (1, 4, 9, 8, 6, 2, 3, (2, 1), (4, 6), (2, 2), 2),
        ]
        self.run_every_algorithm_and_layout(generator, shapes)

    def test_same_padding_in_every_padding_mode(self):
        """Conv2d with padding='same', even kernels and dilation, in each padding_mode: the output and every
        gradient against torch.nn.Conv2d in float64, within the fp32 bound. In the modes other than zeros PyTorch
        pads the input itself (its backward adds each padded copy's gradient back into dx)."""
        torch.manual_seed(32)
        for mode in ("zeros", "reflect", "replicate", "circular"):
            for kernel, dilation in (((2, 4), (1, 1)), ((4, 2), (3, 1))):
                with self.subTest(mode=mode, kernel=kernel, dilation=dilation):
                    args = dict(padding="same", dilation=dilation, padding_mode=mode)
                    reference = torch.nn.Conv2d(3, 4, kernel, **args)
                    layer = vt.Conv2d(3, 4, kernel, **args, algorithm="implicit-gemm")
                    layer.load_state_dict(reference.state_dict())
                    exact = torch.nn.Conv2d(3, 4, kernel, **args).double()
                    exact.load_state_dict(reference.state_dict())
                    magnitude = torch.nn.Conv2d(3, 4, kernel, **args).double()
                    magnitude.load_state_dict({k: v.abs() for k, v in reference.state_dict().items()})
                    x = torch.rand(2, 3, 10, 9) * 2 - 1
                    dy = torch.rand(2, 4, 10, 9) * 2 - 1
                    results = []
                    for module, inputs, grad in ((layer, x, dy), (reference, x, dy), (exact, x.double(), dy.double()),
                                                 (magnitude, x.double().abs(), dy.double().abs())):
                        leaf = inputs.clone().requires_grad_()
                        module.zero_grad()
                        y = module(leaf)
                        y.backward(grad)
                        results.append((y.detach(), leaf.grad, module.weight.grad.clone(), module.bias.grad.clone()))
                    got, fp32, want, size = results
                    taps = kernel[0] * kernel[1]
                    # dx of an input element adds the gradients of all its padded copies: at most this many
                    # more terms than one copy's K*R*S.
                    copies = 1
                    for extent, step in zip(kernel, dilation):
                        total = step * (extent - 1)
                        begin, end = total // 2, total - total // 2
                        if mode == "replicate":
                            copies *= 1 + max(begin, end)
                        elif mode != "zeros":  # reflect, circular: one copy more per padded side (pad < size)
                            copies *= 1 + (begin > 0) + (end > 0)
                    lengths = (3 * taps + 1, 4 * taps + copies - 1, 2 * 10 * 9, 2 * 10 * 9)
                    for name, index, length in zip(("y", "dx", "dw", "db"), range(4), lengths):
                        self.check(f"{name} {mode} {kernel} {dilation}", got[index], want[index], size[index], length,
                                   fp32[index])


class BackwardPaths(unittest.TestCase):
    """Each subset of gradients autograd can ask for runs its own passes: dx alone (frozen weights), dw and db
    without dx (an input that needs no gradient), db alone; a retained graph runs backward twice."""

    def setUp(self):
        generator = torch.Generator().manual_seed(17)
        self.x = torch.rand(2, 4, 7, 6, generator=generator) - 0.5
        self.w = torch.rand(6, 2, 3, 3, generator=generator) - 0.5
        self.b = torch.rand(6, generator=generator) - 0.5
        self.dy = torch.rand(2, 6, 4, 3, generator=generator) - 0.5
        self.args = dict(stride=(2, 2), padding=(1, 1), groups=2)

    def gradients(self, conv, needs, operands=None, dy=None):
        operands = operands or (self.x, self.w, self.b)
        leaves = [t.clone().requires_grad_(need) for t, need in zip(operands, needs)]
        conv(*leaves, **self.args).backward(self.dy if dy is None else dy)
        return [leaf.grad for leaf in leaves]

    def test_every_subset_of_gradients(self):
        lengths = (6 // 2 * 9, 2 * 4 * 3, 2 * 4 * 3)  # reduction lengths of dx, dw and db
        all_needed = (True, True, True)
        exact = self.gradients(F.conv2d, all_needed, [t.double() for t in (self.x, self.w, self.b)], self.dy.double())
        magnitude = self.gradients(F.conv2d, all_needed, [t.double().abs() for t in (self.x, self.w, self.b)],
                                   self.dy.double().abs())
        for needs in ((True, False, False), (False, True, True), (False, False, True), (True, True, False),
                      (False, True, False)):
            for layout in ("nchw", "nhwc"):
                with self.subTest(needs=needs, layout=layout):
                    got = self.gradients(lambda *a, **k: vt.conv2d(*a, **k, algorithm="im2col", layout=layout), needs)
                    for i, need in enumerate(needs):
                        if not need:
                            self.assertIsNone(got[i])
                            continue
                        self.assertFalse(torch.isnan(got[i]).any())
                        ratio = ((got[i].double() - exact[i]).abs() / bound(lengths[i], magnitude[i])).max().item()
                        self.assertLessEqual(ratio, 1.0, f"gradient {i}")

    def test_a_retained_graph_runs_backward_twice_and_higher_order_is_refused(self):
        x = self.x.clone().requires_grad_()
        w = self.w.clone().requires_grad_()
        y = vt.conv2d(x, w, **self.args)
        y.backward(self.dy, retain_graph=True)
        first = (x.grad.clone(), w.grad.clone())
        y.backward(self.dy)
        self.assertTrue(torch.equal(x.grad, 2 * first[0]))
        self.assertTrue(torch.equal(w.grad, 2 * first[1]))
        # vkconv's backward is not itself differentiable: asking for a second-order gradient is an error,
        # never a silently constant one.
        y = vt.conv2d(x, w, **self.args)
        (grad_x,) = torch.autograd.grad(y.square().sum(), x, create_graph=True)
        with self.assertRaises(RuntimeError):
            grad_x.sum().backward()

    def test_backward_runs_on_the_context_forward_ran_on(self):
        x = self.x.clone().requires_grad_()
        y = vt.conv2d(x, self.w, **self.args)
        vt.set_default_context(None)  # the next default context is another one
        try:
            y.backward(self.dy)
        finally:
            vt.set_default_context(None)
        self.assertIsNotNone(x.grad)


class DropIn(unittest.TestCase):
    def test_state_dicts_load_both_ways_and_give_the_same_layer(self):
        torch.manual_seed(0)
        reference = torch.nn.Conv2d(3, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=1, groups=3, bias=True)
        layer = vt.Conv2d(3, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=1, groups=3, bias=True)
        self.assertEqual(list(layer.state_dict()), list(reference.state_dict()))
        layer.load_state_dict(reference.state_dict())
        x = torch.rand(2, 3, 9, 7)
        self.assertTrue(torch.allclose(layer(x), reference(x), rtol=0, atol=1e-5))
        back = torch.nn.Conv2d(3, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=3)
        back.load_state_dict(layer.state_dict())
        self.assertTrue(torch.equal(back.weight, reference.weight))
        self.assertIn("forward", layer.last_stats)
        self.assertGreaterEqual(layer.last_stats["forward"].peak_bytes, layer.last_stats["forward"].operand_bytes)

    def test_padding_modes_same_padding_and_unbatched_input(self):
        torch.manual_seed(1)
        # PyTorch 1.13's circular padding needs a batch dimension; the unbatched cases use the other modes.
        for x, kwargs in ((torch.rand(3, 8, 7), dict(padding="same", dilation=2)),
                          (torch.rand(3, 8, 7), dict(padding=1, padding_mode="reflect")),
                          (torch.rand(2, 3, 8, 7), dict(padding=(2, 1), padding_mode="circular")),
                          (torch.rand(2, 3, 8, 7), dict(padding="valid", bias=False))):
            with self.subTest(**kwargs):
                reference = torch.nn.Conv2d(3, 4, 3, **kwargs)
                layer = vt.Conv2d(3, 4, 3, **kwargs, algorithm="im2col", layout="nhwc")
                layer.load_state_dict(reference.state_dict())
                got, expected = layer(x), reference(x)
                self.assertEqual(got.shape, expected.shape)
                self.assertTrue(torch.allclose(got, expected, rtol=0, atol=1e-5), kwargs)

    def test_runs_are_bit_identical(self):
        torch.manual_seed(2)
        layer = vt.Conv2d(4, 5, 3, padding=1, algorithm="implicit-gemm")
        x = torch.rand(3, 4, 10, 9, requires_grad=True)
        results = []
        for _ in range(2):
            layer.zero_grad()
            x.grad = None
            y = layer(x)
            y.square().sum().backward()
            results.append([y.detach().clone(), x.grad.clone(), layer.weight.grad.clone(), layer.bias.grad.clone()])
        for first, second in zip(*results):
            self.assertTrue(torch.equal(first, second))

    def test_bad_input_is_refused(self):
        layer = vt.Conv2d(2, 3, 3)
        with self.assertRaises(TypeError):
            layer(torch.rand(1, 2, 5, 5, dtype=torch.float64))
        with self.assertRaises(vkconv.InvalidArgumentError):
            layer(torch.rand(1, 3, 5, 5))  # 3 channels into a layer of 2
        with self.assertRaises(ValueError):
            layer(torch.rand(5, 5))
        with self.assertRaises(vkconv.InvalidArgumentError):
            vt.Conv2d(2, 3, 3, algorithm="fft")
        with self.assertRaises(TypeError):
            vt.Conv2d(2, 3, 3, dtype=torch.float64)
        with self.assertRaises(ValueError):
            vt.conv2d(torch.rand(1, 2, 5, 5), torch.rand(3, 2, 3, 3), stride=2, padding="same")

    def test_an_empty_batch_gives_empty_results(self):
        layer = vt.Conv2d(2, 3, 3, padding=1)
        x = torch.rand(0, 2, 5, 4, requires_grad=True)
        y = layer(x)
        self.assertEqual(tuple(y.shape), (0, 3, 5, 4))
        y.sum().backward()
        self.assertEqual(tuple(x.grad.shape), (0, 2, 5, 4))
        self.assertTrue(torch.equal(layer.weight.grad, torch.zeros_like(layer.weight)))

    def test_an_explicit_context(self):
        layer = vt.Conv2d(1, 2, 3, context=context())
        self.assertEqual(layer(torch.rand(1, 1, 4, 4)).shape, (1, 2, 2, 2))


# A 16-bit pass sums its n terms in fp32 and rounds the sum once to the output's type. Against the exact
# result y of the same (already 16-bit) operands the fp32 sum s is within E = γ_n·Σ|a_i·b_i| (γ_n =
# n·u/(1 − n·u), u = 2^-24), and rounding s moves it by at most u_t·|s| ≤ u_t·(|y| + E), so
#     |ŷ − y| ≤ (1 + u_t)·E + u_t·|y| + η,
# u_t the output type's unit roundoff. η covers what relative bounds miss near zero: half the spacing of the
# output type's subnormals, plus 2^-126 per fp32 operation, as Vulkan lets a shader flush fp32 subnormals.
# The bound is a few units of u_t·|y| at most, so a result that was not computed (zeros, a stale buffer
# from an earlier run on other random values) fails it.
UNIT_ROUNDOFF = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}
SUBNORMAL_HALF_SPACING = {torch.float16: 2.0 ** -25, torch.bfloat16: 2.0 ** -134}
DTYPES16 = (torch.float16, torch.bfloat16)
SHAPES16 = [  # n, c, h, w, k, r, s, stride, padding, dilation, groups
    (2, 3, 7, 9, 5, 3, 3, (2, 2), (1, 1), (1, 1), 1),
    (1, 4, 9, 8, 6, 3, 2, (1, 2), (2, 1), (2, 1), 2),
    (2, 4, 6, 7, 8, 3, 3, (1, 1), (1, 1), (1, 1), 4),  # depthwise, two filters per channel
]


def bound16(dtype, n, exact, magnitude):
    u = 2.0 ** -24
    gamma = n * u / (1 - n * u)
    u_t = UNIT_ROUNDOFF[dtype]
    return (1 + u_t) * gamma * magnitude + u_t * exact.abs() + SUBNORMAL_HALF_SPACING[dtype] + n * 2.0 ** -126


def exact_results(operands, dy, args):
    """conv2d's output and the gradients of its operands (the bias may be None) in float64 on the given
    values, and the same on their absolute values: the exact results and the Σ|terms| of each."""
    results = []
    for transform in (lambda t: t.double(), lambda t: t.double().abs()):
        leaves = [transform(t).requires_grad_() if t is not None else None for t in operands]
        y = F.conv2d(*leaves, **args)
        y.backward(transform(dy))
        results.append([y.detach()] + [leaf.grad for leaf in leaves if leaf is not None])
    return results


def reduction_lengths(shape, output_shape):
    """The number of terms in each of y (with the bias), dx, dw and db."""
    n, c, _, _, k, r, s, _, _, _, groups = shape
    p, q = output_shape[2], output_shape[3]
    return c // groups * r * s + 1, k // groups * r * s, n * p * q, n * p * q


class SixteenBit(unittest.TestCase):
    """float16 and bfloat16 tensors: outputs and gradients in the operands' type, within the bound above of
    PyTorch's convolution in float64 on the same 16-bit operands."""

    def check16(self, name, dtype, got, exact, magnitude, length):
        self.assertEqual(got.dtype, dtype, name)
        got = got.double()
        self.assertFalse(torch.isnan(got).any(), f"{name}: NaN")
        worst = ((got - exact).abs() / bound16(dtype, length, exact, magnitude)).max().item()
        self.assertLessEqual(worst, 1.0, f"{name}: error {worst:.3g}x the 16-bit bound")

    def run16(self, dtype, layout, shape, algorithm="auto", seed=0):
        generator = torch.Generator().manual_seed(seed)
        n, c, h, w, k, r, s, stride, padding, dilation, groups = shape
        args = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)

        def draw(*size):  # drawn in float32 (PyTorch 1.13 draws no float16 on the CPU), rounded to dtype
            return (torch.rand(*size, generator=generator) * 2 - 1).to(dtype)
        operands = [draw(n, c, h, w), draw(k, c // groups, r, s), draw(k)]
        if layout == "nhwc":
            operands[0] = operands[0].contiguous(memory_format=torch.channels_last)
        leaves = [t.clone().requires_grad_() for t in operands]
        y = vt.conv2d(*leaves, **args, algorithm=algorithm, layout=layout)
        if layout == "nhwc":
            self.assertTrue(y.is_contiguous(memory_format=torch.channels_last))
        dy = draw(*y.shape)
        y.backward(dy)
        exact, magnitude = exact_results(operands, dy, args)
        got = [y.detach()] + [leaf.grad for leaf in leaves]
        for name, values, want, size, length in zip(("y", "dx", "dw", "db"), got, exact, magnitude,
                                                    reduction_lengths(shape, y.shape)):
            self.check16(f"{name} {dtype} {layout} {algorithm} {shape}", dtype, values, want, size, length)

    def test_forward_and_every_gradient_within_the_bound(self):
        for dtype in DTYPES16:
            for layout in ("nchw", "nhwc"):
                for seed, shape in enumerate(SHAPES16):
                    with self.subTest(dtype=dtype, layout=layout, shape=shape):
                        self.run16(dtype, layout, shape, seed=seed)
        # The algorithm named rather than chosen.
        self.run16(torch.bfloat16, "nhwc", SHAPES16[0], algorithm="direct", seed=7)

    def test_values_move_bit_for_bit(self):
        """An identity 1x1 convolution (one product x·1, the rest x·0) gives back its input exactly, and dx
        its dy: the largest finite values and float16's subnormals (normal fp32 numbers) included. bfloat16's
        subnormals are fp32 subnormals, which Vulkan lets a shader flush to zero, so they are left out."""
        specials = {torch.float16: [65504.0, -65504.0, 2.0 ** -24, -(2.0 ** -14 - 2.0 ** -24), 2.0 ** -14, 1 / 3],
                    torch.bfloat16: [3.3895313892515355e38, -3.3895313892515355e38, 2.0 ** -126, 1 / 3, -1e-20]}
        generator = torch.Generator().manual_seed(3)
        for dtype in DTYPES16:
            for layout in ("nchw", "nhwc"):
                with self.subTest(dtype=dtype, layout=layout):
                    x = (torch.rand(2, 4, 5, 3, generator=generator) * 2 - 1).to(dtype)
                    x.view(-1)[:len(specials[dtype])] = torch.tensor(specials[dtype]).to(dtype)
                    x.requires_grad_()
                    weight = torch.eye(4).reshape(4, 4, 1, 1).to(dtype).requires_grad_()
                    y = vt.conv2d(x, weight, layout=layout)
                    self.assertTrue(torch.equal(y.detach().view(torch.int16), x.detach().view(torch.int16)))
                    dy = x.detach().flip(0)
                    y.backward(dy)
                    self.assertTrue(torch.equal(x.grad.view(torch.int16), dy.view(torch.int16)))

    def test_modules_in_16_bits(self):
        """Conv2d(dtype=...) makes 16-bit parameters, and .half(), .bfloat16() and .to(dtype) convert a layer:
        the forward pass takes the parameters' type, and gives what conv2d gives on them."""
        torch.manual_seed(4)
        x = torch.rand(2, 3, 7, 9) * 2 - 1
        made = {torch.bfloat16: vt.Conv2d(3, 5, 3, stride=2, padding=1, dtype=torch.bfloat16),
                torch.float16: vt.Conv2d(3, 5, 3, stride=2, padding=1, dtype=torch.float16)}
        converted = {torch.float16: vt.Conv2d(3, 5, 3, layout="nhwc").half(),
                     torch.bfloat16: vt.Conv2d(3, 5, 3, groups=1).bfloat16()}
        for dtype in DTYPES16:
            to_dtype = vt.Conv2d(3, 6, 2, groups=3).to(dtype)
            for layer in (made[dtype], converted[dtype], to_dtype):
                with self.subTest(dtype=dtype, layer=layer):
                    self.assertEqual((layer.weight.dtype, layer.bias.dtype), (dtype, dtype))
                    inputs = x.to(dtype).requires_grad_()
                    y = layer(inputs)
                    self.assertEqual(y.dtype, dtype)
                    y.sum().backward()
                    self.assertEqual((inputs.grad.dtype, layer.weight.grad.dtype, layer.bias.grad.dtype),
                                     (dtype, dtype, dtype))
                    alone = vt.conv2d(x.to(dtype), layer.weight, layer.bias, layer.stride, layer.padding,
                                      layer.dilation, layer.groups, layout=layer.vkconv_layout)
                    self.assertTrue(torch.equal(y, alone))

    def test_mixed_dtypes_are_refused_naming_both(self):
        x, w = torch.rand(1, 2, 5, 5), torch.rand(3, 2, 3, 3)
        for x_type, w_type in ((torch.bfloat16, torch.float32), (torch.float32, torch.float16),
                               (torch.float16, torch.bfloat16)):
            with self.subTest(input=x_type, weight=w_type):
                with self.assertRaisesRegex(TypeError, f"input is {x_type} but weight is {w_type}"):
                    vt.conv2d(x.to(x_type), w.to(w_type))
        with self.assertRaisesRegex(TypeError, "input is torch.bfloat16 but bias is torch.float32"):
            vt.conv2d(x.bfloat16(), w.bfloat16(), torch.rand(3))
        with self.assertRaisesRegex(TypeError, "input is torch.float32 but weight is torch.bfloat16"):
            vt.Conv2d(2, 3, 3).bfloat16()(x)
        with self.assertRaisesRegex(TypeError, "got torch.float64"):
            vt.conv2d(x.double(), w.double())

    def test_save_and_state_dict_in_16_bits(self):
        torch.manual_seed(5)
        layer = vt.Conv2d(3, 4, 3, padding=1, dtype=torch.bfloat16, layout="nhwc")
        state = layer.state_dict()
        self.assertEqual({t.dtype for t in state.values()}, {torch.bfloat16})
        reference = torch.nn.Conv2d(3, 4, 3, padding=1, dtype=torch.bfloat16)
        reference.load_state_dict(state)
        self.assertTrue(torch.equal(reference.weight, layer.weight))
        x = torch.rand(2, 3, 6, 5).bfloat16()
        saved = io.BytesIO()
        torch.save(layer, saved)
        saved.seek(0)
        for copy_ in (torch.load(saved), pickle.loads(pickle.dumps(layer))):
            self.assertEqual(copy_.weight.dtype, torch.bfloat16)
            self.assertTrue(torch.equal(copy_(x), layer(x)))

    def test_an_empty_batch_keeps_the_types(self):
        for dtype in DTYPES16:
            layer = vt.Conv2d(2, 3, 3, padding=1, dtype=dtype)
            x = torch.rand(0, 2, 5, 4).to(dtype).requires_grad_()
            y = layer(x)
            self.assertEqual((tuple(y.shape), y.dtype), ((0, 3, 5, 4), dtype))
            y.sum().backward()
            self.assertEqual((x.grad.dtype, layer.weight.grad.dtype), (dtype, dtype))

    def test_convert_takes_a_16_bit_model(self):
        torch.manual_seed(6)
        model = torch.nn.Sequential(torch.nn.Conv2d(2, 4, 3), torch.nn.ReLU(), torch.nn.Conv2d(4, 3, 1)).bfloat16()
        x = torch.rand(1, 2, 6, 6).bfloat16()
        converted = vt.convert(model)
        self.assertIsInstance(converted[2], vt.Conv2d)
        self.assertEqual(converted(x).dtype, torch.bfloat16)


class Autocast(unittest.TestCase):
    """Under torch.autocast("cpu", dtype=torch.bfloat16) a layer with float32 parameters computes in bfloat16 as
    torch.nn.Conv2d does there: bfloat16 output, float32 gradients for the float32 parameters and input."""

    def test_bfloat16_autocast_as_torch_nn_conv2d(self):
        shape = SHAPES16[0]
        n, c, h, w, k, r, s, stride, padding, dilation, groups = shape
        args = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
        for layout in ("nchw", "nhwc"):
            with self.subTest(layout=layout):
                torch.manual_seed(8)
                reference = torch.nn.Conv2d(c, k, r, **args)
                layer = vt.Conv2d(c, k, r, **args, layout=layout)
                layer.load_state_dict(reference.state_dict())
                x = torch.rand(n, c, h, w) * 2 - 1
                results = []
                for module in (layer, reference):
                    leaf = x.clone().requires_grad_()
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        y = module(leaf)
                    self.assertEqual(y.dtype, torch.bfloat16)
                    y.backward(torch.linspace(-1, 1, y.numel()).reshape(y.shape).bfloat16())
                    results.append((y.detach(), leaf.grad, module.weight.grad, module.bias.grad))
                    self.assertEqual({t.dtype for t in results[-1][1:]}, {torch.float32})
                self.compare_with_exact(results, x, reference, args, shape)

    def compare_with_exact(self, results, x, reference, args, shape):
        """Both layers' results against the exact ones on the operands autocast made (rounded to bfloat16):
        vkconv's within the bound, PyTorch's likewise, so the two within twice it. The gradients are
        bfloat16 results widened to float32, exactly."""
        (y, *_), _ = results
        dy = torch.linspace(-1, 1, y.numel()).reshape(y.shape).bfloat16()
        operands = [t.detach().bfloat16() for t in (x, reference.weight, reference.bias)]
        exact, magnitude = exact_results(operands, dy, args)
        lengths = reduction_lengths(shape, y.shape)
        for name, index in (("y", 0), ("dx", 1), ("dw", 2), ("db", 3)):
            limit = bound16(torch.bfloat16, lengths[index], exact[index], magnitude[index])
            ours, theirs = (r[index].double() for r in results)
            self.assertLessEqual(((ours - exact[index]).abs() / limit).max().item(), 1.0, f"vkconv {name}")
            self.assertLessEqual(((theirs - exact[index]).abs() / limit).max().item(), 1.0, f"torch {name}")
            self.assertLessEqual(((ours - theirs).abs() / (2 * limit)).max().item(), 1.0, name)

    def test_the_functional_form_and_leaving_autocast(self):
        """conv2d under autocast casts too; after it the same layer computes in float32 again, as before."""
        torch.manual_seed(9)
        layer = vt.Conv2d(3, 4, 3)
        x = torch.rand(2, 3, 6, 7)
        before = layer(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            self.assertEqual(layer(x).dtype, torch.bfloat16)
            self.assertEqual(vt.conv2d(x, layer.weight).dtype, torch.bfloat16)
            self.assertEqual(vt.conv2d(x.half(), layer.weight.half()).dtype, torch.bfloat16)
        after = layer(x)
        self.assertEqual(after.dtype, torch.float32)
        self.assertTrue(torch.equal(before, after))

    def test_float16_autocast_where_pytorch_has_it(self):
        try:
            with torch.autocast("cpu", dtype=torch.float16):
                enabled = vt._autocast_dtype() == torch.float16
                y = vt.Conv2d(3, 4, 3)(torch.rand(1, 3, 5, 5)) if enabled else None
        except RuntimeError as error:  # PyTorch 1.13: "AutocastCPU only support Bfloat16"
            self.skipTest(f"PyTorch {torch.__version__} has no float16 autocast on the CPU: {error}")
        if not enabled:
            self.skipTest(f"PyTorch {torch.__version__} turns float16 autocast on the CPU off")
        self.assertEqual(y.dtype, torch.float16)


if __name__ == "__main__":
    unittest.main()
