#!/usr/bin/env python3
"""ONNX's own conformance cases for Conv and ConvTranspose, run through the vkconv tool.

Reads every backend test case of the ONNX test data (Debian's libonnx-testdata) whose model is one Conv or
ConvTranspose node, with python3-onnx: the attributes, the inputs (and initializers) and the expected
output. The one- and two-dimensional cases run through `vkconv` (1-D as 2-D with H = 1):

- Conv as `vkconv forward`, its pads, auto_pad, strides, dilations and group given as the tool's options;
- ConvTranspose as `vkconv conv-transpose`, its pads, auto_pad, output_padding, output_shape, strides,
  dilations and group given as the tool's options.

Each result is compared with the expected output at ONNX's tolerance (relative 1e-3, absolute 1e-7, as
onnx.backend.test does). Three-dimensional cases are listed as outside the project's scope. Exit code 0
when every case in scope passes, 1 otherwise, also when no case was found (missing test data is a
failure, not a skip: the set-up command installs it).
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as error:
    print(f"onnx_conformance: needs python3-onnx and python3-numpy ({error})", file=sys.stderr)
    sys.exit(1)

RTOL, ATOL = 1e-3, 1e-7


def attributes(node):
    out = {}
    for a in node.attribute:
        value = onnx.helper.get_attribute_value(a)
        out[a.name] = value.decode() if isinstance(value, bytes) else value
    return out


def load_case(directory):
    """The node, its input arrays by name (test inputs and initializers) and the expected output."""
    model = onnx.load(os.path.join(directory, "model.onnx"))
    nodes = list(model.graph.node)
    if len(nodes) != 1 or nodes[0].op_type not in ("Conv", "ConvTranspose"):
        return None
    node = nodes[0]
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    data = os.path.join(directory, "test_data_set_0")
    graph_inputs = [i.name for i in model.graph.input if i.name not in values]
    for index, name in enumerate(graph_inputs):
        values[name] = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f"input_{index}.pb")))
    expected = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "output_0.pb")))
    inputs = [values[name] if name else None for name in node.input]
    while len(inputs) < 3:
        inputs.append(None)
    return node, inputs, expected


def as_2d(x, w, attrs, spatial):
    """1-D cases as 2-D with one row: arrays get an H (or kH) of 1, per-axis attributes a leading 1 or 0."""
    if spatial == 2:
        return x, w, attrs
    x = x[:, :, None, :]
    w = w[:, :, None, :]
    lifted = dict(attrs)
    for key, filler in (("strides", 1), ("dilations", 1), ("output_padding", 0), ("kernel_shape", 1)):
        if key in attrs:
            lifted[key] = [filler] + list(attrs[key])
    if "pads" in attrs:
        begin, end = attrs["pads"]
        lifted["pads"] = [0, begin, 0, end]
    if "output_shape" in attrs:
        lifted["output_shape"] = [1] + list(attrs["output_shape"])
    return x, w, lifted


def run_tool(tool, arguments):
    result = subprocess.run([tool] + arguments, capture_output=True, text=True)
    if result.stderr:  # passed on, so that a validation or sanitizer message reaches the test's output
        print(result.stderr, end="", file=sys.stderr)
    if result.returncode != 0:
        raise RuntimeError(f"vkconv {' '.join(arguments)} exited {result.returncode}: {result.stderr.strip()}")


def pair(values):
    return f"{values[0]},{values[1]}"


def run_node(tool, work, command, x, w, b, attrs, options):
    """One node through `vkconv COMMAND`: its arrays as .npy files, its strides, dilations, group and the
    command's own `options` as the tool's options; returns the output."""
    args = [command, "--input", os.path.join(work, "x.npy"), "--weight", os.path.join(work, "w.npy"),
            "--output", os.path.join(work, "y.npy"), "--stride", pair(attrs.get("strides", [1, 1])),
            "--dilation", pair(attrs.get("dilations", [1, 1])), "--groups", str(attrs.get("group", 1))] + options
    np.save(os.path.join(work, "x.npy"), x.astype(np.float32))
    np.save(os.path.join(work, "w.npy"), w.astype(np.float32))
    if b is not None:
        np.save(os.path.join(work, "b.npy"), b.astype(np.float32))
        args += ["--bias", os.path.join(work, "b.npy")]
    run_tool(tool, args)
    return np.load(os.path.join(work, "y.npy"))


def padding_options(attrs):
    """auto_pad as --auto-pad, else ONNX's pads [top, left, bottom, right] as --padding T,B,L,R."""
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad != "NOTSET":
        return ["--auto-pad", auto_pad]
    if "pads" in attrs:
        top, left, bottom, right = attrs["pads"]
        return ["--padding", f"{top},{bottom},{left},{right}"]
    return []


