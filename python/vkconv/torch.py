"""vkconv's PyTorch layer: convolutions whose forward and backward passes run on a Vulkan device.

    import vkconv.torch as vt
    conv = vt.Conv2d(3, 16, 3, padding=1)          # torch.nn.Conv2d's arguments, parameters and state_dict
    y = conv(x); y.sum().backward()                # x, y and the gradients are CPU tensors

Conv2d is a torch.nn.Conv2d whose convolution is vkconv's, so a model trained with either loads in the
other. The keyword-only arguments pick what vkconv does: `algorithm` (a name such as "auto", "direct",
"im2col", "mec", "depthwise", "implicit-gemm", or a dict with one per pass: "forward", "backward_data",
"backward_filter"), `layout` ("nchw" or "nhwc": the layout the device computes in; tensors keep PyTorch's
shapes either way, and an NHWC layer returns a channels_last tensor), `context` (a vkconv.Context; None:
the process's default context, see default_context) and `options` (vkconv.PassOptions).

`algorithm="auto"` runs the algorithm the context has measured for the layer where it has one (in this
process, or in its find cache file), else the heuristic's, so a first step measures nothing. Set
`vkconv.torch.benchmark = True`, as `torch.backends.cudnn.benchmark`, to have auto measure every algorithm
on a layer's first call instead and keep the fastest (options whose `auto_choice` is set keep theirs).

The autograd Function keeps the device copies of the input and filter from forward to backward (as the
activations a framework keeps for its backward pass), so backward uploads only the output's gradient, and
computes dx, dw and db in one submission (vkconv.layer_backward) when all are needed. Results are
deterministic: the same inputs give bit-identical outputs and gradients on one device.

Tensors may be float32, float16 or bfloat16 (the input, weight and bias all of one type, as PyTorch asks):
a 16-bit layer computes in fp32 and rounds each output once to the tensor's type, and its output and
gradients have the type of what they belong to. Under torch.autocast("cpu", dtype=torch.bfloat16) the layer
casts its operands to bfloat16 as torch.nn.Conv2d does there, so float32 parameters get float32 gradients.
"""

import copy
import threading

import numpy as np
import torch
import torch.nn.functional as functional

import vkconv as _vk

__all__ = ["Conv2d", "conv2d", "convert", "default_context", "set_default_context", "Conv2dFunction"]

_default_context = None
_default_lock = threading.Lock()

# As torch.backends.cudnn.benchmark: True makes Algorithm "auto" measure every algorithm on a layer's first
# call for each input shape (and keep the fastest), where the layer's options leave the choice open.
benchmark = False


def default_context():
    """The process's default vkconv.Context, made on first use (the VKCONV_DEVICE environment variable or
    the best device), unless set_default_context gave one."""
    global _default_context
    with _default_lock:
        if _default_context is None:
            _default_context = _vk.Context()
        return _default_context


def set_default_context(context):
    """Makes `context` (a vkconv.Context, or None to make a new one on next use) the default."""
    global _default_context
    if context is not None and not isinstance(context, _vk.Context):
        raise TypeError("set_default_context takes a vkconv.Context or None")
    with _default_lock:
        _default_context = context


_PASSES = ("forward", "backward_data", "backward_filter")

# The element types vkconv computes in, by PyTorch dtype. The problem's data_type comes from the tensors, so
# everything the engine keeps per problem (plans, measured choices, the find cache) is kept per type too.
_DATA_TYPES = {torch.float32: _vk.DataType.F32, torch.float16: _vk.DataType.F16, torch.bfloat16: _vk.DataType.BF16}
_TORCH_DTYPES = {data_type: dtype for dtype, data_type in _DATA_TYPES.items()}


def _pair(value, name):
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, int) for v in value):
        raise ValueError(f"{name} must be an int or a pair of ints, got {value!r}")
    return value


def _algorithms(algorithm):
    """One vkconv.Algorithm per pass from a name, an Algorithm, or a dict of them by pass."""
    if isinstance(algorithm, dict):
        unknown = set(algorithm) - set(_PASSES)
        if unknown:
            raise ValueError(f"algorithm: unknown pass {sorted(unknown)}; the passes are {list(_PASSES)}")
        return {p: _vk.Algorithm(algorithm.get(p, "auto")) if isinstance(algorithm.get(p, "auto"), str)
                else algorithm[p] for p in _PASSES}
    chosen = _vk.Algorithm(algorithm) if isinstance(algorithm, str) else algorithm
    if not isinstance(chosen, _vk.Algorithm):
        raise TypeError(f"algorithm must be a name, a vkconv.Algorithm or a dict by pass, got {algorithm!r}")
    return {p: chosen for p in _PASSES}


