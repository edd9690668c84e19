#!/usr/bin/env python3
"""Which configuration each dispatch of a plan runs, how fast, and what the driver says about it.

Joins `denox bench --per-dispatch --json` (serialized per-dispatch medians) with
`denox_pipeline_stats PLAN` (the macros each pipeline was compiled with, and the driver's register
count, shared memory and binary size) for OIDN balanced or small, and prints one markdown row per
dispatch. bench/layer_report.sh runs it on the GPU machine.

  layer_report.py --arch balanced --size 1920x1088 BENCH.json PIPELINE_STATS.txt

Columns:
- config: the tile (pixels, H x W; low-resolution pixels of one phase for ONE_PHASE), output
  channels per workgroup (NT), channels per chunk (CK), subgroups (SG_M x SG_N), and the kernel's
  variant (HEAD, TAIL, PHASES, ONE_PHASE, POOL, int8 or fp16 fragments).
- GFLOP: 2 * pixels * c_in * c_out * 9 summed over the convs the dispatch runs, as PyTorch and
  cuDNN count them (the up2 kernels multiply fewer: 4 taps on the upsampled channels), so
  TFLOP/s (TOP/s for int8 fragments) compare with theirs.
- WG/SM: workgroups one SM can hold by registers (65536 per SM) and by shared memory (~50 KB at
  once under NVIDIA's Vulkan driver, bench/RESULTS.md 2026-11-26); the smaller bounds occupancy.
  Registers are counted in NVIDIA's units of 8 per thread, capped by 2048 threads and 32
  workgroups an SM.
"""
import argparse
import json
import re
import sys

SMEM_PER_SM = 50 * 1024  # measured by bench/occupancy_probe (not the 228 KB the hardware has)
REGISTERS_PER_SM = 65536
THREADS_PER_SM, WORKGROUPS_PER_SM = 2048, 32  # Hopper's limits


