#!/usr/bin/python3
"""`denox run --backend vulkan` in two processes sharing one cache file: the first compiles, the
second compiles no plan and no shader (its --json says so), and both outputs match the CPU
reference (fp32 within 1e-4 relative L2). Then `denox cache export` of that model and `import`
into an empty cache: a third process on it compiles nothing either. The exported file, made
read-only with its directory, as --shipped-cache beside an empty --cache: a fourth process
compiles nothing, `denox cache list FILE` reads it, and it and its directory are unchanged
afterwards; a missing --shipped-cache is an error naming it.

  cli_cache_test.py DENOX_BINARY WORK_DIR
"""
import json
import os
import shutil
import stat
import subprocess
import sys

import numpy as np


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED: {' '.join(args)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def run_failing(*args):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if p.returncode == 0:
        sys.exit(f"FAILED: expected an error from {' '.join(args)}\n{p.stdout}")
    return p.stderr


def rel_l2(a, b):
    return float(np.linalg.norm((a - b).ravel()) / max(np.linalg.norm(b.ravel()), 1e-30))


def main():
    denox, work = sys.argv[1], sys.argv[2]
    if os.path.isdir(f"{work}/game"):
        os.chmod(f"{work}/game", stat.S_IRWXU)  # a previous run's read-only install
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
    ship_read_only(denox, work, model, image, shipped, want)
    print("OK")


def ship_read_only(denox, work, model, image, exported, want):
    """The exported file as a game ships it: read-only, in a read-only directory."""
    game = f"{work}/game"
    os.makedirs(game)
    shipped = f"{game}/denox-cache.sqlite3"
    shutil.copyfile(exported, shipped)
    os.chmod(shipped, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    os.chmod(game, stat.S_IRUSR | stat.S_IXUSR)
    with open(shipped, "rb") as f:
        before = f.read()
    try:
        fourth = json.loads(run(denox, "run", model, "-i", image, "-o", f"{work}/vk3.npy", "--backend", "vulkan", "--precision", "fp32",
                                "--cache", f"{work}/empty.sqlite3", "--shipped-cache", shipped, "--json"))
        print(f"with the shipped cache: {fourth}")
        if fourth["plans_compiled"] != 0 or fourth["shaders_compiled"] != 0 or fourth["shipped_plan_hits"] != 1:
            sys.exit("FAILED: a process with the shipped cache compiled something")
        if rel_l2(np.load(f"{work}/vk3.npy"), want) > 1e-4:
            sys.exit("FAILED: output with the shipped cache differs")
        listing = json.loads(run(denox, "cache", "list", shipped, "--json"))
        if len(listing["plans"]) != 1 or not listing["plans"][0]["intact"]:
            sys.exit(f"FAILED: denox cache list of the shipped file: {listing}")
        if os.listdir(game) != ["denox-cache.sqlite3"]:
            sys.exit(f"FAILED: files appeared beside the shipped cache: {os.listdir(game)}")
        with open(shipped, "rb") as f:
            if f.read() != before:
                sys.exit("FAILED: the shipped cache file changed")
    finally:
        os.chmod(game, stat.S_IRWXU)
    err = run_failing(denox, "run", model, "-i", image, "-o", f"{work}/vk4.npy", "--backend", "vulkan", "--no-cache",
                      "--shipped-cache", f"{game}/missing.sqlite3")
    if f"{game}/missing.sqlite3" not in err or "does not exist" not in err:
        sys.exit(f"FAILED: a missing --shipped-cache should be an error naming it: {err}")


if __name__ == "__main__":
    main()
