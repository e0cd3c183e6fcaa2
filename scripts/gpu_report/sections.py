"""The report's measurements, one function a section. Each fills its section of the report and saves it,
so what is measured is on disk before the next command starts."""
import json
import os
import shutil

from .roofline import profile_peaks
from .runner import read_json

PASSES = ["forward", "backward-data", "backward-filter"]
# Element types in the order they are measured: fp32 first, the baseline every 16-bit time is divided by,
# so a run stopped at its time limit still has the whole fp32 table.
DTYPES = ["f32", "f16", "bf16"]
DTYPE_NAMES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16"}
NO_DRIVER_CACHE = {"MESA_SHADER_CACHE_DISABLE": "true", "__GL_SHADER_DISK_CACHE": "0"}


def measure_device(s):
    sec = s.report.section("device")
    version = s.runner.run("version", [s.vkconv, "--version"], 30)
    devices = s.runner.run("devices", [s.vkconv, "devices", "--json"] + s.device_args, 120)
    try:
        listed = json.loads(devices.output[devices.output.index("["):]) if devices.ok else []
    except ValueError:
        listed = []
    chosen = [d for d in listed if d.get("default")] or listed[:1]
    if s.opts.device:
        chosen = [d for d in listed if s.opts.device == str(d["index"]) or s.opts.device.lower() in d["name"].lower()]
    if not chosen:
        sec.update(status="failed", reason="no Vulkan device: " + devices.why())
        s.report.save()
        return False
    sec.update(status="measured", vkconv=version.output.strip() if version.ok else version.why(),
               commit=s.commit, device=chosen[0], host=os.uname().nodename)
    if shutil.which("nvidia-smi"):
        smi = s.runner.run("nvidia-smi", ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,"
                                          "power.limit", "--format=csv,noheader"], 30)
        sec["nvidia_smi"] = smi.output.strip() if smi.ok else smi.why()
    if s.opts.peak_gflops and s.opts.peak_gbs:
        sec["peaks"] = {"gflops": s.opts.peak_gflops, "gbs": s.opts.peak_gbs,
                        "source": "given as options (--peak-gflops, --peak-gbs)"}
    elif (found := profile_peaks(s.profiles, chosen[0]["name"])) is not None:
        sec["peaks"] = {"gflops": found[0], "gbs": found[1], "source": found[2]}
    else:
        sec["peaks_absent"] = ("no shipped device profile names this device with its peaks, and "
                               "--peak-gflops and --peak-gbs were not given")
    s.report.save()
    return True


def measure_first_call(s):
    sec = s.report.section("first_call")
    cache = s.runner.work("first-call.cache")
    for stale in (cache, cache + ".tuning"):
        if os.path.exists(stale):
            os.remove(stale)
    env = dict(NO_DRIVER_CACHE, VKCONV_PIPELINE_CACHE=cache, VKCONV_TUNING=cache + ".tuning")
    argv = [s.vkconv, "bench", "--first-call", "--layer", s.opts.first_call_layer, "--batch", "1"] + s.device_args
    if s.opts.first_call_algo != "auto":
        argv += ["--algo", s.opts.first_call_algo]
    sec.update(status="measured", runs={}, driver_cache="off (" + ", ".join(f"{k}={v}" for k, v in
                                                                          NO_DRIVER_CACHE.items()) + ")")
    for run in ("without_cache_file", "with_cache_file"):
        json_path = s.runner.work(f"first-call-{run}.json")
        result = s.runner.run("first-call-" + run, argv + ["--json", json_path], 300, env)
        doc = read_json(json_path) if result.ok else None
        sec["runs"][run] = doc["results"] if doc else {"error": result.why()}
        if not doc:
            sec["status"] = "failed"
        s.report.save()


def measure_overhead(s):
    sec = s.report.section("overhead")
    json_path = s.runner.work("overhead.json")
    result = s.runner.run("overhead", [s.vkconv, "bench", "--overhead", "--json", json_path] + s.device_args, 300)
    doc = read_json(json_path) if result.ok else None
    sec.update(status="measured", rows=doc["results"]) if doc else sec.update(status="failed", reason=result.why())
    s.report.save()


