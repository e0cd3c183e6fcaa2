"""The vkconv Python module against the CPU reference and its own contracts: every pass and algorithm on
odd shapes in both layouts, workspace queries, find, recordings, errors as Python exceptions, and NumPy
arrays read and written in place. Run: PYTHONPATH=<build>/python python3 -m unittest tests/python/test_module.py"""

import itertools
import pickle
import unittest

import numpy as np

import vkconv
from support import assert_within_bound, context, poisoned, random_array

A = vkconv.Algorithm

# Odd shapes: strides, dilations, asymmetric pads, groups, bias; and a depthwise one.
CASES = [
    dict(N=2, C=3, H=7, W=9, K=5, R=3, S=2, pad_h=1, pad_w=0, stride_h=2, stride_w=1, has_bias=True),
    dict(N=1, C=4, H=6, W=5, K=6, R=2, S=3, stride_h=1, stride_w=2, dilation_h=2, dilation_w=1, groups=2),
    dict(N=3, C=2, H=5, W=5, K=3, R=3, S=3, pad_h=1, pad_w=1, pad_h_end=0, pad_w_end=2, has_bias=True),
    dict(N=2, C=4, H=8, W=7, K=8, R=3, S=3, pad_h=1, pad_w=1, groups=4, has_bias=True),  # depthwise, m = 2
]


def algorithms_for(problem):
    """The table's algorithms that run every pass of the problem (the cases run them all)."""
    passes = (vkconv.Pass.Forward, vkconv.Pass.BackwardData, vkconv.Pass.BackwardFilter)
    return [a for a in vkconv.all_algorithms() if all(vkconv.algorithm_applies(a, problem, p) for p in passes)]