def run_conv(tool, work, x, w, b, attrs):
    """Conv through `vkconv forward`."""
    return run_node(tool, work, "forward", x, w, b, attrs, padding_options(attrs))


def run_conv_transpose(tool, work, x, w, b, attrs):
    """ConvTranspose through `vkconv conv-transpose`: output_padding, and output_shape as --output-shape
    (with auto_pad choosing which side the odd row goes to) or the pads."""
    options = ["--output-padding", pair(attrs.get("output_padding", [0, 0]))]
    if "output_shape" in attrs:
        options += ["--output-shape", pair(attrs["output_shape"])]
        if attrs.get("auto_pad", "NOTSET") != "NOTSET":
            options += ["--auto-pad", attrs["auto_pad"]]
    else:
        options += padding_options(attrs)
    return run_node(tool, work, "conv-transpose", x, w, b, attrs, options)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vkconv", required=True, help="the vkconv tool")
    parser.add_argument("--data", default="/usr/share/libonnx-testdata/data", help="ONNX test data root")
    args = parser.parse_args()

    directories = sorted(glob.glob(os.path.join(args.data, "*", "*")))
    cases, outside = [], []
    for directory in directories:
        if not os.path.exists(os.path.join(directory, "model.onnx")):
            continue
        loaded = load_case(directory)
        if loaded is None:
            continue
        node, inputs, expected = loaded
        name = os.path.relpath(directory, args.data)
        spatial = inputs[0].ndim - 2
        if spatial not in (1, 2):
            outside.append(name)
            continue
        cases.append((name, node, inputs, expected, spatial))
    if not cases:
        print(f"onnx_conformance: no Conv or ConvTranspose case under {args.data} (install libonnx-testdata)",
              file=sys.stderr)
        return 1

    failed = []
    with tempfile.TemporaryDirectory(prefix="vkconv-onnx-") as work:
        for name, node, (x, w, b), expected, spatial in cases:
            attrs = attributes(node)
            x2, w2, attrs2 = as_2d(x, w, attrs, spatial)
            try:
                run = run_conv if node.op_type == "Conv" else run_conv_transpose
                y = run(args.vkconv, work, x2, w2, b, attrs2)
                if spatial == 1:
                    y = y[:, :, 0, :]
                if y.shape != expected.shape:
                    raise RuntimeError(f"shape {list(y.shape)}, expected {list(expected.shape)}")
                if not np.allclose(y, expected, rtol=RTOL, atol=ATOL):
                    worst = np.max(np.abs(y - expected) / (ATOL + RTOL * np.abs(expected)))
                    raise RuntimeError(f"differs from the expected output: worst error {worst:.3g}x the tolerance")
                print(f"pass  {node.op_type:13s} {spatial}-D  {name}")
            except RuntimeError as error:
                failed.append(name)
                print(f"FAIL  {node.op_type:13s} {spatial}-D  {name}: {error}")
    for name in outside:
        print(f"outside the project's scope (3-D): {name}")
    print(f"ONNX conformance: {len(cases) - len(failed)} of {len(cases)} one- and two-dimensional Conv and "
          f"ConvTranspose cases pass; {len(outside)} three-dimensional cases are outside the project's scope")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