def cudnn_absent_reason(s):
    if s.opts.no_cudnn:
        return "not asked for (--no-cudnn)"
    probe = s.runner.run("cudnn-probe", [s.opts.python, "-c", "import torch; print('cuda', torch.__version__, "
                                         "torch.cuda.is_available(), torch.backends.cudnn.is_available())"], 180)
    if not probe.ok:
        return f"{s.opts.python} cannot import torch ({probe.why()})"
    line = [x for x in probe.output.splitlines() if x.startswith("cuda ")][-1].split()
    if line[2] != "True":
        return f"PyTorch {line[1]} sees no CUDA device (torch.cuda.is_available() is False)"
    if line[3] != "True":
        return f"PyTorch {line[1]} has no cuDNN"
    return ""


def measure_cudnn(s):
    sec = s.report.section("cudnn")
    reason = cudnn_absent_reason(s)
    if reason:
        sec.update(status="absent", reason=reason)
        s.report.save()
        return
    json_path = s.runner.work("cudnn.json")
    argv = [s.opts.python, os.path.join(s.repo, "samples", "cudnn_layers.py"), "--batch", str(s.opts.batch),
            "--repeat", str(s.opts.cudnn_repeat), "--dtype", ",".join(s.opts.dtypes), "--json", json_path]
    argv += [f"--layer={name}" for name in s.opts.layers] + [f"--gemm={g}" for g in s.gemm_shapes()]
    if len(s.opts.layouts) == 1:
        argv += ["--layout", s.opts.layouts[0]]
    result = s.runner.run("cudnn", argv, s.opts.cudnn_cap, {"PYTHONUNBUFFERED": "1"})
    doc = read_json(json_path)
    if doc:
        sec.update(status="measured" if result.ok else "partial", torch=doc["torch"], cudnn=doc["cudnn"],
                   cuda=doc.get("cuda"), device=doc["device"], repeat=doc["repeat"], dtypes=doc.get("dtypes", ["f32"]),
                   rows=doc["rows"])
        if not result.ok:
            sec["reason"] = result.why()
    else:
        sec.update(status="failed", reason=result.why())
    s.report.save()


def measure_tune(s):
    sec = s.report.section("tune")
    sec.update(status="measured", budget_s=s.opts.tune_seconds, runs=[])
    spent = 0.0
    for index, (layer, layout) in enumerate((n, x) for n in s.opts.tune_layers for x in s.opts.layouts):
        left = s.opts.tune_seconds - spent if s.opts.tune_seconds > 0 else 0
        entry = {"layer": layer, "layout": layout}
        if s.opts.tune_seconds > 0 and left < 2:
            entry["status"] = "not tuned: the tuning budget was spent"
            sec["runs"].append(entry)
            continue
        json_path = s.runner.work(f"tune-{layout}-{layer}.json")
        argv = [s.vkconv, "tune", "--layer", layer, "--layout", layout, "--pass", s.opts.tune_pass,
                "--repeat", str(s.opts.tune_repeat),
                "--tuning-file", s.tuning_file, "--json", json_path] + s.device_args
        argv += ["--batch", str(s.opts.tune_batch)] + (["--layers", s.opts.tune_table] if s.opts.tune_table else [])
        argv += [f"--gemm={g},1" for g in s.gemm_shapes() if "," in g] if index == 0 else []
        result = s.runner.run(f"tune-{layout}-{layer}", argv, left)
        spent += result.seconds
        doc = read_json(json_path) if result.ok else None
        if doc:
            rows = doc["rows"]
            changed = sum(1 for r in rows if r["best"] and r["before"] and r["best"] != r["before"])
            entry.update(status="tuned", seconds=round(result.seconds, 1), products=len(rows), changed=changed)
        else:
            entry.update(status="not tuned: " + result.why(), seconds=round(result.seconds, 1))
        sec["runs"].append(entry)
        s.report.save()
    sec["seconds"] = round(spent, 1)
    s.report.save()


def measure_gemm(s):
    sec = s.report.section("gemm")
    json_path = s.runner.work("gemm.json")
    argv = [s.vkconv, "bench", "--gemm-only", "--repeat", str(s.opts.repeat), "--json", json_path] + s.device_args
    argv += [f"--gemm-shape={g}" for g in s.gemm_shapes()]
    result = s.runner.run("gemm", argv, s.opts.gemm_cap)
    doc = read_json(json_path) if result.ok else None
    sec.update(status="measured", rows=doc["results"]) if doc else sec.update(status="failed", reason=result.why())
    s.report.save()