class Passes(unittest.TestCase):
    def run_case(self, case, layout, algorithm):
        ctx = context()
        problem = vkconv.ConvProblem(layout=layout, **case)
        rng = np.random.default_rng(7)
        x, w = random_array(rng, problem.input_shape()), random_array(rng, problem.filter_shape())
        b = random_array(rng, problem.bias_shape()) if problem.has_bias else None
        dy = random_array(rng, problem.output_shape())
        tx, tw, tdy = (vkconv.Tensor.from_host(ctx, a) for a in (x, w, dy))
        tb = vkconv.Tensor.from_host(ctx, b) if b is not None else None
        ty, tdx, tdw = (poisoned(ctx, s) for s in (problem.output_shape(), problem.input_shape(), problem.filter_shape()))
        tdb = poisoned(ctx, problem.bias_shape()) if problem.has_bias else None
        what = f"{algorithm} {problem}"

        stats = vkconv.forward(ctx, problem, tx, tw, tb, ty, algorithm)
        self.assertEqual(stats.algorithm, algorithm)
        forms = {vkconv.Algorithm.Mec: ("A", "B"), vkconv.Algorithm.Winograd: ("F(4x4,3x3)", "F(2x2,3x3)")}
        self.assertIn(stats.variant, forms.get(algorithm, ("",)), what)
        self.assertEqual(stats.workspace_bytes, vkconv.forward_workspace_bytes(ctx, problem, algorithm))
        reduction = problem.channels_per_group() * problem.R * problem.S
        abs_b = np.abs(b) if b is not None else None
        assert_within_bound(self, ty.download(), vkconv.reference.forward(problem, x, w, b),
                            vkconv.reference.forward(problem, np.abs(x), np.abs(w), abs_b), reduction + 1,
                            f"forward {what}")

        stats = vkconv.backward_data(ctx, problem, tdy, tw, tdx, algorithm)
        self.assertEqual(stats.workspace_bytes, vkconv.backward_data_workspace_bytes(ctx, problem, algorithm))
        assert_within_bound(self, tdx.download(), vkconv.reference.backward_data(problem, dy, w),
                            vkconv.reference.backward_data(problem, np.abs(dy), np.abs(w)),
                            problem.filters_per_group() * problem.R * problem.S, f"backward-data {what}")

        stats = vkconv.backward_filter(ctx, problem, tx, tdy, tdw, tdb, algorithm)
        self.assertEqual(stats.workspace_bytes, vkconv.backward_filter_workspace_bytes(ctx, problem, algorithm))
        positions = problem.N * problem.P() * problem.Q()
        assert_within_bound(self, tdw.download(), vkconv.reference.backward_filter(problem, x, dy),
                            vkconv.reference.backward_filter(problem, np.abs(x), np.abs(dy)), positions,
                            f"backward-filter {what}")
        if tdb is not None:
            assert_within_bound(self, tdb.download(), vkconv.reference.backward_bias(problem, dy),
                                vkconv.reference.backward_bias(problem, np.abs(dy)), positions,
                                f"backward-bias (with backward-filter) {what}")

    def test_every_algorithm_and_layout_matches_the_reference(self):
        for case in CASES:
            for layout in (vkconv.Layout.NCHW, vkconv.Layout.NHWC):
                problem = vkconv.ConvProblem(layout=layout, **case)
                for algorithm in algorithms_for(problem):
                    with self.subTest(case=case, layout=str(layout), algorithm=str(algorithm)):
                        self.run_case(case, layout, algorithm)

    def test_backward_bias_and_layer_backward(self):
        ctx = context()
        problem = vkconv.ConvProblem(**CASES[0])
        rng = np.random.default_rng(3)
        x, w, dy = (random_array(rng, s) for s in (problem.input_shape(), problem.filter_shape(), problem.output_shape()))
        tx, tw, tdy = (vkconv.Tensor.from_host(ctx, a) for a in (x, w, dy))
        tdb = poisoned(ctx, problem.bias_shape())
        stats = vkconv.backward_bias(ctx, problem, tdy, tdb)
        self.assertEqual(stats.workspace_bytes, vkconv.backward_bias_workspace_bytes(ctx, problem))
        positions = problem.N * problem.P() * problem.Q()
        assert_within_bound(self, tdb.download(), vkconv.reference.backward_bias(problem, dy),
                            vkconv.reference.backward_bias(problem, np.abs(dy)), positions, "backward-bias")

        tdx, tdw, tdb2 = (poisoned(ctx, s) for s in (problem.input_shape(), problem.filter_shape(), problem.bias_shape()))
        step = vkconv.layer_backward(ctx, problem, tx, tw, tdy, tdx, tdw, tdb2, A.Im2col)
        self.assertEqual(step.data_algorithm, A.Im2col)
        self.assertEqual(step.step.workspace_bytes, vkconv.layer_backward_workspace_bytes(ctx, problem, A.Im2col))
        assert_within_bound(self, tdx.download(), vkconv.reference.backward_data(problem, dy, w),
                            vkconv.reference.backward_data(problem, np.abs(dy), np.abs(w)),
                            problem.K * problem.R * problem.S, "layer step dx")
        assert_within_bound(self, tdw.download(), vkconv.reference.backward_filter(problem, x, dy),
                            vkconv.reference.backward_filter(problem, np.abs(x), np.abs(dy)), positions, "layer step dw")
        np.testing.assert_array_equal(tdb2.download(), tdb.download())

    def test_auto_and_find(self):
        ctx = context()
        problem = vkconv.ConvProblem(N=2, C=5, H=9, W=8, K=7, R=3, S=3, pad_h=1, pad_w=1)
        found = vkconv.find_algorithms(ctx, vkconv.Pass.Forward, problem)
        self.assertGreaterEqual(len(found), 4)
        self.assertTrue(all(p.verified and p.deterministic for p in found))
        self.assertEqual([p.ms for p in found], sorted(p.ms for p in found))
        rng = np.random.default_rng(5)
        x, w = random_array(rng, problem.input_shape()), random_array(rng, problem.filter_shape())
        y = poisoned(ctx, problem.output_shape())
        stats = vkconv.forward(ctx, problem, vkconv.Tensor.from_host(ctx, x), vkconv.Tensor.from_host(ctx, w), None,
                               y, "auto")
        self.assertEqual(stats.algorithm, found[0].algorithm)
        assert_within_bound(self, y.download(), vkconv.reference.forward(problem, x, w),
                            vkconv.reference.forward(problem, np.abs(x), np.abs(w)), 5 * 9, "auto forward")

    def test_a_recording_gives_the_blocking_results_bit_for_bit(self):
        ctx = context()
        problem = vkconv.ConvProblem(N=2, C=4, H=6, W=7, K=3, R=3, S=3, pad_h=1, pad_w=1, has_bias=True)
        rng = np.random.default_rng(11)
        arrays = [random_array(rng, s) for s in (problem.input_shape(), problem.filter_shape(), problem.bias_shape(),
                                                 problem.output_shape())]
        tx, tw, tb, tdy = (vkconv.Tensor.from_host(ctx, a) for a in arrays)
        outputs = {}
        for mode in ("blocking", "recorded"):
            ty, tdx, tdw, tdb = (poisoned(ctx, s) for s in (problem.output_shape(), problem.input_shape(),
                                                            problem.filter_shape(), problem.bias_shape()))
            target = ctx if mode == "blocking" else vkconv.Recording(ctx)
            vkconv.forward(target, problem, tx, tw, tb, ty, A.ImplicitGemm)
            vkconv.layer_backward(target, problem, tx, tw, tdy, tdx, tdw, tdb, A.ImplicitGemm)
            if mode == "recorded":
                submission = target.submit()
                submission.wait()
                self.assertTrue(submission.done())
            outputs[mode] = [t.download() for t in (ty, tdx, tdw, tdb)]
        for blocking, recorded in zip(outputs["blocking"], outputs["recorded"]):
            self.assertFalse(np.isnan(blocking).any())
            np.testing.assert_array_equal(blocking, recorded)

    def test_epilogue(self):
        ctx = context()
        problem = vkconv.ConvProblem(N=1, C=3, H=5, W=6, K=4, R=3, S=3, pad_h=1, pad_w=1, has_bias=True)
        rng = np.random.default_rng(2)
        x, w, b, z = (random_array(rng, s) for s in (problem.input_shape(), problem.filter_shape(),
                                                     problem.bias_shape(), problem.output_shape()))
        y = poisoned(ctx, problem.output_shape())
        epilogue = vkconv.Epilogue(alpha=0.5, beta=2.0, residual=vkconv.Tensor.from_host(ctx, z), activation="relu")
        vkconv.forward(ctx, problem, *(vkconv.Tensor.from_host(ctx, a) for a in (x, w, b)), y, A.Direct,
                       epilogue=epilogue)
        plain = pickle.loads(pickle.dumps(problem))
        plain.has_bias = False
        conv = vkconv.reference.forward(plain, x, w)
        expected = np.maximum(0.5 * conv + b.reshape(1, -1, 1, 1) + 2.0 * z, 0)
        magnitude = 0.5 * vkconv.reference.forward(plain, np.abs(x), np.abs(w)) + np.abs(b).reshape(1, -1, 1, 1) + 2 * np.abs(z)
        assert_within_bound(self, y.download(), expected, magnitude, 3 * 9 + 3, "forward with an epilogue")


