#!/usr/bin/python3
"""`denox run` refuses inputs it cannot use with exit status 1 and a message naming the file
(or, for a wrong channel count, the shapes), on both backends, never "internal error" and never
a run: an integer .npy (the Vulkan backend
uploaded nothing from one and wrote garbage, found by fuzzing), a directory, a device file
(/dev/zero was read until memory ran out) and an image of the wrong channel count.

  cli_run_input_test.py DENOX_BINARY WORK_DIR
"""
import os
import shutil
import struct
import subprocess
import sys


def npy(path, descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload)


def main():
    denox, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model, cache = os.path.join(work, "small.onnx"), os.path.join(work, "cache.sqlite3")
    subprocess.run([denox, "make-model", model, "--arch", "small", "--pad-crop", "--seed", "3"], check=True, capture_output=True)
    h, w = 7, 5
    ints = os.path.join(work, "ints.npy")
    npy(ints, "<i8", (1, 3, h, w), struct.pack("<%dq" % (3 * h * w), *range(1, 3 * h * w + 1)))
    four = os.path.join(work, "four.npy")
    npy(four, "<f4", (1, 4, h, w), struct.pack("<%df" % (4 * h * w), *[0.25 + k / 100 for k in range(4 * h * w)]))
    folder = os.path.join(work, "folder.npy")
    os.makedirs(folder)
    zero = os.path.join(work, "zero.npy")
    os.symlink("/dev/zero", zero)
    # (path, what the message says on the CPU backend, on the Vulkan backend). The CPU backend's
    # executor names the model's input tensor: it also runs models that take integers.
    cases = [(ints, "input 'input' must be float32, got int64", f"input '{ints}' holds integers"),
             (four, "input 'input': axis 1 expects 3, got 4", "input 1x4x7x5: the model takes 1x3xHxW"),
             (folder, f"{folder}: is a directory", f"{folder}: is a directory"),
             (zero, f"{zero}: not a regular file", f"{zero}: not a regular file")]
    failed = []
    for backend in ["cpu", "vulkan"]:
        for path, cpu_why, vulkan_why in cases:
            why = cpu_why if backend == "cpu" else vulkan_why
            out = os.path.join(work, f"out-{backend}-{os.path.basename(path)}")
            args = [denox, "run", model, "-i", path, "-o", out, "--backend", backend] + (["--cache", cache] if backend == "vulkan" else [])
            p = subprocess.run(args, capture_output=True, timeout=120)
            err = p.stderr.decode(errors="replace")
            if p.returncode != 1 or why not in err or "internal error" in err:
                failed.append(f"{backend} {path}: exit {p.returncode}, expected 1 with \"{why}\"; stderr:\n{err}")
            elif os.path.exists(out):
                failed.append(f"{backend} {path}: refused, but an output was written")
    if failed:
        sys.exit("FAILED:\n" + "\n".join(failed))
    print("ok")


if __name__ == "__main__":
    main()
