"""The report as markdown, and its summary (vkconv against cuDNN and against the roofline), from the
report's JSON alone: a report stopped part-way renders what it has, each missing part saying why."""
import math

from .roofline import pass_bytes, pass_flops, roofline_ms
from .sections import PASSES, algorithm_name

CUDNN_KEYS = {"forward": "forward_ms", "backward-data": "backward_data_ms", "backward-filter": "backward_filter_ms"}


def peaks_of(data):
    peaks = data["sections"].get("device", {}).get("peaks")
    return (peaks["gflops"], peaks["gbs"]) if peaks else None


def cudnn_ms(data, layer, layout, kind):
    for row in data["sections"].get("cudnn", {}).get("rows", []):
        if row.get("kind") == "layer" and row["layer"] == layer and row["layout"] == layout:
            return row.get(CUDNN_KEYS[kind])
    return None


def layer_rows(data):
    """One row per measured (layer, layout, pass): vkconv's best, its roofline fraction, cuDNN's time."""
    peaks = peaks_of(data)
    rows = []
    for entry in data["sections"].get("layers", {}).get("entries", []):
        for kind, result in entry.get("passes", {}).items():
            best = result["best"]
            p = best["problem"]
            row = {"layer": entry["layer"], "layout": entry["layout"], "pass": kind, "algorithm": algorithm_name(best),
                   "ms": best["gpu_ms"], "gflops": best["gflops"], "peak_bytes": best.get("peak_bytes"),
                   "others": result["others"]}
            if peaks:
                row["roofline"] = roofline_ms(pass_flops(p), pass_bytes(p, kind), peaks) / best["gpu_ms"]
            cudnn = cudnn_ms(data, entry["layer"], entry["layout"], kind)
            if cudnn:
                row["cudnn_ms"], row["ratio"] = cudnn, best["gpu_ms"] / cudnn
            rows.append(row)
    return rows


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarize(data):
    rows = layer_rows(data)
    cells = []
    for kind in PASSES:
        for layout in ("nchw", "nhwc"):
            mine = [r for r in rows if r["pass"] == kind and r["layout"] == layout]
            if not mine:
                continue
            ratios = [r["ratio"] for r in mine if "ratio" in r]
            roofs = [r["roofline"] for r in mine if "roofline" in r]
            cells.append({"pass": kind, "layout": layout, "layers": len(mine), "cudnn_layers": len(ratios),
                          "geomean_ratio": geomean(ratios), "geomean_roofline": geomean(roofs)})
    rated = [r for r in rows if "ratio" in r]
    worst = max(rated, key=lambda r: r["ratio"]) if rated else None
    return {"cells": cells, "worst": worst and {k: worst[k] for k in ("layer", "layout", "pass", "algorithm", "ms",
                                                                        "cudnn_ms", "ratio")}}


def number(value, digits=3):
    return "—" if value is None else f"{value:.{digits}g}" if value < 1000 else f"{value:.0f}"


def percent(value):
    return "—" if value is None else f"{100 * value:.1f}%"


def absent(section):
    if not section:
        return "_Not measured: the run ended before this part._\n"
    if section.get("status") == "running":
        return "_Not finished: the run ended while this part was being measured._\n"
    return f"_{section['status'].capitalize()}: {section.get('reason', '')}_\n"


def render_device(data):
    dev = data["sections"].get("device")
    if not dev or dev.get("status") != "measured":
        return "## Device\n\n" + absent(dev)
    d = dev["device"]
    lines = ["## Device", "", f"- device: {d['name']} ({d['type']}), driver {d['driver']}, Vulkan {d['api_version']}",
             f"- vkconv: {dev['vkconv']}, commit {dev['commit']}; host {dev['host']}",
             f"- device model: {d['compute_units']} compute units ({d['compute_units_source']}), subgroup "
             f"{d['subgroup_size']}, shared memory {d['shared_memory_bytes'] // 1024} KiB, maxStorageBufferRange "
             f"{d['max_storage_buffer_range']} B, largest buffer {d['max_buffer_bytes']} B, max workgroup invocations "
             f"{d['max_workgroup_invocations']}, workgroup count {d['max_workgroup_count']}, push constants "
             f"{d['max_push_constants_bytes']} B, texel elements {d['max_texel_buffer_elements']}, fp16 "
             f"{'yes' if d['fp16'] else 'no'}, timestamps {'yes' if d['timestamps'] else 'no'}"]
    if "nvidia_smi" in dev:
        lines.append(f"- nvidia-smi (name, driver, memory, max SM clock, power limit): {dev['nvidia_smi']}")
    peaks = dev.get("peaks")
    lines.append(f"- roofline peaks: {peaks['gflops']:.0f} GFLOP/s fp32, {peaks['gbs']:.0f} GB/s ({peaks['source']})"
                 if peaks else f"- roofline: absent, {dev['peaks_absent']}")
    return "\n".join(lines) + "\n"


def render_summary(data):
    summary = data.get("summary") or summarize(data)
    lines = ["## Summary", "",
             "Geometric means over the measured layers. vkconv/cuDNN: vkconv's best time over cuDNN's (above 1: "
             "cuDNN is faster). Roofline: the least time the pass could take at the device's peaks over vkconv's "
             "time.", "", "| pass | layout | layers | vkconv/cuDNN | roofline |", "|---|---|---:|---:|---:|"]
    for c in summary["cells"]:
        ratio = f"{number(c['geomean_ratio'])} ({c['cudnn_layers']})" if c["geomean_ratio"] else "—"
        lines.append(f"| {c['pass']} | {c['layout'].upper()} | {c['layers']} | {ratio} | "
                     f"{percent(c['geomean_roofline'])} |")
    w = summary["worst"]
    if w:
        lines += ["", f"Worst ratio: {w['layer']} {w['pass']} {w['layout'].upper()}, {w['algorithm']} "
                      f"{number(w['ms'])} ms against cuDNN's {number(w['cudnn_ms'])} ms ({w['ratio']:.1f}×)."]
    return "\n".join(lines) + "\n"