class Pages(unittest.TestCase):
    def test_tensors_larger_than_a_buffer_run_every_pass(self):
        # A context whose buffers hold 64 KiB: x (7 x 3 x 37 x 37) and y span several, stored in pages.
        options = vkconv.ContextOptions()
        options.max_buffer_bytes = 65536
        ctx = vkconv.Context(options)
        self.assertEqual(ctx.device.max_buffer_bytes, 65536)
        problem = vkconv.ConvProblem(N=7, C=3, H=37, W=37, K=5, R=3, S=3, pad_h=1, pad_w=1, has_bias=True)
        rng = np.random.default_rng(11)
        x, w, b = (random_array(rng, s) for s in (problem.input_shape(), problem.filter_shape(), problem.bias_shape()))
        tx, tw, tb = (vkconv.Tensor.from_host(ctx, a) for a in (x, w, b))
        np.testing.assert_array_equal(tx.download(), x)
        np.testing.assert_array_equal(tx.images(2, 3).download(), x[2:5])
        ty = poisoned(ctx, problem.output_shape())
        for algorithm in (A.Direct, A.Im2col, A.ImplicitGemm):
            vkconv.forward(ctx, problem, tx, tw, tb, ty, algorithm)
            assert_within_bound(self, ty.download(), vkconv.reference.forward(problem, x, w, b),
                                vkconv.reference.forward(problem, np.abs(x), np.abs(w), np.abs(b)),
                                problem.C * 9 + 1, f"forward in pages, {algorithm}")
        self.assertLessEqual(ctx.pool_stats().peak_in_use, 10 * 2**20)
        options.max_buffer_bytes = 100
        with self.assertRaises(vkconv.InvalidArgumentError):
            vkconv.Context(options)


