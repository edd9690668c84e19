#!/usr/bin/python3
"""`denox compile` in three processes sharing one cache file (lavapipe, a small odd extent): the
first measures every edge, the second measures none (all from the cache) and picks the same
schedule, the 9-channel model afterwards measures only what it does not share; --plan writes the
plan file, which run --backend vulkan and bench load (the C API tests load and run plans too); --no-measure and --tuning heuristic measure
nothing, and tuning flags that disagree are refused; the table names its totals; a bad --size (or
make-image --size / --channels) is refused by name.

  cli_compile_test.py DENOX_BINARY WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np


def run(*args, ok=True):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if ok and p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)}\n{p.stdout}\n{p.stderr}")
    return p


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")


def main():
    denox, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    m3, m9 = f"{work}/small3.onnx", f"{work}/small9.onnx"
    run(denox, "make-model", m3, "--arch", "small", "--pad-crop", "--seed", "3")
    run(denox, "make-model", m9, "--arch", "small", "--channels", "9", "--pad-crop", "--seed", "4")
    cache = f"{work}/cache.sqlite3"
    args = ["--size", "37x29", "--cache", cache, "--precision", "fp32", "--json", "--quiet"]

    first = json.loads(run(denox, "compile", m3, *args, "--plan", f"{work}/m3.plan").stdout)
    check(first["measured_edges"] == first["edges"] > 0, f"first compile measures every edge: {first}")
    check(first["cached_edges"] == 0 and first["failed_edges"] == 0, f"first compile: {first}")
    check(first["dispatches"] == sum(s["dispatches"] for s in first["schedule"]), "dispatch count = schedule")
    for key in ("import", "enumerate", "prune", "measure", "select", "lower", "shaders", "total"):
        check(key in first["time_ms"], f"time_ms has {key}")
    check(os.path.getsize(f"{work}/m3.plan") > 1000, "--plan wrote the plan")
    # The plan file runs through denox_model_load_plan (run --backend vulkan, bench) and computes
    # what its model computes; the cpu backend refuses it by name.
    image = f"{work}/in.pfm"
    run(denox, "make-image", image, "--size", "37x29")
    run(denox, "run", m3, "-i", image, "-o", f"{work}/out_onnx.npy", "--backend", "vulkan", "--cache", cache, "--precision", "fp32",
        "--validation")
    run(denox, "run", f"{work}/m3.plan", "-i", image, "-o", f"{work}/out_plan.npy", "--backend", "vulkan", "--no-cache", "--validation")
    # (run's heuristic plan and the measured one may fuse differently: fp32 rounding apart.)
    want, got = np.load(f"{work}/out_onnx.npy"), np.load(f"{work}/out_plan.npy")
    check(want.shape == got.shape and np.linalg.norm(got - want) <= 1e-5 * np.linalg.norm(want),
          "the plan file computes what its model computes")
    cpu = run(denox, "run", f"{work}/m3.plan", "-i", image, "-o", f"{work}/cpu.npy", ok=False)
    check(cpu.returncode != 0 and "is a denox plan, not an ONNX model" in cpu.stderr, f"cpu backend refuses a plan: {cpu.stderr}")
    bench = json.loads(run(denox, "bench", f"{work}/m3.plan", "--size", "37x29", "--runs", "2", "--warmup", "1", "--no-cache",
                           "--validation", "--json").stdout)
    check(bench["median_ms"] > 0 and bench["precision"] == "fp32", f"bench runs a plan file: {bench}")
    # Measured plans count their distinct pipelines (select's step 7b, share_pipelines.hpp).
    check(0 < first["pipelines"] <= first["dispatches"], f"pipelines counted: {first}")
    check(isinstance(first["pipeline_swaps"], list), f"pipeline_swaps listed: {first}")
    for swap in first["pipeline_swaps"]:
        check(set(swap) == {"step", "from", "to", "measured_extra_ms", "pipelines_before", "pipelines_after"}
              and swap["pipelines_after"] < swap["pipelines_before"], f"a swap: {swap}")

    again = json.loads(run(denox, "compile", m3, *args).stdout)
    check(again["measured_edges"] == 0 and again["cached_edges"] == first["edges"], f"second compile measures nothing: {again}")
    check([s["config"] for s in again["schedule"]] == [s["config"] for s in first["schedule"]], "same schedule again")

    nine = json.loads(run(denox, "compile", m9, *args).stdout)
    check(0 < nine["measured_edges"] < nine["edges"] // 2, f"the 9-channel model measures only new edges: {nine}")
    check(nine["measured_edges"] + nine["cached_edges"] == nine["edges"], f"9-channel: {nine}")

    heur = json.loads(run(denox, "compile", m3, "--size", "37x29", "--no-cache", "--no-measure", "--json", "--quiet").stdout)
    check(heur["measured_edges"] == 0 and heur["tuning"] == "heuristic", f"--no-measure: {heur}")
    check("pipelines" not in heur, f"a heuristic plan moves no step to share a pipeline: {heur}")
    # --tuning heuristic is --no-measure (compile used to ignore --tuning and measure); flags that
    # disagree are refused by name.
    heur2 = json.loads(run(denox, "compile", m3, "--size", "37x29", "--no-cache", "--tuning", "heuristic", "--json", "--quiet").stdout)
    check(heur2["measured_edges"] == 0 and heur2["tuning"] == "heuristic", f"--tuning heuristic: {heur2}")
    for flags in (["--tuning", "measure", "--no-measure"], ["--no-measure", "--exhaustive"], ["--tuning", "heuristic", "--exhaustive"]):
        clash = run(denox, "compile", m3, "--size", "37x29", "--no-cache", "--quiet", *flags, ok=False)
        check(clash.returncode != 0 and ("contradicts" in clash.stderr or "cannot be combined" in clash.stderr),
              f"{flags} refused: {clash.returncode} {clash.stderr}")

    table = run(denox, "compile", m3, "--size", "37x29", "--cache", cache, "--precision", "fp32", "--quiet").stdout
    check("dispatches, predicted" in table and "-> " in table and "pipelines: " in table, f"the table:\n{table}")

    # Bad sizes are invalid arguments naming the option, never "internal error" (a zero size,
    # trailing text and a negative width were taken or misreported before).
    for size in ("37by29", "0x0", "16x16x16", "-1x5", "37x"):
        bad = run(denox, "compile", m3, "--size", size, "--no-cache", ok=False)
        check(bad.returncode != 0 and f"invalid argument: --size '{size}' is not WIDTHxHEIGHT" in bad.stderr,
              f"bad --size {size} is named: {bad.stderr}")
    bad = run(denox, "make-image", f"{work}/x.npy", "--size", "8x8junk", ok=False)
    check(bad.returncode != 0 and "--size '8x8junk'" in bad.stderr, f"make-image --size: {bad.stderr}")
    bad = run(denox, "make-image", f"{work}/x.npy", "--channels", "-1", ok=False)
    check(bad.returncode != 0 and "internal error" not in bad.stderr and "--channels" in bad.stderr,
          f"make-image --channels -1: {bad.stderr}")
    print("ok: first", first["edges"], "edges measured; again 0; 9-channel", nine["measured_edges"], "new")


if __name__ == "__main__":
    main()
