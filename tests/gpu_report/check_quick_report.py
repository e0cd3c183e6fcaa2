#!/usr/bin/env python3
"""The GPU report's smoke test: `scripts/gpu-report --quick` on the device at hand (lavapipe or SwiftShader in
the suite) must measure every part and write them all; the committed H100 report must render with its cuDNN
and roofline columns, which a CPU driver never fills.

Usage: check_quick_report.py BUILD_DIR OUT_DIR"""
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "scripts"))
from gpu_report.render_tables import render, summarize  # noqa: E402

VALIDATION = re.compile(r"VUID-|Validation Error|validation layer")
H100_REPORT = os.path.join(REPO, "docs", "gpu-reports", "2026-11-26-h100.json")
failures = []


def expect(condition, what):
    if not condition:
        failures.append(what)


def check_sections(data):
    sec = data["sections"]
    for name in ("device", "first_call", "overhead", "tune", "gemm", "separable", "layers"):
        expect(sec.get(name, {}).get("status") == "measured", f"{name}: {sec.get(name)}")
    expect(sec["cudnn"]["status"] in ("measured", "absent") and (sec["cudnn"]["status"] == "measured" or
                                                                 sec["cudnn"].get("reason")), "cuDNN: no reason")
    for run in ("without_cache_file", "with_cache_file"):
        steps = [r["step"] for r in sec["first_call"]["runs"][run]]
        expect(steps == ["context", "forward", "backward-data", "backward-filter", "total"], f"first call {run}")
    expect(len(sec["overhead"]["rows"]) == 4, "overhead rows")
    expect(len(sec["gemm"]["rows"]) == 2, "GEMM rows: the cube and cv12's product")
    expect(all(r["status"] == "tuned" for r in sec["tune"]["runs"]), "every tuning run")
    expect(sec["separable"]["result"]["peak_bytes"] > 0, "separable peak")
    entries = sec["layers"]["entries"]
    expect(len(entries) == 2, "cv12 in two layouts")
    for e in entries:
        expect(sorted(e.get("passes", {})) == ["backward-data", "backward-filter", "forward"], f"passes of {e}")
    expect(len(data["summary"]["cells"]) == 6, "a summary cell per pass and layout")
    check_16bit_sections(data)


def check_16bit_sections(data):
    """The quick run's default types are f32 and f16: cv12 in fp16 in both layouts and the sample in fp16."""
    sec = data["sections"]
    expect(data["meta"].get("dtypes") == ["f32", "f16"], f"the report's types: {data['meta'].get('dtypes')}")
    entries = sec["layers"].get("entries_16bit", [])
    expect(sorted((e["layout"], e.get("dtype")) for e in entries) == [("nchw", "f16"), ("nhwc", "f16")],
           "cv12 in fp16 in two layouts")
    for e in entries:
        expect(e["status"] == "measured", f"fp16 {e['layout']}: {e.get('reason')}")
        expect(sorted(e.get("passes", {})) == ["backward-data", "backward-filter", "forward"], f"fp16 passes of {e}")
    f16_sample = sec["separable"].get("by_dtype", {}).get("f16", {})
    expect(f16_sample.get("result", {}).get("peak_bytes", 0) > 0, "the separable sample's fp16 peak")
    expect(len(data["summary"].get("cells_16bit", [])) == 6, "a 16-bit summary cell per pass and layout")


def check_quick_run(build, out):
    if os.path.exists(out):
        shutil.rmtree(out)
    run = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "gpu-report"), "--quick", "--build", build,
                          "--out", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(run.stdout)
    expect(run.returncode == 0, f"gpu-report exited with {run.returncode}")
    with open(os.path.join(out, "report.json")) as f:
        data = json.load(f)
    check_sections(data)
    with open(os.path.join(out, "report.md")) as f:
        text = f.read()
    for heading in ("## Device", "## Summary", "## Layers, batch 1, NCHW", "## Layers, batch 1, NHWC", "## GEMM",
                    "## First call of a fresh process", "## Host overhead", "## Separable-layer sample",
                    "## Tuning", "## cuDNN", "## Layers in fp16, batch 1, NCHW", "## Layers in fp16, batch 1, NHWC"):
        expect(heading in text, f"report.md lacks {heading}")
    for name in sorted(os.listdir(os.path.join(out, "logs"))):
        with open(os.path.join(out, "logs", name)) as f:
            expect(not VALIDATION.search(f.read()), f"a validation message in logs/{name}")


def check_gpu_rendering():
    with open(H100_REPORT) as f:
        data = json.load(f)
    summary = summarize(data)
    expect(len(summary["cells"]) == 6, "H100: a cell per pass and layout")
    expect(all(c["geomean_ratio"] and c["geomean_roofline"] for c in summary["cells"]), "H100: ratios, rooflines")
    text = render(data)
    expect("Worst ratio: cv8 backward-filter NHWC" in text, "H100: the worst ratio")
    expect("| cv4 | fwd | implicit-gemm | 8 | 19078 | 28.5% | 6.86 | 1.17 |" in text, "H100: the cv4 row")


def main():
    build, out = sys.argv[1], sys.argv[2]
    check_gpu_rendering()
    check_quick_run(build, out)
    for what in failures:
        print("FAILED: " + what)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
