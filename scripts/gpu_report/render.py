"""The report as markdown, and its summary (vkconv against cuDNN and against the roofline), from the
report's JSON alone: a report stopped part-way renders what it has, each missing part saying why."""
import math

from .roofline import pass_bytes, pass_flops, roofline_ms
from .sections import DTYPE_NAMES, DTYPES, PASSES, algorithm_name, layer_entries

CUDNN_KEYS = {"forward": "forward_ms", "backward-data": "backward_data_ms", "backward-filter": "backward_filter_ms"}


def peaks_of(data):
    peaks = data["sections"].get("device", {}).get("peaks")
    return (peaks["gflops"], peaks["gbs"]) if peaks else None


def cudnn_ms(data, layer, layout, kind, dtype="f32"):
    """cuDNN's time for one pass in one element type (rows of reports made before 16-bit types are fp32)."""
    for row in data["sections"].get("cudnn", {}).get("rows", []):
        if (row.get("kind") == "layer" and row["layer"] == layer and row["layout"] == layout and
                row.get("dtype", "f32") == dtype):
            return row.get(CUDNN_KEYS[kind])
    return None


def layer_rows(data, dtype="f32"):
    """One row per measured (layer, layout, pass) in one element type: vkconv's best, its roofline fraction
    (fp32 only: the peaks and the bytes are fp32's), cuDNN's time in that type; for a 16-bit type, also
    vkconv's and cuDNN's time over their fp32 time."""
    peaks = peaks_of(data) if dtype == "f32" else None
    rows = []
    for entry in layer_entries(data["sections"].get("layers", {}), dtype):
        for kind, result in entry.get("passes", {}).items():
            best = result["best"]
            p = best["problem"]
            row = {"layer": entry["layer"], "layout": entry["layout"], "pass": kind, "algorithm": algorithm_name(best),
                   "ms": best["gpu_ms"], "gflops": best["gflops"], "peak_bytes": best.get("peak_bytes"),
                   "others": result["others"]}
            if peaks:
                row["roofline"] = roofline_ms(pass_flops(p), pass_bytes(p, kind), peaks) / best["gpu_ms"]
            cudnn = cudnn_ms(data, entry["layer"], entry["layout"], kind, dtype)
            if cudnn:
                row["cudnn_ms"], row["ratio"] = cudnn, best["gpu_ms"] / cudnn
            rows.append(row)
    return rows if dtype == "f32" else with_fp32_ratios(rows, layer_rows(data))


def with_fp32_ratios(rows, fp32_rows):
    """16-bit rows with their time over fp32's (vkconv's best over its best, and cuDNN's over cuDNN's)."""
    fp32 = {(r["layer"], r["layout"], r["pass"]): r for r in fp32_rows}
    for row in rows:
        base = fp32.get((row["layer"], row["layout"], row["pass"]))
        if base:
            row["over_f32"] = row["ms"] / base["ms"]
            if row.get("cudnn_ms") and base.get("cudnn_ms"):
                row["cudnn_over_f32"] = row["cudnn_ms"] / base["cudnn_ms"]
    return rows


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def pass_layout_groups(rows):
    """(pass, layout, its rows, their cuDNN ratios) for every pass and layout that has rows."""
    for kind in PASSES:
        for layout in ("nchw", "nhwc"):
            mine = [r for r in rows if r["pass"] == kind and r["layout"] == layout]
            if mine:
                yield kind, layout, mine, [r["ratio"] for r in mine if "ratio" in r]


def summarize(data):
    rows = layer_rows(data)
    cells = []
    for kind, layout, mine, ratios in pass_layout_groups(rows):
        roofs = [r["roofline"] for r in mine if "roofline" in r]
        cells.append({"pass": kind, "layout": layout, "layers": len(mine), "cudnn_layers": len(ratios),
                      "geomean_ratio": geomean(ratios), "geomean_roofline": geomean(roofs)})
    rated = [r for r in rows if "ratio" in r]
    worst = max(rated, key=lambda r: r["ratio"]) if rated else None
    return {"cells": cells, "worst": worst and {k: worst[k] for k in ("layer", "layout", "pass", "algorithm", "ms",
                                                                        "cudnn_ms", "ratio")},
            "cells_16bit": summarize_16bit(data)}


def summarize_16bit(data):
    """Per 16-bit type, pass and layout: geometric means of vkconv's time over its fp32 time, over cuDNN's in
    the same type, and of cuDNN's over its own fp32 time. Kept apart from "cells", which stay fp32's."""
    cells = []
    for dtype in DTYPES[1:]:
        for kind, layout, mine, ratios in pass_layout_groups(layer_rows(data, dtype)):
            cells.append({"dtype": dtype, "pass": kind, "layout": layout, "layers": len(mine),
                          "geomean_over_f32": geomean([r["over_f32"] for r in mine if "over_f32" in r]),
                          "cudnn_layers": len(ratios), "geomean_ratio": geomean(ratios),
                          "geomean_cudnn_over_f32": geomean([r["cudnn_over_f32"] for r in mine
                                                             if "cudnn_over_f32" in r])})
    return cells


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
    return "\n".join(lines + summary_16bit_lines(summary.get("cells_16bit", []))) + "\n"


def summary_16bit_lines(cells):
    """The 16-bit part of the summary (none for a report without 16-bit layers)."""
    if not cells:
        return []
    lines = ["", "16-bit types, geometric means over the measured layers. Over fp32: the type's best time over "
             "fp32's best (below 1: faster than fp32). vkconv/cuDNN: against cuDNN in the same type (fp32 "
             "accumulation).", "",
             "| type | pass | layout | layers | vkconv over fp32 | vkconv/cuDNN | cuDNN over fp32 |",
             "|---|---|---|---:|---:|---:|---:|"]
    for c in cells:
        ratio = f"{number(c['geomean_ratio'])} ({c['cudnn_layers']})" if c["geomean_ratio"] else "—"
        lines.append(f"| {DTYPE_NAMES[c['dtype']]} | {c['pass']} | {c['layout'].upper()} | {c['layers']} | "
                     f"{number(c['geomean_over_f32'])} | {ratio} | {number(c['geomean_cudnn_over_f32'])} |")
    return lines
