#!/usr/bin/python3
"""The int8 precision through the CLI: `denox calibrate` writes a calibration from sample
files; `denox run --backend vulkan --precision int8 --calibration FILE` runs the int8 plan
(emulated on lavapipe through the test hook DENOX_TEST_COOP_EMULATE, validation on) within
4e-2 relative L2 of the CPU reference at an odd size, and reports "int8+fp16"; --precision int8
without --calibration, a damaged calibration file and a wrong sample shape are refused by name.

  cli_int8_test.py DENOX_BINARY WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np


def run(args, env=None, ok=True):
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if ok and (p.returncode != 0 or ("validation error" in p.stderr or "vulkan validation" in p.stderr)):
        sys.exit(f"FAILED: {' '.join(args)}\n{p.stdout}\n{p.stderr}")
    if not ok and p.returncode == 0:
        sys.exit(f"FAILED (should have been refused): {' '.join(args)}\n{p.stdout}")
    return p


def refused(args, reason, env=None):
    p = run(args, env=env, ok=False)
    if reason not in p.stderr:
        sys.exit(f"FAILED: '{reason}' not in the error of {' '.join(args)}:\n{p.stderr}")
    print(f"refused: {p.stderr.strip()}")


def main():
    denox, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model = f"{work}/small.onnx"
    run([denox, "make-model", model, "--arch", "small", "--pad-crop", "--seed", "8"])
    rng = np.random.default_rng(3)
    samples = []
    for i, (w, h) in enumerate([(40, 24), (26, 38), (31, 31)]):
        samples.append(f"{work}/sample{i}.npy")
        np.save(samples[-1], (0.05 + rng.random((1, 3, h, w))).astype(np.float32))
    np.save(f"{work}/x.npy", (0.05 + rng.random((1, 3, 29, 37))).astype(np.float32))
    cal = f"{work}/cal.json"
    args = [denox, "calibrate", model, "-o", cal]
    for s in samples:
        args += ["-i", s]
    print(run(args).stdout.strip())
    if json.load(open(cal))["samples"] != 3:
        sys.exit("FAILED: the calibration does not record 3 samples")

    env = dict(os.environ, DENOX_TEST_COOP_EMULATE="1")
    common = ["run", model, "-i", f"{work}/x.npy", "--backend", "vulkan", "--no-cache", "--validation"]
    out = json.loads(run([denox, *common, "-o", f"{work}/y8.npy", "--precision", "int8", "--calibration", cal, "--json"], env=env).stdout)
    run([denox, "run", model, "-i", f"{work}/x.npy", "-o", f"{work}/ref.npy"])
    got, want = np.load(f"{work}/y8.npy"), np.load(f"{work}/ref.npy")
    err = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    print(f"int8 through the CLI: precision {out['precision']}, relative L2 {err:.4f}")
    if out["precision"] != "int8+fp16":
        sys.exit("FAILED: the plan has no int8 dispatch")
    if not err <= 4e-2:
        sys.exit(f"FAILED: relative L2 {err} > 4e-2")

    refused([denox, *common, "-o", f"{work}/y.npy", "--precision", "int8"], "--precision int8 needs --calibration", env=env)
    damaged = f"{work}/damaged.json"
    with open(damaged, "w") as f:
        f.write(open(cal).read()[:100])
    refused([denox, *common, "-o", f"{work}/y.npy", "--precision", "int8", "--calibration", damaged], "damaged.json", env=env)
    refused([denox, *common, "-o", f"{work}/y.npy", "--precision", "int8", "--calibration", f"{work}/none.json"], "none.json", env=env)
    np.save(f"{work}/nine.npy", (0.05 + rng.random((1, 9, 20, 20))).astype(np.float32))
    refused([denox, "calibrate", model, "-i", f"{work}/nine.npy", "-o", f"{work}/c.json"], "nine.npy")
    print("PASSED")


if __name__ == "__main__":
    main()
