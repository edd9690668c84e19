#!/usr/bin/env python3
"""Train OIDN's U-Net on denox_pathtracer's data and export it to ONNX for denox.

  train.py --data DIR --test DIR --minutes 5 --out model.onnx [--arch balanced|small]

Input: 9 channels (colour, albedo, normal, as the path tracer binds them); output: colour.
Loss (HDR-aware, as OIDN's): L1 in the Reinhard space the network works in (see model.py), plus
L1 of the display values (gamma 1/2.2 on top), which weighs dark regions as a viewer does.
Augmentation: random crops, flips, transposes, and a random exposure per crop (input colour and
reference scaled alike) so the model does not learn one brightness.

The learning rate follows the time budget (warm-up, then cosine to zero at the deadline), so a
run of any length ends annealed. At the end it evaluates on --test (held-out scenes: PSNR of
noisy and denoised against the reference, per spp), saves a checkpoint (.pt) and exports ONNX
(dynamic H and W, pad to 16 and crop inside the graph) next to it; results go to a JSON file.
"""

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import Dataset  # noqa: E402
from model import Denoiser, encode_color, export_onnx, save_checkpoint  # noqa: E402
from evaluate import evaluate, print_table  # noqa: E402


def hdr_loss(pred_encoded, ref):
    target = encode_color(ref)
    gamma = lambda v: (v.clamp(min=0) + 1e-4) ** (1 / 2.2)  # noqa: E731
    return F.l1_loss(pred_encoded, target) + F.l1_loss(gamma(pred_encoded), gamma(target))


def learning_rate(base, progress, warmup=0.03):
    if progress < warmup:
        return base * progress / warmup
    return base * 0.5 * (1 + math.cos(math.pi * min(1.0, (progress - warmup) / (1 - warmup))))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="training data set (denox_pathtracer --dataset)")
    p.add_argument("--test", help="held-out data set for the final evaluation (other --seed)")
    p.add_argument("--out", required=True, help="the ONNX file to write (.pt and .json beside it)")
    p.add_argument("--arch", choices=["balanced", "small"], default="balanced")
    p.add_argument("--minutes", type=float, default=5.0, help="training time budget (0: --max-steps alone)")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: the time budget alone)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--crop", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--resume", help="checkpoint (.pt) to start from")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()

    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    started = time.time()
    train = Dataset(args.data, device=device)
    test = Dataset(args.test, device=device) if args.test else None
    print(f"data: {len(train)} training entries (spp {train.spp})"
          + (f", {len(test)} held-out (spp {test.spp})" if test else "") + f", loaded in {time.time() - started:.1f} s")

    model = Denoiser(args.arch, 9).to(device)
    if args.resume:
        model.load_state_dict(torch.load(args.resume, map_location=device)["state"])
    params = sum(p.numel() for p in model.parameters())
    print(f"model: OIDN {args.arch} U-Net, 9 channels in, {params} parameters, device {device}")
    cuda = device.type == "cuda"
    if cuda:
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)

    budget = args.minutes * 60
    start = time.time()
    step = 0
    while True:
        progress = (time.time() - start) / budget if budget > 0 else (0.0 if args.max_steps else 1.0)
        if args.max_steps:
            progress = max(progress, step / args.max_steps)
        if progress >= 1.0:
            break
        for g in opt.param_groups:
            g["lr"] = learning_rate(args.lr, progress)
        x, ref = train.random_batch(args.batch, args.crop, gen, device)
        exposure = torch.exp(torch.empty(x.shape[0], 1, 1, 1, device=device).uniform_(math.log(0.25), math.log(4.0)))
        x = torch.cat([x[:, :3] * exposure, x[:, 3:]], 1)
        ref = ref * exposure
        if cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=cuda):
            pred = model.forward_encoded(model.encode(x))
        loss = hdr_loss(pred.float(), ref)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 500 == 0 or step == 1:
            print(f"step {step}: loss {loss.item():.4f}, lr {opt.param_groups[0]['lr']:.2e}, "
                  f"{time.time() - start:.0f} s", flush=True)
    train_seconds = time.time() - start
    print(f"trained {step} steps in {train_seconds:.0f} s ({step * args.batch / max(train_seconds, 1e-9):.0f} crops/s)")

    model = model.to(memory_format=torch.contiguous_format).eval()
    stem = args.out[:-5] if args.out.endswith(".onnx") else args.out
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    results = {"arch": args.arch, "steps": step, "batch": args.batch, "crop": args.crop, "train_seconds": train_seconds,
               "train_entries": len(train), "train_spp": train.spp}
    if test:
        table = evaluate(model, test, device)
        print_table(table, f"held-out ({args.test}, {len(test)} scenes)")
        results["held_out"] = table
        results["test_entries"] = len(test)
    save_checkpoint(model, stem + ".pt", {"results": results})
    exporter = export_onnx(model, args.out, args.opset)
    results["exporter"] = exporter
    with open(stem + ".json", "w") as f:
        json.dump(results, f, indent=1)
    print(f"wrote {args.out} ({exporter} exporter, opset {args.opset}), {stem}.pt, {stem}.json")


if __name__ == "__main__":
    main()