def _options_for(options, algorithm):
    """The options for a pass `algorithm` runs: without a `variant` that is none of its forms, so one options
    value serves a layer whose passes run different algorithms (Auto keeps it: the form applies where it is
    one)."""
    if options is None or not options.variant or _vk.Algorithm(algorithm) == _vk.Algorithm.Auto:
        return options
    passes = (_vk.Pass.Forward, _vk.Pass.BackwardData, _vk.Pass.BackwardFilter)
    if any(options.variant in _vk.algorithm_variants(algorithm, p) for p in passes):
        return options
    trimmed = copy.copy(options)
    trimmed.variant = ""
    return trimmed


def _with_benchmark(options):
    """The options, with AutoChoice.Measure where vkconv.torch.benchmark is on and they leave it open."""
    if not benchmark or (options is not None and options.auto_choice is not None):
        return options
    measured = copy.copy(options) if options is not None else _vk.PassOptions()
    measured.auto_choice = _vk.AutoChoice.Measure
    return measured


class _Config:
    """What one convolution call needs besides its tensors: geometry, algorithms, layout, context, options;
    and the statistics of its last passes."""

    def __init__(self, stride, padding, dilation, groups, algorithm, layout, context, options):
        self.stride = _pair(stride, "stride")
        self.dilation = _pair(dilation, "dilation")
        self.groups = groups
        self.padding = padding
        self.algorithms = _algorithms(algorithm)
        self.layout = _vk.Layout(layout) if isinstance(layout, str) else layout
        self.context = context
        self.options = _with_benchmark(options)
        self.stats = {}

    def device_context(self):
        return self.context if self.context is not None else default_context()

    def problem(self, x, weight, has_bias):
        n, c, h, w = x.shape
        k, _, r, s = weight.shape
        problem = _vk.ConvProblem(N=n, C=c, H=h, W=w, K=k, R=r, S=s, stride_h=self.stride[0],
                                  stride_w=self.stride[1], dilation_h=self.dilation[0],
                                  dilation_w=self.dilation[1], groups=self.groups, layout=self.layout,
                                  has_bias=has_bias)
        problem.data_type = _DATA_TYPES[x.dtype]  # _check_dtypes made weight and bias the same type
        if self.padding == "valid":
            pass
        elif self.padding == "same":
            if self.stride != (1, 1):
                raise ValueError("padding='same' is not supported for strided convolutions (as in PyTorch)")
            # PyTorch's "same" (stride 1): the total pad dilation * (taps - 1), the odd one at the end.
            total_h, total_w = self.dilation[0] * (r - 1), self.dilation[1] * (s - 1)
            problem.set_padding(total_h // 2, total_h - total_h // 2, total_w // 2, total_w - total_w // 2)
        else:
            pad_h, pad_w = _pair(self.padding, "padding")
            problem.set_padding(pad_h, pad_h, pad_w, pad_w)
        problem.validate()
        return problem


def _check_tensor(tensor, name):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"vkconv conv2d: {name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise ValueError(f"vkconv conv2d: {name} must be a CPU tensor (vkconv moves it to its own device), "
                         f"got one on {tensor.device}")


def _check_dtypes(x, weight, bias):
    """TypeError unless the operands are all float32, all float16 or all bfloat16: vkconv runs a problem in
    one element type, and PyTorch's own convolution refuses mixed types too."""
    for tensor, name in ((x, "input"), (weight, "weight"), (bias, "bias")):
        if tensor is not None and tensor.dtype not in _DATA_TYPES:
            raise TypeError(f"vkconv conv2d: {name} must be float32, float16 or bfloat16 (the types vkconv "
                            f"computes in), got {tensor.dtype}")
    for tensor, name in ((weight, "weight"), (bias, "bias")):
        if tensor is not None and tensor.dtype != x.dtype:
            raise TypeError(f"vkconv conv2d: input is {x.dtype} but {name} is {tensor.dtype}; they must have the "
                            "same dtype, as in torch.nn.functional.conv2d (convert one with .to(dtype), or run "
                            "under torch.autocast)")