class Arrays(unittest.TestCase):
    def test_download_writes_into_the_callers_array(self):
        ctx = context()
        values = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        tensor = vkconv.Tensor.from_host(ctx, values)
        self.assertEqual(tensor.shape, [2, 3, 4])
        out = np.full((2, 3, 4), np.nan, dtype=np.float32)
        returned = tensor.download(out)
        self.assertIs(returned, out)
        np.testing.assert_array_equal(out, values)
        tensor.upload(values * 2)
        np.testing.assert_array_equal(tensor.download(), values * 2)
        np.testing.assert_array_equal(tensor.images(1, 1).download(), values[1:] * 2)

    def test_bad_arrays_are_refused_before_any_device_work(self):
        ctx = context()
        tensor = vkconv.Tensor.from_host(ctx, np.ones((2, 3), dtype=np.float32))
        before = ctx.pool_stats()
        bad = {
            "dtype": np.ones((2, 3), dtype=np.float64),
            "non-contiguous": np.ones((3, 2), dtype=np.float32).T,
            "shape": np.ones((3, 2), dtype=np.float32),
            "not an array": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]],
        }
        for name, array in bad.items():
            with self.subTest(name):
                with self.assertRaises(vkconv.InvalidArgumentError) as raised:
                    tensor.upload(array)
                self.assertEqual(raised.exception.category, vkconv.ErrorCategory.InvalidArgument)
                self.assertIsInstance(raised.exception, ValueError)
        with self.assertRaises(vkconv.InvalidArgumentError):
            tensor.download(np.ones((2, 3), dtype=np.float32)[:, ::2])
        readonly = np.ones((2, 3), dtype=np.float32)
        readonly.flags.writeable = False
        with self.assertRaises(vkconv.InvalidArgumentError):
            tensor.download(readonly)
        np.testing.assert_array_equal(tensor.download(), np.ones((2, 3), dtype=np.float32))
        self.assertEqual(ctx.pool_stats().in_use, before.in_use)

    def test_sixteen_bit_tensors_narrow_to_nearest_even_and_widen_exactly(self):
        ctx = context()
        rng = np.random.default_rng(5)
        values = (rng.standard_normal((3, 5, 7)) * np.exp2(rng.integers(-26, 17, (3, 5, 7)))).astype(np.float32)
        values.flat[:4] = [65520.0, np.inf, np.nan, 2.0 ** -25]
        bits = values.view(np.uint32).astype(np.uint64)
        bf16 = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)  # nearest even; no NaN but one
        bf16.flat[2] = (values.view(np.uint32).flat[2] >> 16) | 0x40
        with np.errstate(over="ignore"):  # 65520 and up become infinity, as they should
            f16 = values.astype(np.float16)
        expected = {vkconv.DataType.F16: f16.view(np.uint16), vkconv.DataType.BF16: bf16}
        for dtype, want in expected.items():
            with self.subTest(dtype=str(dtype)):
                tensor = vkconv.Tensor.from_host(ctx, values, dtype)
                self.assertEqual(tensor.dtype, dtype)
                self.assertEqual(tensor.bytes(), values.size * 2)
                np.testing.assert_array_equal(tensor.download(np.empty(values.shape, np.uint16)), want)
                widened = (want.astype(np.uint32) << 16).view(np.float32) if dtype == vkconv.DataType.BF16 \
                    else want.view(np.float16).astype(np.float32)
                np.testing.assert_array_equal(tensor.download(), widened)
        half = vkconv.Tensor.from_host(ctx, f16)  # float16 arrays make F16 tensors
        self.assertEqual(half.dtype, vkconv.DataType.F16)
        np.testing.assert_array_equal(half.images(1, 1).download(np.empty((1, 5, 7), np.float16)),
                                      f16[1:2])
        with self.assertRaises(vkconv.InvalidArgumentError):
            vkconv.Tensor.from_host(ctx, f16, vkconv.DataType.BF16)
        with self.assertRaises(vkconv.InvalidArgumentError):
            vkconv.Tensor.from_host(ctx, values).upload(f16)
        problem = vkconv.ConvProblem(N=1, C=2, H=4, W=4, K=3, R=3, S=3)
        x = vkconv.Tensor(ctx, problem.input_shape(), vkconv.DataType.F16)
        w, y = vkconv.Tensor(ctx, problem.filter_shape()), poisoned(ctx, problem.output_shape())
        with self.assertRaises(vkconv.InvalidArgumentError) as raised:  # the problem's type is f32
            vkconv.forward(ctx, problem, x, w, None, y)
        self.assertIn("input tensor is f16", str(raised.exception))

    def test_sixteen_bit_problems_run_within_the_stated_bound(self):
        ctx = context()
        rng = np.random.default_rng(16)
        types = ((vkconv.DataType.F16, 2.0 ** -11), (vkconv.DataType.BF16, 2.0 ** -8))
        algorithms = ("auto", "direct", "im2col", "mec", "implicit-gemm")
        for (dtype, eps), algorithm in itertools.product(types, algorithms):
            problem = vkconv.ConvProblem(N=2, C=3, H=7, W=6, K=4, R=3, S=3, pad_h=1, pad_w=1, data_type=dtype)
            self.assertEqual(pickle.loads(pickle.dumps(problem)).data_type, dtype)
            x = vkconv.Tensor.from_host(ctx, random_array(rng, problem.input_shape()), dtype)
            w = vkconv.Tensor.from_host(ctx, random_array(rng, problem.filter_shape()), dtype)
            y = vkconv.Tensor.from_host(ctx, np.full(problem.output_shape(), np.nan, np.float32), dtype)
            stats = vkconv.forward(ctx, problem, x, w, None, y, algorithm)
            self.assertNotEqual(stats.algorithm, vkconv.Algorithm.Auto)
            xv, wv = x.download(), w.download()  # the 16-bit values the pass read, widened
            exact = vkconv.reference.forward(problem, xv, wv)
            magnitude = vkconv.reference.forward(problem, np.abs(xv), np.abs(wv))
            # The stated bound (docs/algorithms.md, "Element types"), n = 3 * 9 taps.
            e = (27 + 2) * 2.0 ** -24 * magnitude
            bound = (1 + eps) * e + eps * np.abs(exact) + (2.0 ** -25 if dtype == vkconv.DataType.F16 else 0)
            self.assertTrue(np.all(np.abs(y.download() - exact) <= bound), f"{dtype} {algorithm}")

    def test_fp32_weight_gradients_of_a_sixteen_bit_problem(self):
        ctx = context()
        rng = np.random.default_rng(17)
        problem = vkconv.ConvProblem(N=2, C=3, H=7, W=6, K=4, R=3, S=3, pad_h=1, pad_w=1, has_bias=True,
                                     data_type=vkconv.DataType.BF16, fp32_weight_gradients=True)
        self.assertEqual(problem.weight_gradient_type(), vkconv.DataType.F32)
        self.assertTrue(pickle.loads(pickle.dumps(problem)).fp32_weight_gradients)
        x = vkconv.Tensor.from_host(ctx, random_array(rng, problem.input_shape()), vkconv.DataType.BF16)
        dy = vkconv.Tensor.from_host(ctx, random_array(rng, problem.output_shape()), vkconv.DataType.BF16)
        dw, db = poisoned(ctx, problem.filter_shape()), poisoned(ctx, [problem.K])
        vkconv.backward_filter(ctx, problem, x, dy, dw, db, "im2col")
        xv, dyv = x.download(), dy.download()
        plain = pickle.loads(pickle.dumps(problem))
        plain.has_bias = False
        exact = vkconv.reference.backward_filter(plain, xv, dyv)
        magnitude = vkconv.reference.backward_filter(plain, np.abs(xv), np.abs(dyv))
        # fp32 sums stored as they are: the fp32 accumulation's bound alone, n = 2 * 7 * 6 positions.
        self.assertTrue(np.all(np.abs(dw.download() - exact) <= (84 + 2) * 2.0 ** -24 * magnitude))
        np.testing.assert_allclose(db.download(), dyv.sum(axis=(0, 2, 3)), rtol=1e-5, atol=1e-5)

    def test_a_pass_with_mismatched_tensors_writes_nothing(self):
        ctx = context()
        problem = vkconv.ConvProblem(N=1, C=2, H=4, W=4, K=3, R=3, S=3)
        x = vkconv.Tensor.from_host(ctx, np.ones(problem.input_shape(), dtype=np.float32))
        wrong_w = vkconv.Tensor(ctx, [3, 2, 2, 2])
        y = poisoned(ctx, problem.output_shape())
        with self.assertRaises(vkconv.InvalidArgumentError) as raised:
            vkconv.forward(ctx, problem, x, wrong_w, None, y, "direct")
        self.assertIn("filter", str(raised.exception))
        self.assertTrue(np.isnan(y.download()).all())


