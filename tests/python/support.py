"""What the Python tests share: one vkconv Context per process, NaN poison for outputs, and the fp32
summation bound every result is checked against (the C++ suite's check_close: |gpu - reference| <=
(L + 2) * 2^-24 * magnitude, where L is the reduction length and magnitude the reference on |operands|)."""

import math

import numpy as np

import vkconv

_context = None


def context():
    """The tests' shared context on the default device (VK_DRIVER_FILES / VKCONV_DEVICE pick it; the
    validation layer is on where VKCONV_VALIDATION=1, and its messages fail the ctest run)."""
    global _context
    if _context is None:
        _context = vkconv.Context()
    return _context


def poisoned(ctx, shape):
    """A device tensor of `shape` filled with NaN, so a value a pass does not write shows up."""
    return vkconv.Tensor.from_host(ctx, np.full(shape, np.nan, dtype=np.float32))


def assert_within_bound(testcase, gpu, reference, magnitude, reduction_length, what):
    gpu = np.asarray(gpu, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    magnitude = np.asarray(magnitude, dtype=np.float64)
    testcase.assertEqual(gpu.shape, reference.shape, what)
    testcase.assertFalse(np.isnan(gpu).any(), f"{what}: NaN left in the output (a value was not written)")
    bound = (reduction_length + 2) * math.ldexp(1.0, -24) * magnitude + 1e-30
    error = np.abs(gpu - reference)
    bad = np.argwhere(~(error <= bound))
    if len(bad):
        first = tuple(bad[0])
        testcase.fail(f"{what}: {len(bad)} values beyond the fp32 summation bound; first at {first}: gpu "
                      f"{gpu[first]!r} reference {reference[first]!r} bound {bound[first]!r}")


def random_array(rng, shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