def _autocast_dtype():
    """The dtype CPU autocast casts convolutions to where it is on, else None. PyTorch 2.4 asks by device
    type; 1.13 (Debian 12) has the CPU-only functions."""
    if hasattr(torch, "get_autocast_dtype"):
        return torch.get_autocast_dtype("cpu") if torch.is_autocast_enabled("cpu") else None
    return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None


def _autocast(x, weight, bias):
    """The operands as CPU autocast gives them to torch.nn.Conv2d: every floating-point one but float64 cast
    to the autocast dtype. The casts are ordinary differentiable .to() calls, so autograd casts the
    gradients back and float32 parameters get float32 gradients (the "master weights" of mixed precision)."""
    dtype = _autocast_dtype()
    if dtype is None:
        return x, weight, bias

    def cast(tensor):
        eligible = tensor is not None and tensor.is_floating_point() and tensor.dtype != torch.float64
        return tensor.to(dtype) if eligible else tensor
    return cast(x), cast(weight), cast(bias)


def _host_array(tensor):
    """A NumPy view of a contiguous CPU tensor that vkconv's transfers take as the tensor's own values:
    float32 and float16 as they are, bfloat16 as its bits in uint16 (NumPy has no bfloat16), so 16-bit
    values move as they are, never through float32."""
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16)
    return tensor.numpy()


def _to_layout(tensor, layout):
    """The tensor's values in the problem's layout as a contiguous CPU array (NCHW/OIHW as PyTorch holds
    them, or NHWC/OHWI), without a copy where they already are."""
    if layout == _vk.Layout.NHWC and tensor.dim() == 4:
        tensor = tensor.permute(0, 2, 3, 1)
    return _host_array(tensor.detach().contiguous())


def _upload(context, tensor, layout, data_type):
    return _vk.Tensor.from_host(context, _to_layout(tensor, layout), dtype=data_type)


def _download(device_tensor, layout):
    """A new CPU tensor in PyTorch's dimension order holding a device tensor of the problem's layout, of the
    device tensor's element type. An NHWC result is a channels_last tensor made as such, not a permuted view:
    autograd forbids in-place changes (an in-place ReLU after the convolution) to a view a custom Function
    returns."""
    dtype = _TORCH_DTYPES[device_tensor.dtype]
    if layout == _vk.Layout.NHWC and len(device_tensor.shape) == 4:
        n, h, w, c = device_tensor.shape
        result = torch.empty((n, c, h, w), dtype=dtype, memory_format=torch.channels_last)
        device_tensor.download(_host_array(result.permute(0, 2, 3, 1)))
        return result
    host = torch.empty(device_tensor.shape, dtype=dtype)
    device_tensor.download(_host_array(host))
    return host