class Errors(unittest.TestCase):
    def test_problems_are_validated_with_the_field_named(self):
        problem = vkconv.ConvProblem(N=1, C=3, H=5, W=5, K=4, R=3, S=3, groups=2)
        with self.assertRaises(vkconv.InvalidArgumentError) as raised:
            problem.validate()
        self.assertIn("groups", str(raised.exception))
        with self.assertRaises(TypeError):
            vkconv.ConvProblem(N=1, not_a_field=3)
        with self.assertRaises(TypeError):  # a method is no field
            vkconv.ConvProblem(P=3)
        with self.assertRaises(vkconv.InvalidArgumentError):
            vkconv.Algorithm("fft")

    def test_out_of_device_memory_is_an_exception_a_caller_can_handle(self):
        ctx = vkconv.Context(device_memory_limit=1 << 20, pool_block_bytes=1 << 20)
        with self.assertRaises(vkconv.OutOfDeviceMemoryError) as raised:
            vkconv.Tensor(ctx, [1 << 20])
        self.assertEqual(raised.exception.category, vkconv.ErrorCategory.OutOfDeviceMemory)
        self.assertIsInstance(raised.exception, MemoryError)
        small = vkconv.Tensor.from_host(ctx, np.ones(16, dtype=np.float32))  # the context still works
        np.testing.assert_array_equal(small.download(), np.ones(16, dtype=np.float32))

    def test_every_error_is_a_vkconv_error(self):
        for cls in (vkconv.InvalidArgumentError, vkconv.UnsupportedError, vkconv.OutOfDeviceMemoryError,
                    vkconv.DeviceLostError, vkconv.VulkanFailureError):
            self.assertTrue(issubclass(cls, vkconv.Error))
            self.assertTrue(issubclass(cls, RuntimeError))


