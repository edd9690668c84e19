#!/usr/bin/python3
"""`denox run --backend vulkan` in two processes sharing one cache file: the first compiles, the
second compiles no plan and no shader (its --json says so), and both outputs match the CPU
reference (fp32 within 1e-4 relative L2). Then `denox cache export` of that model and `import`
into an empty cache: a third process on it compiles nothing either.

  cli_cache_test.py DENOX_BINARY WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def rel_l2(a, b):
    return float(np.linalg.norm((a - b).ravel()) / max(np.linalg.norm(b.ravel()), 1e-30))


def main():
    denox, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model, image = f"{work}/small.onnx", f"{work}/in.npy"
    run(denox, "make-model", model, "--arch", "small", "--pad-crop", "--seed", "3")
    rng = np.random.default_rng(1)
    np.save(image, rng.uniform(0.05, 1.0, size=(1, 3, 45, 77)).astype(np.float32))
    run(denox, "run", model, "-i", image, "-o", f"{work}/cpu.npy", "--backend", "cpu")
    want = np.load(f"{work}/cpu.npy")
    cache = f"{work}/cache.sqlite3"
    stats = []
    for k in range(2):
        out = f"{work}/vk{k}.npy"
        stats.append(json.loads(run(denox, "run", model, "-i", image, "-o", out, "--backend", "vulkan", "--precision", "fp32",
                                    "--cache", cache, "--json", "--validation")))
        err = rel_l2(np.load(out), want)
        print(f"process {k}: {stats[-1]}, relative L2 {err:.2e}")
        if not err <= 1e-4:
            sys.exit(f"FAILED: process {k} relative L2 {err}")
    if stats[0]["plans_compiled"] != 1 or stats[0]["shaders_compiled"] == 0:
        sys.exit("FAILED: the first process should compile")
    if stats[1]["plans_compiled"] != 0 or stats[1]["shaders_compiled"] != 0 or stats[1]["plan_cache_hits"] != 1:
        sys.exit("FAILED: the second process compiled something")
    # Shipping: export this model's plans into a file, import it into an empty cache; a process
    # on that cache compiles nothing either.
    listing = json.loads(run(denox, "cache", "--cache", cache, "list", "--json"))
    model_hash = listing["plans"][0]["model_hash"]
    shipped, fresh = f"{work}/shipped.sqlite3", f"{work}/fresh.sqlite3"
    run(denox, "cache", "--cache", cache, "export", shipped, "--model-hash", model_hash[:12])
    run(denox, "cache", "--cache", fresh, "import", shipped)
    third = json.loads(run(denox, "run", model, "-i", image, "-o", f"{work}/vk2.npy", "--backend", "vulkan", "--precision", "fp32",
                           "--cache", fresh, "--json"))
    print(f"after export/import: {third}")
    if third["plans_compiled"] != 0 or third["shaders_compiled"] != 0:
        sys.exit("FAILED: a cache imported from an exported file still compiled something")
    if rel_l2(np.load(f"{work}/vk2.npy"), want) > 1e-4:
        sys.exit("FAILED: output after import differs")
    print("OK")


if __name__ == "__main__":
    main()