class Conv2dFunction(torch.autograd.Function):
    """y = conv2d(x, weight, bias) on vkconv; backward gives dx, dw and db with vkconv's backward passes."""

    @staticmethod
    def forward(ctx, x, weight, bias, config):
        context = config.device_context()
        problem = config.problem(x, weight, bias is not None)
        data_type = problem.data_type
        device_x = _upload(context, x, config.layout, data_type)
        device_w = _upload(context, weight, config.layout, data_type)
        device_b = _upload(context, bias, config.layout, data_type) if bias is not None else None
        device_y = _vk.Tensor(context, problem.output_shape(), data_type)
        config.stats["forward"] = _vk.forward(context, problem, device_x, device_w, device_b, device_y,
                                              config.algorithms["forward"],
                                              _options_for(config.options, config.algorithms["forward"]))
        # Backward runs on the context forward ran on, with the device copies it needs: x for dw, w for dx.
        # They stay on the device until autograd frees the graph (or a retained graph's last backward).
        ctx.config, ctx.problem, ctx.context = config, problem, context
        ctx.device_x = device_x if ctx.needs_input_grad[1] else None
        ctx.device_w = device_w if ctx.needs_input_grad[0] else None
        ctx.has_bias = bias is not None
        return _download(device_y, config.layout)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_y):
        config, problem, context = ctx.config, ctx.problem, ctx.context
        need_dx, need_dw, need_db = ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.has_bias and ctx.needs_input_grad[2]
        data_type = problem.data_type
        # Autograd hands back the output's own type; a gradient given in another type is rounded to it.
        device_dy = _upload(context, grad_y.to(_TORCH_DTYPES[data_type]), config.layout, data_type)
        device_dx = _vk.Tensor(context, problem.input_shape(), data_type) if need_dx else None
        device_dw = _vk.Tensor(context, problem.filter_shape(), data_type) if need_dw else None
        device_db = _vk.Tensor(context, problem.bias_shape(), data_type) if need_db else None
        algorithms, options = config.algorithms, config.options
        if need_dx and need_dw and algorithms["backward_data"] == algorithms["backward_filter"]:
            config.stats["backward"] = _vk.layer_backward(context, problem, ctx.device_x, ctx.device_w, device_dy,
                                                          device_dx, device_dw, device_db, algorithms["backward_data"],
                                                          _options_for(options, algorithms["backward_data"]))
        else:
            if need_dx:
                config.stats["backward_data"] = _vk.backward_data(
                    context, problem, device_dy, ctx.device_w, device_dx, algorithms["backward_data"],
                    _options_for(options, algorithms["backward_data"]))
            if need_dw:
                config.stats["backward_filter"] = _vk.backward_filter(
                    context, problem, ctx.device_x, device_dy, device_dw, device_db, algorithms["backward_filter"],
                    _options_for(options, algorithms["backward_filter"]))
            elif need_db:
                config.stats["backward_bias"] = _vk.backward_bias(context, problem, device_dy, device_db, options)
        dx = _download(device_dx, config.layout) if need_dx else None
        dw = _download(device_dw, config.layout) if need_dw else None
        db = _download(device_db, config.layout) if need_db else None
        return dx, dw, db, None


def _run(x, weight, bias, config):
    _check_tensor(x, "input")
    _check_tensor(weight, "weight")
    if bias is not None:
        _check_tensor(bias, "bias")
    x, weight, bias = _autocast(x, weight, bias)
    _check_dtypes(x, weight, bias)
    if weight.dim() != 4:
        raise ValueError(f"vkconv conv2d: weight must be 4-D (out, in/groups, kH, kW), got shape {tuple(weight.shape)}")
    unbatched = x.dim() == 3
    if unbatched:
        x = x.unsqueeze(0)
    if x.dim() != 4:
        raise ValueError(f"vkconv conv2d: input must be 3-D or 4-D (N, C, H, W), got shape {tuple(x.shape)}")
    if x.shape[0] == 0:
        # An empty batch has nothing to compute: PyTorch's own convolution gives its empty output and
        # gradients (and checks the shapes), as torch.nn.Conv2d does; in float32, as PyTorch 1.13 has no
        # float16 convolution on the CPU, cast back so that the output and gradients keep their types.
        padding = config.padding if isinstance(config.padding, str) else _pair(config.padding, "padding")
        y = functional.conv2d(x.float(), weight.float(), bias.float() if bias is not None else None,
                              config.stride, padding, config.dilation, config.groups).to(x.dtype)
        return y.squeeze(0) if unbatched else y
    y = Conv2dFunction.apply(x, weight, bias, config)
    return y.squeeze(0) if unbatched else y


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, algorithm="auto",
           layout="nchw", context=None, options=None):
    """torch.nn.functional.conv2d on vkconv (the keyword-only arguments as in Conv2d)."""
    config = _Config(stride, padding, dilation, groups, algorithm, layout, context, options)
    return _run(input, weight, bias, config)


