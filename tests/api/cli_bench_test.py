#!/usr/bin/python3
"""`denox bench`'s clock warm-up: on a CPU device (lavapipe) it does nothing and --json says
clock_warmup_ms 0; forced there (DENOX_TEST_WARM_CPU), several inferences recorded back to back
into one command buffer run under the validation layer without an error, for at least the
wall time asked; the frame time covers the frame's dispatches; a negative --warmup-ms is refused.

  cli_bench_test.py DENOX_BINARY WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys


def bench(denox, model, *extra, env=None):
    args = [denox, "bench", model, "--size", "37x29", "--runs", "2", "--warmup", "1", "--json", "--no-cache", "--validation", *extra]
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if p.returncode != 0 or ("validation error" in p.stderr or "vulkan validation" in p.stderr):
        sys.exit(f"FAILED: {' '.join(args)}\n{p.stdout}\n{p.stderr}")
    return json.loads(p.stdout)


def main():
    denox, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model = f"{work}/small.onnx"
    subprocess.run([denox, "make-model", model, "--arch", "small", "--pad-crop", "--seed", "5"], check=True, capture_output=True)

    plain = bench(denox, model)
    print(f"default: clock_warmup_ms {plain['clock_warmup_ms']} ({plain['clock_warmup_runs']} runs), median {plain['median_ms']:.2f} ms"
          f" on {plain['device']}")
    cpu = "llvmpipe" in plain["device"] or "lavapipe" in plain["device"]
    if cpu and (plain["clock_warmup_ms"] != 0 or plain["clock_warmup_runs"] != 0):
        sys.exit("FAILED: the clock warm-up ran on a CPU device")
    if not cpu and plain["clock_warmup_ms"] <= 0:
        sys.exit("FAILED: no clock warm-up on a GPU")
    if not plain["median_ms"] > 0:
        sys.exit("FAILED: no GPU time")

    # The frame time brackets the whole frame (vkhost::timed_frames: a timestamp before and after
    # record(), none between): not less than half the serialized dispatches' sum, which leaves out
    # the io adapters and the barriers between them.
    timed = bench(denox, model, "--per-dispatch")
    dispatch_sum = sum(d["ms"] for d in timed["per_dispatch"])
    print(f"frame {timed['median_ms']:.3f} ms, serialized dispatches {dispatch_sum:.3f} ms")
    if not (dispatch_sum > 0 and timed["median_ms"] >= 0.5 * dispatch_sum):
        sys.exit("FAILED: the frame time does not cover the frame's dispatches")

    # Forced, each submit holds at least two inferences.
    asked = 3 * plain["median_ms"]
    forced = bench(denox, model, "--warmup-ms", f"{asked:.0f}", env={**os.environ, "DENOX_TEST_WARM_CPU": "1"})
    print(f"forced ({asked:.0f} ms asked): clock_warmup_ms {forced['clock_warmup_ms']}, {forced['clock_warmup_runs']} runs in"
          f" {forced['clock_warmup_submits']} submits")
    if not (forced["clock_warmup_ms"] >= asked and forced["clock_warmup_runs"] >= 2 * forced["clock_warmup_submits"] >= 2):
        sys.exit("FAILED: the forced warm-up did not run several inferences for the time asked")

    p = subprocess.run([denox, "bench", model, "--warmup-ms", "-1"], capture_output=True, text=True)
    if p.returncode == 0 or "warmup-ms" not in p.stderr + p.stdout:
        sys.exit(f"FAILED: --warmup-ms -1 was accepted\n{p.stdout}\n{p.stderr}")
    print("ok")


if __name__ == "__main__":
    main()
