"""Peak figures and the roofline: the least time a pass could take on the device, bounded by its
arithmetic (fp32 peak) or by the bytes it must move at least once (peak memory bandwidth)."""
import glob
import json
import os


def profile_peaks(profiles_dir, device_name):
    """(gflops, gbs, source) from the shipped device profile whose deviceName is this device's, or None."""
    for path in sorted(glob.glob(os.path.join(profiles_dir, "*.json"))):
        try:
            with open(path) as f:
                profile = json.load(f)
        except (OSError, ValueError):
            continue
        properties = profile.get("capabilities", {}).get("device", {}).get("properties", {})
        name = properties.get("VkPhysicalDeviceProperties", {}).get("deviceName")
        own = profile.get("vkconv", {})
        if name == device_name and "peak_fp32_gflops" in own and "peak_memory_gbs" in own:
            source = f"profile {os.path.basename(path)}: {own.get('peaks_source', '')}".rstrip(": ")
            return float(own["peak_fp32_gflops"]), float(own["peak_memory_gbs"]), source
    return None


def pass_flops(p):
    """2*N*K*P*Q*(C/G)*R*S: every pass of one layer does the forward's multiply-adds."""
    return 2.0 * p["N"] * p["K"] * p["P"] * p["Q"] * (p["C"] // p["groups"]) * p["R"] * p["S"]


def pass_bytes(p, kind):
    """fp32 bytes a pass must read and write at least once: its two operands and its result."""
    x = p["N"] * p["C"] * p["H"] * p["W"]
    y = p["N"] * p["K"] * p["P"] * p["Q"]
    w = p["K"] * (p["C"] // p["groups"]) * p["R"] * p["S"]
    bias = p["K"] if kind == "backward-filter" and p.get("bias") else 0
    return 4.0 * (x + y + w + bias)


def roofline_ms(flops, bytes_moved, peaks):
    gflops, gbs = peaks
    return max(flops / (gflops * 1e6), bytes_moved / (gbs * 1e6))