class Conv2d(torch.nn.Conv2d):
    """torch.nn.Conv2d with vkconv's convolution; `last_stats` holds the vkconv statistics of its last
    passes by name ("forward", "backward" for the layer step, or "backward_data", "backward_filter",
    "backward_bias" when they run apart)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None, *, algorithm="auto", layout="nchw",
                 context=None, options=None):
        if dtype is not None and dtype not in _DATA_TYPES:
            raise TypeError(f"vkconv Conv2d's parameters are float32, float16 or bfloat16, not {dtype}")
        if device is not None and torch.device(device).type != "cpu":
            raise ValueError("vkconv Conv2d keeps its parameters on the CPU; `context` picks the Vulkan device")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device, dtype)
        self.vkconv_algorithm = algorithm
        self.vkconv_layout = layout
        self.vkconv_context = context
        self.vkconv_options = options
        _algorithms(algorithm)  # refuses a bad algorithm now rather than at the first call
        _vk.Layout(layout) if isinstance(layout, str) else layout
        self.last_stats = {}

    def _conv_forward(self, input, weight, bias):
        padding = self.padding
        if self.padding_mode != "zeros":
            input = functional.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            padding = (0, 0)
        config = _Config(self.stride, padding, self.dilation, self.groups, self.vkconv_algorithm,
                         self.vkconv_layout, self.vkconv_context, self.vkconv_options)
        config.stats = self.last_stats
        return _run(input, weight, bias, config)

    def extra_repr(self):
        return super().extra_repr() + f", algorithm={self.vkconv_algorithm!r}, layout={self.vkconv_layout!r}"

    def __getstate__(self):
        """What pickle and torch.save store: the module without its device handles. `last_stats` (the last
        passes' statistics) starts empty again; a vkconv.Context is a device and PassOptions may hold a
        device tensor, so a loaded model runs on the default context with default options (give them back
        with `vkconv_context` and `vkconv_options`, as the constructor's `context` and `options`)."""
        state = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__.copy()
        state = dict(state, last_stats={}, vkconv_context=None, vkconv_options=None)
        return state

    def __deepcopy__(self, memo):
        """copy.deepcopy: a copy with its own parameters and buffers that runs on the same context with the
        same options (a device and its settings are shared, not copied), and no statistics yet."""
        for shared in (self.vkconv_context, self.vkconv_options):
            if shared is not None:
                memo[id(shared)] = shared
        copied = self.__class__.__new__(self.__class__)
        memo[id(self)] = copied
        state = dict(self.__dict__, last_stats={})
        copied.__dict__.update({key: copy.deepcopy(value, memo) for key, value in state.items()})
        return copied


_HOOK_DICTS = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
               "_forward_pre_hooks_with_kwargs", "_backward_hooks", "_backward_pre_hooks", "_state_dict_hooks",
               "_state_dict_pre_hooks", "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")


def _converted(conv, algorithm, layout, context, options):
    """A vkconv Conv2d in place of one torch.nn.Conv2d: its parameters (the same Parameter objects, so an
    optimizer holding them goes on working), padding mode, training state and hooks."""
    replacement = Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding,
                         conv.dilation, conv.groups, conv.bias is not None, conv.padding_mode,
                         algorithm=algorithm, layout=layout, context=context, options=options)
    replacement.weight = conv.weight
    replacement.bias = conv.bias
    replacement.train(conv.training)
    for name in _HOOK_DICTS:
        if hasattr(conv, name):
            setattr(replacement, name, getattr(conv, name))
    return replacement


def _replace_convolutions(module, settings):
    if type(module) is torch.nn.Conv2d:
        return _converted(module, **settings)
    for name, child in module.named_children():
        converted = _replace_convolutions(child, settings)
        if converted is not child:
            module._modules[name] = converted
    return module


def convert(module, *, algorithm="auto", layout="nchw", context=None, options=None):
    """The module with every torch.nn.Conv2d in it replaced by a vkconv.torch.Conv2d that keeps its
    parameters (the same Parameter objects), padding mode, training state and hooks, as
    torch.nn.SyncBatchNorm.convert_sync_batchnorm does for batch norms. The keyword arguments are
    Conv2d's: one algorithm, layout, context and options for every converted layer. Layers already vkconv's,
    and subclasses of torch.nn.Conv2d (which may compute something else), are left as they are. Returns the
    module converted in place, or the new layer when `module` is itself a Conv2d. Everything is checked
    before anything changes.

        model = vkconv.torch.convert(torchvision.models.resnet18(), layout="nhwc")"""
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"vkconv.torch.convert takes a torch.nn.Module, got {type(module).__name__}")
    _algorithms(algorithm)
    if isinstance(layout, str):
        _vk.Layout(layout)
    for where, conv in module.named_modules(prefix="model"):
        if type(conv) is torch.nn.Conv2d and (conv.weight.device.type != "cpu" or conv.weight.dtype not in _DATA_TYPES):
            raise TypeError(f"vkconv.torch.convert: {where} holds {conv.weight.dtype} parameters on "
                            f"{conv.weight.device}; vkconv layers take float32, float16 or bfloat16 parameters "
                            "on the CPU (call model.float().cpu() first); nothing was converted")
    return _replace_convolutions(module, dict(algorithm=algorithm, layout=layout, context=context, options=options))
