#!/usr/bin/env python3
"""PSNR of noisy and denoised images against the reference on a held-out data set.

  evaluate.py --model model.pt --data DIR [--json out.json]

PSNR is on display values (Reinhard then gamma 1/2.2, as examples/pathtracer prints it), per
image, averaged per spp. The model runs in PyTorch at full resolution (its forward is what the
ONNX file contains); the same model through denox is checked by tools/train/run_gpu.sh.
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import Dataset  # noqa: E402
from model import load_checkpoint, psnr  # noqa: E402


@torch.no_grad()
def evaluate(model, dataset, device):
    """{spp: {"noisy": mean dB, "denoised": mean dB, "images": n}}"""
    sums = {}
    for inputs, ref in zip(dataset.inputs, dataset.refs):
        ref = ref.float().unsqueeze(0)
        for spp, x in inputs.items():
            x = x.float().unsqueeze(0).to(device)
            y = model(x)
            s = sums.setdefault(spp, {"noisy": 0.0, "denoised": 0.0, "images": 0})
            s["noisy"] += psnr(x[:, :3], ref)
            s["denoised"] += psnr(y, ref)
            s["images"] += 1
    return {spp: {"noisy": s["noisy"] / s["images"], "denoised": s["denoised"] / s["images"], "images": s["images"]}
            for spp, s in sorted(sums.items())}


def print_table(table, title):
    print(f"PSNR vs reference, {title} (dB, display curve):")
    print(f"{'spp':>6} {'noisy':>8} {'denoised':>9} {'images':>7}")
    for spp, r in table.items():
        print(f"{spp:>6} {r['noisy']:8.2f} {r['denoised']:9.2f} {r['images']:7d}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="checkpoint written by train.py (.pt)")
    p.add_argument("--data", required=True, help="held-out data set (denox_pathtracer --dataset, another --seed)")
    p.add_argument("--json", help="write the table here")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    model, _ = load_checkpoint(args.model, args.device)
    data = Dataset(args.data, device=args.device)
    table = evaluate(model, data, args.device)
    print_table(table, f"{args.data}, {len(data)} scenes")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