def by_registers(registers, invocations):
    """Workgroups an SM holds by its register file: registers are allocated in units of 8 per thread."""
    per_thread = (registers + 7) // 8 * 8
    return min(REGISTERS_PER_SM // max(1, per_thread * invocations), THREADS_PER_SM // invocations, WORKGROUPS_PER_SM)


def oidn_layers(arch, input_channels=3):
    """(c_in, c_out, resolution divisor) per conv, as src/modelgen/oidn_unet.cpp builds them."""
    small = arch == "small"
    enc = [32, 32, 32 if small else 48, 32 if small else 64, 32 if small else 80, 32 if small else 96, 32 if small else 96]
    dec = [64 if small else 112, 64 if small else 112, 64 if small else 96, 64 if small else 96, 64, 32 if small else 64,
           32 if small else 64, 32]
    ic = input_channels
    return {
        "enc_conv0": (ic, enc[0], 1), "enc_conv1": (enc[0], enc[1], 1), "enc_conv2": (enc[1], enc[2], 2),
        "enc_conv3": (enc[2], enc[3], 4), "enc_conv4": (enc[3], enc[4], 8), "enc_conv5a": (enc[4], enc[5], 16),
        "enc_conv5b": (enc[5], enc[6], 16), "dec_conv4a": (enc[6] + enc[3], dec[0], 8), "dec_conv4b": (dec[0], dec[1], 8),
        "dec_conv3a": (dec[1] + enc[2], dec[2], 4), "dec_conv3b": (dec[2], dec[3], 4),
        "dec_conv2a": (dec[3] + enc[1], dec[4], 2), "dec_conv2b": (dec[4], dec[5], 2),
        "dec_conv1a": (dec[5] + ic, dec[6], 1), "dec_conv1b": (dec[6], dec[7], 1), "dec_conv0": (dec[7], 3, 1),
    }


def parse_stats(path):
    """name -> {family, invocations, defines{}, stats{}} from denox_pipeline_stats' text."""
    blocks, current = {}, None
    head = re.compile(r"^(\S.*?)\s+\[(\S+), (\d+) invocations\]$")
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        m = head.match(line)
        if m:
            current = {"family": m.group(2), "invocations": int(m.group(3)), "defines": {}, "stats": {}}
            blocks[m.group(1)] = current
        elif current and line.strip().startswith("defines:"):
            for item in line.split(":", 1)[1].split():
                key, _, value = item.partition("=")
                current["defines"][key] = value
        elif current and "=" in line:
            for item in line.strip().rstrip(";").split(";"):
                key, _, value = item.strip().partition("=")
                if key:
                    current["stats"][key] = value
    return blocks


def describe(block):
    d = block["defines"]
    if "TILE_H" not in d or not block["family"].startswith("conv2d"):
        return block["family"]
    parts = [f"{d['TILE_H']}x{d['TILE_W']}"]
    for key, label in (("NT", "nt"), ("CK", "ck")):
        if key in d:
            parts.append(f"{label}{d[key]}")
    if "SG_M" in d:
        parts.append(f"sg{d['SG_M']}x{d.get('SG_N', '1')}")
    for flag in ("HEAD", "TAIL", "PHASES", "ONE_PHASE", "POOL", "X0_Q8"):
        if d.get(flag, "0") not in ("0", ""):
            parts.append(flag.lower())
    parts.append("int8" if block["family"].endswith("_q8") else "fp16")
    return " ".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="balanced", choices=["balanced", "small"])
    ap.add_argument("--size", default="1920x1088")
    ap.add_argument("--channels", type=int, default=3)
    ap.add_argument("bench_json")
    ap.add_argument("pipeline_stats")
    a = ap.parse_args()
    # The pad/crop model (denox make-model --pad-crop) runs its convs on the size padded to 16.
    width, height = ((int(v) + 15) // 16 * 16 for v in a.size.split("x"))
    layers = oidn_layers(a.arch, a.channels)
    bench = json.load(open(a.bench_json, encoding="utf-8"))
    stats = parse_stats(a.pipeline_stats)

    print(f"{a.arch} {a.size}, {bench.get('precision', '?')} {bench.get('tuning', '?')}: end to end {bench['median_ms']:.3f} ms "
          f"(frame-only timestamps); per dispatch serialized")
    print()
    print("| dispatch | config | ms | GFLOP | TFLOP/s | registers | shared KB | binary KB | WG/SM (regs, smem) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    total_ms = 0.0
    for d in bench["per_dispatch"]:
        name, ms = d["name"], d["ms"]
        total_ms += ms
        ring = " (tail ring)" in name  # the tail's second pass: its convs are counted in the dispatch before
        convs = [] if ring else re.findall(r"/([a-z_0-9]+)/Conv", name)
        gflop = 0.0
        for conv in convs:
            if conv in layers:
                cin, cout, div = layers[conv]
                gflop += 2.0 * (width // div) * (height // div) * cin * cout * 9 * 1e-9
        block = stats.get(name)
        label = "+".join(dict.fromkeys(part.strip("/").split("/")[0] for part in name.split(" (")[0].split("+")))
        label += " (tail ring)" if ring else ""
        regs = shared = binary = occupancy = config = "-"
        if block:
            config = describe(block)
            s = block["stats"]
            if "Register Count" in s:
                regs = s["Register Count"]
                by_regs = by_registers(int(regs), block["invocations"])
                smem = int(s.get("Shared Memory Size", "0"))
                by_smem = SMEM_PER_SM // smem if smem else WORKGROUPS_PER_SM
                shared, occupancy = f"{smem / 1024:.1f}", f"{min(by_regs, by_smem)} ({by_regs}, {by_smem})"
            if "Binary Size" in s:
                binary = f"{int(s['Binary Size']) / 1024:.1f}"
        rate = f"{gflop / ms:.0f}" if gflop and ms > 0 else "-"
        print(f"| {label} | {config} | {ms:.4f} | {gflop:.1f} | {rate} | {regs} | {shared} | {binary} | {occupancy} |")
    print(f"| sum | | {total_ms:.4f} | | | | | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
