"""The report's tables, section by section (render.py holds the device, the summary and the helpers)."""
import json

from .render import absent, layer_rows, number, percent, render_device, render_summary, summarize
from .sections import DTYPE_NAMES, DTYPES, layer_entries

PASS_SHORT = {"forward": "fwd", "backward-data": "bwd-data", "backward-filter": "bwd-filter"}


def table(columns, rows):
    """A markdown table's lines: columns as "name" (left-aligned) or "name:" (right-aligned)."""
    head = "| " + " | ".join(c.rstrip(":") for c in columns) + " |"
    rule = "|" + "|".join("---:" if c.endswith(":") else "---" for c in columns) + "|"
    return [head, rule] + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def render_layers(data, layout):
    sec = data["sections"].get("layers")
    title = f"## Layers, batch {sec['batch'] if sec and 'batch' in sec else '?'}, {layout.upper()}"
    if not sec or "entries" not in sec:
        return title + "\n\n" + absent(sec)
    if "f32" not in sec.get("dtypes", ["f32"]):
        return title + "\n\n_Not measured: fp32 was not asked for (--dtype)._\n"
    cudnn = data["sections"].get("cudnn", {})
    lines = [title, "", f"vkconv: the fastest algorithm per pass (median of {sec['repeat']} GPU-timestamp runs, "
             "each result checked first), then the others. cuDNN: " +
             (f"PyTorch {cudnn['torch']}, cuDNN {cudnn['cudnn']}, fp32, TF32 off, benchmark on, median of "
              f"{cudnn['repeat']} CUDA-event runs." if "rows" in cudnn else
              "absent, " + cudnn.get("reason", "not measured") + "."), "",
             "| layer | pass | best | ms | GFLOP/s | roofline | cuDNN ms | vkconv/cuDNN | others (ms) |",
             "|---|---|---|---:|---:|---:|---:|---:|---|"]
    rows = [r for r in layer_rows(data) if r["layout"] == layout]
    for r in rows:
        others = ", ".join(f"{a} {number(ms)}" for a, ms in r["others"])
        lines.append(f"| {r['layer']} | {PASS_SHORT[r['pass']]} | {r['algorithm']} | {number(r['ms'])} | "
                     f"{r['gflops']:.0f} | {percent(r.get('roofline'))} | {number(r.get('cudnn_ms'))} | "
                     f"{number(r.get('ratio'))} | {others} |")
    for e in sec["entries"]:
        if e["layout"] == layout and e["status"] != "measured":
            lines.append(f"| {e['layer']} | all | {e['status']}: {e['reason']} | | | | | | |")
    return "\n".join(lines) + "\n"


def cudnn_intro(cudnn, dtype):
    """What the cuDNN columns of a 16-bit layer table hold, or why they are empty."""
    name = DTYPE_NAMES[dtype]
    if "rows" not in cudnn:
        return "absent, " + cudnn.get("reason", "not measured") + "."
    if dtype not in cudnn.get("dtypes", ["f32"]):
        return f"not run in {name}."
    return (f"PyTorch {cudnn['torch']}, cuDNN {cudnn['cudnn']}, {name} tensors with fp32 accumulation, benchmark "
            f"on, median of {cudnn['repeat']} CUDA-event runs; over fp32: its time over its own fp32 time.")


def render_layers_16bit(data, dtype, layout):
    """One 16-bit type's layer table: vkconv's best per pass, its time over fp32's, cuDNN in the same type."""
    sec, name = data["sections"].get("layers"), DTYPE_NAMES[dtype]
    title = f"## Layers in {name}, batch {sec['batch'] if sec and 'batch' in sec else '?'}, {layout.upper()}"
    if not sec or "entries" not in sec:
        return title + "\n\n" + absent(sec)
    lines = [title, "", f"vkconv in {name}: the fastest algorithm per pass (median of {sec['repeat']} GPU-timestamp "
             "runs, each result checked first), then the others; over fp32: its time over the fastest fp32 time "
             "of the same pass. cuDNN: " + cudnn_intro(data["sections"].get("cudnn", {}), dtype), ""]
    rows = [r for r in layer_rows(data, dtype) if r["layout"] == layout]
    cells = [[r["layer"], PASS_SHORT[r["pass"]], r["algorithm"], number(r["ms"]), f"{r['gflops']:.0f}",
              number(r.get("over_f32")), number(r.get("cudnn_ms")), number(r.get("ratio")),
              number(r.get("cudnn_over_f32")), ", ".join(f"{a} {number(ms)}" for a, ms in r["others"])]
             for r in rows]
    cells += [[e["layer"], "all", f"{e['status']}: {e['reason']}"] + [""] * 7
              for e in layer_entries(sec, dtype) if e["layout"] == layout and e["status"] != "measured"]
    if not cells:
        return "\n".join(lines + [f"_Not measured in {layout.upper()}._"]) + "\n"
    lines += table(["layer", "pass", "best", "ms:", "GFLOP/s:", "over fp32:", "cuDNN ms:", "vkconv/cuDNN:",
                    "cuDNN over fp32:", "others (ms)"], cells)
    return "\n".join(lines) + "\n"


