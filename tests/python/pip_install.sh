#!/usr/bin/env bash
# `pip install --no-build-isolation` of the source tree into a fresh virtual environment that sees the
# system's packages (numpy, torch), then a forward pass from the installed package, run from a folder
# outside the source tree so nothing is imported from it. Usage: pip_install.sh PYTHON SOURCE_DIR
set -euo pipefail
python=$1 source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --no-build-isolation --no-deps --no-index "$source"
cd "$work"
env -u PYTHONPATH "$work/venv/bin/python" - <<'PY'
import numpy as np
import vkconv
assert vkconv.__file__.startswith(__import__("sys").prefix), vkconv.__file__  # the installed copy
import vkconv.torch  # the PyTorch layer installed with it
context = vkconv.Context()
problem = vkconv.ConvProblem(N=1, C=2, H=5, W=5, K=3, R=3, S=3, pad_h=1, pad_w=1)
x = np.ones(problem.input_shape(), dtype=np.float32)
w = np.ones(problem.filter_shape(), dtype=np.float32)
y = vkconv.Tensor(context, problem.output_shape())
vkconv.forward(context, problem, vkconv.Tensor.from_host(context, x), vkconv.Tensor.from_host(context, w), None, y)
# An all-ones 3x3 filter over two channels of ones: 18 inside, 12 on edges, 8 in corners.
expected = vkconv.reference.forward(problem, x, w)
assert np.array_equal(y.download(), expected.astype(np.float32)), y.download()
print("installed vkconv", vkconv.__version__, "from", vkconv.__file__, "ran on", context.device.name)
PY
