#!/usr/bin/env python3
"""Check that denox runs the exported ONNX file as PyTorch runs the checkpoint.

  check_export.py --model model.pt --onnx model.onnx --input DIR/NNNNN_sppS.npy [--size WxH] [--denox PATH]

Feeds one data-set input (H x W x 9, or its top-left WxH: any size, the graph pads to 16 and
crops; small ones keep the CPU reference quick) through PyTorch
and through `denox run` with the CPU reference and the Vulkan backend, and prints the relative
L2 error of each against PyTorch, on radiance and on display values (tonemapped, what a viewer
and the PSNR see). fp16 is judged on display values: the output transfer y / (1 - y) turns fp16's
2^-11 steps near y = 1 into a few percent on the brightest pixels (the light), which the display
curve maps to the same white. Exit status 1 when one is off (fp32 radiance > 1e-3, fp16 display
> 1e-2) or fails: a model that denox cannot run must not ship.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import display, load_checkpoint  # noqa: E402


def rel_l2(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--onnx", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--size", help="WxH: use the top-left part of the input")
    p.add_argument("--denox", default="denox")
    args = p.parse_args()

    model, _ = load_checkpoint(args.model)
    x = np.load(args.input).transpose(2, 0, 1)[None].astype(np.float32)
    if args.size:
        w, h = (int(v) for v in args.size.split("x"))
        x = np.ascontiguousarray(x[:, :, :h, :w])
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        np.save(os.path.join(tmp, "in.npy"), x)
        for backend, precision, tol in [("cpu", "fp32", 1e-3), ("vulkan", "fp32", 1e-3), ("vulkan", "fp16", 1e-2)]:
            out = os.path.join(tmp, f"{backend}-{precision}.npy")
            cmd = [args.denox, "run", args.onnx, "-i", os.path.join(tmp, "in.npy"), "-o", out, "--backend", backend]
            if backend == "vulkan":
                cmd += ["--precision", precision]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"denox {backend} {precision}: FAILED\n{r.stderr.strip()}")
                ok = False
                continue
            got = np.load(out)
            if got.shape != want.shape or not np.isfinite(got).all():
                print(f"denox {backend} {precision}: shape {got.shape} (want {want.shape}) or non-finite values")
                ok = False
                continue
            err = rel_l2(got, want)
            err_display = rel_l2(display(torch.from_numpy(got)).numpy(), display(torch.from_numpy(want)).numpy())
            good = (err_display if precision == "fp16" else err) <= tol
            ok &= bool(good)
            print(f"denox {backend} {precision} vs PyTorch: relative L2 {err:.2e}, on display values {err_display:.2e} "
                  f"({'ok' if good else 'TOO LARGE'})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