def report_dtypes(data):
    """The element types a report asked for: those of its command, else of its layers, else fp32 alone."""
    return (data.get("meta", {}).get("dtypes") or data["sections"].get("layers", {}).get("dtypes") or ["f32"])


def render_gemm(data):
    sec = data["sections"].get("gemm")
    if not sec or "rows" not in sec:
        return "## GEMM\n\n" + absent(sec)
    peaks = data["sections"]["device"].get("peaks")
    cublas = {(r["M"], r["N"], r["K"]): r for r in data["sections"].get("cudnn", {}).get("rows", [])
              if r.get("kind") == "gemm" and r.get("dtype", "f32") == "f32"}
    lines = ["## GEMM", "", "C = A·B in fp32, A and B row-major; the layers' shapes are one image's im2col product "
             "(M = P·Q, N = K, K = C·R·S).", "",
             "| shape | configuration | ms | GFLOP/s | of fp32 peak | cuBLAS GFLOP/s | vkconv/cuBLAS |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in sec["rows"]:
        theirs = cublas.get((r["M"], r["N"], r["K"]))
        peer = f"{theirs['gflops']:.0f} | {number(r['gpu_ms'] / theirs['ms'])}" if theirs else "— | —"
        share = percent(r["gflops"] / peaks["gflops"] if peaks else None)
        lines.append(f"| {r['shape']} | {r['configuration']} | {number(r['gpu_ms'])} | {r['gflops']:.0f} | {share} | "
                     f"{peer} |")
    return "\n".join(lines) + "\n"


def render_first_call(data):
    sec = data["sections"].get("first_call")
    if not sec or "runs" not in sec:
        return "## First call of a fresh process\n\n" + absent(sec)
    lines = ["## First call of a fresh process", "", f"Each run is a new process; the driver's own shader cache is "
             f"{sec['driver_cache']}, so only vkconv's pipeline cache file differs. Wall milliseconds.", "",
             "| step | without the cache file | with it | second call (with it) |", "|---|---:|---:|---:|"]
    cold, warm = sec["runs"].get("without_cache_file"), sec["runs"].get("with_cache_file")
    if isinstance(cold, list):
        warm_rows = {r["step"]: r for r in warm} if isinstance(warm, list) else {}
        for r in cold:
            w = warm_rows.get(r["step"], {})
            second = number(w.get("second_ms")) if r["step"] not in ("context", "total") else ""
            lines.append(f"| {r['step']} | {number(r['first_ms'])} | {number(w.get('first_ms'))} | {second} |")
        p = cold[0]["problem"]
        lines.append(f"\nLayer: N={p['N']} C={p['C']} H={p['H']} W={p['W']} K={p['K']} R={p['R']} S={p['S']}, "
                     f"algorithm {cold[0]['algorithm']}.")
    for name, run in sec["runs"].items():
        if isinstance(run, dict):
            lines.append(f"\n{name}: {run['error']}")
    return "\n".join(lines) + "\n"


def table_section(data, key, title, intro, columns, row_of, items="rows"):
    """A section that is one table: a row per item of the section's `items` list."""
    sec = data["sections"].get(key)
    if not sec or items not in sec:
        return f"## {title}\n\n" + absent(sec)
    lines = [f"## {title}", "", intro(sec) if callable(intro) else intro, ""]
    lines += table(columns, [row_of(item) for item in sec[items]])
    return "\n".join(lines) + "\n"


def render_overhead(data):
    return table_section(
        data, "overhead", "Host overhead", "Blocking call: wall time less GPU time over 1,000 calls. Recorded pass: "
        "host time of each recording call (100 a recording, one submission).",
        ["kind", "call", "median µs:", "p10 µs:", "p90 µs:", "Vulkan objects created:"],
        lambda r: ["blocking call" if r["kind"] == "host_overhead" else "recorded pass", r["call"],
                   f"{r['median_us']:.1f}", f"{r['p10_us']:.1f}", f"{r['p90_us']:.1f}", r["objects_created"]])


def render_tune(data):
    def intro(sec):
        budget = f"{sec['budget_s']:.0f} s budget" if sec["budget_s"] else "no time budget"
        return (f"`vkconv tune` per layer and layout ({budget}; {sec.get('seconds', '?')} s spent). Every later "
                "command reads the winners.")
    return table_section(
        data, "tune", "Tuning", intro,
        ["layer", "layout", "status", "products tuned:", "changed from default:", "seconds:"],
        lambda r: [r["layer"], r["layout"].upper(), r["status"], r.get("products", ""), r.get("changed", ""),
                   r.get("seconds", "")], items="runs")


def render_separable(data):
    sec = data["sections"].get("separable")
    if not sec or "result" not in sec:
        return "## Separable-layer sample\n\n" + absent(sec)
    return ("## Separable-layer sample\n\n" + f"`separable_layer --json {' '.join(sec['args'])}`: the whole process "
            f"took {sec['process_wall_s']} s.\n\n" + separable_dtypes(sec) + "```json\n" +
            json.dumps(sec["result"], indent=1) + "\n```\n")


def quotient(a, b):
    """a / b, or None (rendered as a dash) where b is zero: a report must render whatever it holds."""
    return a / b if b else None


def separable_dtypes(sec):
    """The 16-bit runs of the sample beside the fp32 one (nothing for a report without them); fp32's whole
    JSON follows this table."""
    runs = sec.get("by_dtype", {})
    if not runs:
        return ""
    base = sec["result"]

    def row(dtype, run):
        if "error" in run:
            return [DTYPE_NAMES[dtype], f"failed: {run['error']}"] + [""] * 6
        r = run["result"]
        over = [number(quotient(r[p]["gpu_ms"], base[p]["gpu_ms"])) for p in ("forward", "backward")]
        return [DTYPE_NAMES[dtype], number(r["forward"]["gpu_ms"]), number(r["backward"]["gpu_ms"]),
                " / ".join(over) if dtype != "f32" else "", number(r["peak_bytes"] / 2**20),
                number(quotient(r["peak_bytes"], base["peak_bytes"])) if dtype != "f32" else "",
                f"{r['peak_over_operands']:.2f}", run["process_wall_s"]]
    rows = [row("f32", {"result": base, "process_wall_s": sec["process_wall_s"]})]
    rows += [row(dtype, runs[dtype]) for dtype in DTYPES if dtype in runs]
    intro = ("Each element type in its own process (`--dtype`); over fp32: the type's GPU time, forward / "
             "backward, and its pool peak over fp32's.")
    return "\n".join([intro, ""] + table(["type", "forward GPU ms:", "backward GPU ms:", "over fp32:",
                                          "pool peak MiB:", "peak over fp32:", "peak over operands:",
                                          "process s:"], rows)) + "\n\n"


def render_cudnn(data):
    sec = data["sections"].get("cudnn")
    if not sec:
        return "## cuDNN\n\n" + absent(sec)
    if "rows" in sec:
        dtypes = sec.get("dtypes", ["f32"])
        text = (f"PyTorch {sec['torch']} (CUDA {sec['cuda']}), cuDNN {sec['cudnn']} on {sec['device']}: "
                f"{len(sec['rows'])} timings")
        if dtypes != ["f32"]:
            text += f", the layers in {', '.join(DTYPE_NAMES[d] for d in dtypes)}, the GEMM in fp32"
        return "## cuDNN\n\n" + text + (f"; stopped: {sec['reason']}" if "reason" in sec else "") + ".\n"
    return "## cuDNN\n\n" + absent(sec)


def render(data):
    meta = data.get("meta", {})
    head = ["# vkconv GPU report", "", f"Started {meta.get('started', '?')}, mode {meta.get('mode', '?')}, "
            f"{meta.get('elapsed_s', '?')} s so far; command: `{meta.get('command', '')}`.", ""]
    if meta.get("note"):
        head += [meta["note"], ""]
    parts = [render_device(data), render_summary(data), render_layers(data, "nchw"), render_layers(data, "nhwc")]
    parts += [render_layers_16bit(data, dtype, layout) for dtype in report_dtypes(data) if dtype != "f32"
              for layout in ("nchw", "nhwc")]
    parts += [render_gemm(data), render_first_call(data), render_overhead(data), render_separable(data),
              render_tune(data), render_cudnn(data)]
    return "\n".join(head) + "\n" + "\n".join(parts)


__all__ = ["render", "summarize"]
