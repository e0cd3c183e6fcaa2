"""vkconv: 2-D convolution forward and backward passes on any Vulkan device.

The names are the C++ API's (include/vkconv/): list_devices, Context with ContextOptions, ConvProblem,
Tensor (float32 or 16-bit device memory, DataType; upload from and download into NumPy arrays), the passes forward,
backward_data, backward_filter, backward_bias and layer_backward with their Algorithm choice and
PassOptions, their workspace queries, find_algorithms, Recording for many passes in one submission,
conv_transpose, gemm and the double-precision CPU reference (vkconv.reference). Failures raise vkconv.Error,
one subclass per ErrorCategory. vkconv.torch holds the PyTorch layer (a Conv2d that trains).

    import numpy as np, vkconv
    context = vkconv.Context()
    problem = vkconv.ConvProblem(N=1, C=3, H=32, W=32, K=8, R=3, S=3, pad_h=1, pad_w=1)
    x = vkconv.Tensor.from_host(context, np.random.rand(*problem.input_shape()).astype(np.float32))
    w = vkconv.Tensor.from_host(context, np.random.rand(*problem.filter_shape()).astype(np.float32))
    y = vkconv.Tensor(context, problem.output_shape())
    stats = vkconv.forward(context, problem, x, w, None, y, "implicit-gemm")
    print(y.download().shape, stats.gpu_ms, stats.workspace_bytes, context.pool_stats().peak_in_use)
"""

from ._vkconv import *  # noqa: F401,F403 (the extension's names are the package's)
from ._vkconv import __version__, _last_native_seconds, reference  # noqa: F401

__all__ = [name for name in dir() if not name.startswith("_")]