def run_separable(s, dtype):
    """One run of the separable-layer sample in one element type: (the command's result, its JSON or None)."""
    argv = [s.separable, "--json"] + s.opts.separable_args + s.device_args
    if dtype != "f32":  # the fp32 run keeps the command line of reports made before 16-bit types
        argv += ["--dtype", dtype]
    result = s.runner.run("separable" if dtype == "f32" else f"separable-{dtype}", argv, s.opts.separable_cap)
    try:
        return result, json.loads(result.output[result.output.index("{"):]) if result.ok else None
    except ValueError:
        return result, None


def measure_separable(s):
    """The sample in fp32 (always: it is what the 16-bit runs are compared with), then once per 16-bit type
    asked for, each in its own process, under by_dtype."""
    sec = s.report.section("separable")
    result, doc = run_separable(s, "f32")
    if doc:
        sec.update(status="measured", process_wall_s=round(result.seconds, 2), args=s.opts.separable_args, result=doc)
    else:
        sec.update(status="failed", reason=result.why())
    s.report.save()
    for dtype in (d for d in s.opts.dtypes if d != "f32"):
        result, doc = run_separable(s, dtype)
        runs = sec.setdefault("by_dtype", {})
        runs[dtype] = {"process_wall_s": round(result.seconds, 2), "result": doc} if doc else {"error": result.why()}
        s.report.save()


def best_per_pass(rows, dtype="f32"):
    """{pass: {"best": row, "others": [(algorithm, ms)]}} from one layer's bench rows in one element type."""
    out = {}
    for kind in PASSES:
        candidates = sorted((r for r in rows if r.get("kind") == kind and r.get("data_type", "f32") == dtype),
                            key=lambda r: r["gpu_ms"])
        if candidates:
            out[kind] = {"best": candidates[0], "others": [[algorithm_name(r), r["gpu_ms"]] for r in candidates[1:]]}
    return out


def algorithm_name(row):
    return row["algorithm"] + ("-" + row["mec_schedule"] if row.get("mec_schedule") else "")


def layer_entries(sec, dtype=None):
    """The layers section's entries, of one element type or of all. fp32's stay in "entries", as in reports
    made before 16-bit types (whose entries carry no dtype); the 16-bit ones are in "entries_16bit"."""
    fp32 = [dict(e, dtype="f32") for e in sec.get("entries", [])]
    every = fp32 + sec.get("entries_16bit", [])
    return every if dtype is None else [e for e in every if e["dtype"] == dtype]


def bench_layer(s, layer, layout, dtype):
    """One layer in one layout and element type, every algorithm and pass: the section's entry for it."""
    name = f"bench-{layout}-{layer}" if dtype == "f32" else f"bench-{dtype}-{layout}-{layer}"
    json_path = s.runner.work(name + ".json")
    argv = [s.vkconv, "bench", "--layers-only", "--backward", "--layer", layer, "--layout", layout, "--dtype", dtype,
            "--batch", str(s.opts.batch), "--repeat", str(s.opts.repeat), "--json", json_path] + s.device_args
    result = s.runner.run(name, argv, s.opts.layer_cap)
    doc = read_json(json_path) if result.ok else None
    entry = {"layer": layer, "layout": layout, "dtype": dtype, "seconds": round(result.seconds, 1)}
    if doc:
        entry.update(status="measured", passes=best_per_pass(doc["results"], dtype))
    else:
        entry.update(status="failed" if not result.skipped else "not measured", reason=result.why())
    return entry


def measure_layers(s):
    """Every layer and layout in fp32 first, then in each 16-bit type: one `vkconv bench` per element type,
    so a run stopped at its time limit has whole tables rather than every type of the first layers."""
    sec = s.report.section("layers")
    sec.update(status="measured", batch=s.opts.batch, repeat=s.opts.repeat, dtypes=s.opts.dtypes, entries=[])
    for dtype in s.opts.dtypes:
        for layer in s.opts.layers:
            for layout in s.opts.layouts:
                entry = bench_layer(s, layer, layout, dtype)
                if entry["status"] != "measured":
                    sec["status"] = "partial"
                sec.setdefault("entries" if dtype == "f32" else "entries_16bit", []).append(entry)
                s.report.save()