class Descriptors(unittest.TestCase):
    def test_algorithms_are_the_tables(self):
        table = vkconv.all_algorithms()
        self.assertEqual(set(vkconv.Algorithm.__members__.values()), set(table) | {A.Auto})
        self.assertNotIn(A.Auto, table)
        for algorithm in table:
            self.assertEqual(vkconv.Algorithm(str(algorithm)), algorithm)  # the CLI's name parses back
        depthwise = vkconv.ConvProblem(N=1, C=4, H=5, W=5, K=4, R=3, S=3, groups=4)
        dense = vkconv.ConvProblem(N=1, C=4, H=5, W=5, K=4, R=3, S=3)
        self.assertTrue(vkconv.algorithm_applies(A.Depthwise, depthwise, vkconv.Pass.Forward))
        self.assertFalse(vkconv.algorithm_applies("depthwise", dense, vkconv.Pass.BackwardData))
        self.assertEqual(vkconv.algorithm_variants(A.Mec, vkconv.Pass.Forward), ["A", "B"])
        self.assertEqual(vkconv.algorithm_variants("winograd", "backward-data"), ["F(4x4,3x3)", "F(2x2,3x3)"])
        self.assertEqual(vkconv.algorithm_variants(A.Im2col, vkconv.Pass.Forward), [])

    def test_variant_runs_the_form_asked_for(self):
        ctx = context()
        problem = vkconv.ConvProblem(N=2, C=5, H=9, W=8, K=3, R=3, S=3, pad_h=1, pad_w=1)
        rng = np.random.default_rng(5)
        x, w = random_array(rng, problem.input_shape()), random_array(rng, problem.filter_shape())
        for algorithm, variant in [("mec", "A"), ("mec", "B"), ("winograd", "F(2x2,3x3)"), ("winograd", "F(4x4,3x3)")]:
            y = poisoned(ctx, problem.output_shape())
            stats = vkconv.forward(ctx, problem, vkconv.Tensor.from_host(ctx, x), vkconv.Tensor.from_host(ctx, w),
                                   None, y, algorithm, vkconv.PassOptions(variant=variant))
            self.assertEqual(stats.variant, variant)
            # Winograd's normwise bound (docs/algorithms.md), which MEC's error is far within:
            # gamma_k * (n / 9) * 48^2 * max|w| * max|x|, n = 5 * 9 taps, k = 8 + 33.
            gamma = 41 * 2.0 ** -24 / (1 - 41 * 2.0 ** -24)
            bound = gamma * 5 * 48 ** 2 * np.abs(w).max() * np.abs(x).max()
            error = np.abs(y.download() - vkconv.reference.forward(problem, x, w)).max()
            self.assertLessEqual(error, bound, f"{algorithm} {variant}")
        with self.assertRaisesRegex(vkconv.InvalidArgumentError, "'C' is not a form of mec"):
            vkconv.forward(ctx, problem, vkconv.Tensor.from_host(ctx, x), vkconv.Tensor.from_host(ctx, w), None,
                           poisoned(ctx, problem.output_shape()), "mec", vkconv.PassOptions(variant="C"))

    def test_devices_context_and_pool(self):
        devices = vkconv.list_devices()
        self.assertGreaterEqual(len(devices), 1)
        ctx = context()
        self.assertGreater(ctx.device.subgroup_size, 0)
        self.assertGreater(ctx.device.compute_units, 0)
        with vkconv.PeakScope(ctx) as scope:
            t = vkconv.Tensor(ctx, [1000])
            del t
        self.assertEqual(scope.peak() - scope.baseline(), ctx.pool_stats().rounded(4000))
        limited = vkconv.Context(device_limits="vulkan-minimum")
        self.assertEqual(limited.device.imposed_limits, "Vulkan 1.1 minimum limits")
        self.assertLessEqual(limited.device.max_buffer_bytes, 1 << 30)
        self.assertGreaterEqual(limited.pool_stats().alignment, 256)

    def test_problem_fields_shapes_and_pickling(self):
        problem = vkconv.ConvProblem(N=2, C=3, H=7, W=8, K=4, R=3, S=3, layout="nhwc")
        problem.set_auto_padding("same-upper")
        self.assertEqual((problem.P(), problem.Q()), (7, 8))
        self.assertEqual(problem.output_shape(), [2, 7, 8, 4])
        again = pickle.loads(pickle.dumps(problem))
        self.assertEqual(str(again), str(problem))
        # Enums read and print the tool's names.
        self.assertEqual(vkconv.Algorithm("Implicit-GEMM"), vkconv.Algorithm.ImplicitGemm)
        self.assertEqual(str(vkconv.Algorithm.ImplicitGemm), "implicit-gemm")
        self.assertEqual(str(vkconv.Pass.BackwardFilter), "backward-filter")
        self.assertEqual(str(problem.layout), "nhwc")

    def test_gemm_and_conv_transpose(self):
        ctx = context()
        rng = np.random.default_rng(9)
        a, b = random_array(rng, (13, 7)), random_array(rng, (7, 11))
        c = poisoned(ctx, (13, 11))
        stats = vkconv.gemm(ctx, vkconv.Tensor.from_host(ctx, a), vkconv.Tensor.from_host(ctx, b), c)
        self.assertIsInstance(stats, vkconv.RunStats)
        self.assertIn(stats.variant, vkconv.gemm_configurations(ctx))
        self.assertGreater(stats.dispatches, 0)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        assert_within_bound(self, c.download(), exact, np.abs(a).astype(np.float64) @ np.abs(b), 7, "gemm")

        transpose = vkconv.ConvTransposeProblem(N=1, C=3, H=4, W=5, K=2, R=3, S=3, stride_h=2, stride_w=2)
        x, w = random_array(rng, transpose.input_shape()), random_array(rng, transpose.filter_shape())
        y = poisoned(ctx, transpose.output_shape())
        vkconv.conv_transpose(ctx, transpose, vkconv.Tensor.from_host(ctx, x), vkconv.Tensor.from_host(ctx, w), None, y)
        conv = transpose.convolution()
        assert_within_bound(self, y.download(), vkconv.reference.backward_data(conv, x, w),
                            vkconv.reference.backward_data(conv, np.abs(x), np.abs(w)), 3 * 9, "conv_transpose")

        # In bf16 with a bias: each value rounded once (the fp32 bound, then one rounding to 8 bits).
        transpose.data_type, transpose.has_bias = vkconv.DataType.BF16, True
        self.assertEqual(transpose.convolution().data_type, vkconv.DataType.BF16)
        bf16 = vkconv.DataType.BF16
        tx, tw = vkconv.Tensor.from_host(ctx, x, bf16), vkconv.Tensor.from_host(ctx, w, bf16)
        tb = vkconv.Tensor.from_host(ctx, random_array(rng, [2]), bf16)
        y16 = vkconv.Tensor.from_host(ctx, np.full(transpose.output_shape(), np.nan, np.float32), bf16)
        vkconv.conv_transpose(ctx, transpose, tx, tw, tb, y16)
        xv, wv, bv = tx.download(), tw.download(), tb.download()
        exact = vkconv.reference.backward_data(conv, xv, wv) + bv.reshape(1, 2, 1, 1)
        magnitude = vkconv.reference.backward_data(conv, np.abs(xv), np.abs(wv)) + np.abs(bv).reshape(1, 2, 1, 1)
        bound = (1 + 2.0 ** -8) * (3 * 9 + 3) * 2.0 ** -24 * magnitude + 2.0 ** -8 * np.abs(exact)
        self.assertTrue(np.all(np.abs(y16.download() - exact) <= bound))


if __name__ == "__main__":
    unittest.main()
