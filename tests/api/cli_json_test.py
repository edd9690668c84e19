#!/usr/bin/python3
"""Every --json output of the CLI is one valid JSON object, also when the model and the cache
live under a directory whose name holds a quote, a backslash, a space and a non-ASCII letter:
`denox bench` (which also names its tuning), `run --backend vulkan`, `info` and `cache list`
each print their paths back unchanged. A cache path with a byte that is not UTF-8 (legal on
Linux) comes back with U+FFFD in its place instead of breaking the output.

  cli_json_test.py DENOX_BINARY WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys


def run_json(*args):
    p = subprocess.run(list(args), capture_output=True)
    shown = " ".join(os.fsdecode(a) for a in args)
    if p.returncode != 0:
        sys.exit(f"FAILED: {shown}\n{p.stdout.decode(errors='replace')}\n{p.stderr.decode(errors='replace')}")
    try:
        return json.loads(p.stdout.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        sys.exit(f"FAILED: {shown} printed no valid JSON ({e}):\n{p.stdout!r}")


def expect(what, got, want):
    if got != want:
        sys.exit(f"FAILED: {what} is {got!r}, expected {want!r}")


def main():
    denox, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    odd = os.path.join(work, 'a "quoted" \\ dir \u00e9')
    os.makedirs(odd)
    model, cache = os.path.join(odd, "small.onnx"), os.path.join(odd, "cache.sqlite3")
    subprocess.run([denox, "make-model", model, "--arch", "small", "--pad-crop", "--seed", "3"], check=True, capture_output=True)
    image = os.path.join(odd, "in.pfm")
    subprocess.run([denox, "make-image", image, "--size", "37x29", "--seed", "4"], check=True, capture_output=True)

    b = run_json(denox, "bench", model, "--size", "37x29", "--runs", "2", "--warmup", "1", "--json", "--cache", cache, "--validation")
    expect("bench model", b["model"], model)
    expect("bench tuning", b["tuning"], "heuristic")
    if not (b["median_ms"] > 0 and len(b["per_dispatch"]) == 0 and b["dispatches"] > 0):
        sys.exit(f"FAILED: bench numbers {b}")
    b = run_json(denox, "bench", model, "--size", "37x29", "--runs", "2", "--warmup", "1", "--json", "--cache", cache,
                 "--per-dispatch", "--tuning", "measure")
    expect("bench tuning", b["tuning"], "measure")
    expect("per-dispatch rows", len(b["per_dispatch"]), b["dispatches"])

    r = run_json(denox, "run", model, "-i", image, "-o", os.path.join(odd, "out.pfm"), "--backend", "vulkan", "--cache", cache, "--json")
    expect("run backend", r["backend"], "vulkan")
    expect("run plans compiled (the bench compiled it)", r["plans_compiled"], 0)

    i = run_json(denox, "info", "--cache", cache, "--json")
    expect("info cache", i["cache"], cache)

    listing = run_json(denox, "cache", "list", cache, "--json")
    expect("cache list path", listing["path"], cache)
    if not listing["plans"] or not all(p["intact"] for p in listing["plans"]):
        sys.exit(f"FAILED: cache list {listing}")

    raw = os.fsencode(work) + b"/not-utf8-\xff"
    os.makedirs(raw)
    i = run_json(os.fsencode(denox), b"info", b"--cache", raw + b"/cache.sqlite3", b"--json")
    expect("info cache (not UTF-8)", i["cache"], os.fsdecode(os.fsencode(work)) + "/not-utf8-\ufffd/cache.sqlite3")
    print("ok")


if __name__ == "__main__":
    main()
