#!/usr/bin/env python3
"""PyTorch side of the denox benchmarks: the same OIDN U-Net (tests/python/export_oidn_torch.py)
on CUDA, fp16, channels-last (NHWC, cuDNN), timed with CUDA events (median of --runs after
--warmup), in three modes: eager, eager replayed as a CUDA graph, and torch.compile
(max-autotune; slow to compile, so only with --compile).

Prints one table row per (arch, size, mode) and, with --json, one JSON object per line.

  torch_oidn.py --arch balanced --size 1920x1088 --size 1280x720 [--compile] [--json]
"""

import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from export_oidn_torch import OidnUNet, seed_weights  # noqa: E402


def time_cuda(fn, warmup, runs):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", action="append", choices=["balanced", "small"])
    ap.add_argument("--size", action="append", help="WxH (H a multiple of 16: no pad/crop)")
    ap.add_argument("--channels", type=int, default=3)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--compile", action="store_true", help="also torch.compile(mode='max-autotune')")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    archs = args.arch or ["balanced"]
    sizes = args.size or ["1920x1088"]
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    print(f"# torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}", flush=True)
    if not args.json:
        print(f"{'arch':10} {'size':>10} {'mode':>14} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
    for arch in archs:
        model = OidnUNet(arch, args.channels, pad_to_16=False)
        seed_weights(model, 1)
        model = model.to(dev).half().to(memory_format=torch.channels_last).eval()
        for size in sizes:
            w, h = (int(v) for v in size.split("x"))
            x = torch.rand(1, args.channels, h, w, device=dev, dtype=torch.half).to(memory_format=torch.channels_last)
            results = []
            with torch.inference_mode():
                results.append(("eager", time_cuda(lambda: model(x), args.warmup, args.runs)))
                graph = torch.cuda.CUDAGraph()
                static_in = x.clone()
                for _ in range(3):
                    model(static_in)  # warm cuDNN's algorithm choice before capture
                torch.cuda.synchronize()
                with torch.cuda.graph(graph):
                    static_out = model(static_in)  # noqa: F841
                results.append(("cuda-graph", time_cuda(graph.replay, args.warmup, args.runs)))
                if args.compile:
                    # dynamic=False: a static graph per size. Without it the second size a
                    # process compiles turns into a dynamic-shape graph, up to 1.6x slower
                    # (bench/RESULTS.md, twenty-ninth session).
                    # reset(): each size an independent first compile (and clear of Dynamo's
                    # recompile limit, past which it would silently run eager).
                    torch._dynamo.reset()
                    compiled = torch.compile(model, mode="max-autotune", dynamic=False)
                    results.append(("compile-maxat", time_cuda(lambda: compiled(x), args.warmup, args.runs)))
            for mode, (med, lo, hi) in results:
                if args.json:
                    print(json.dumps({"framework": "torch", "arch": arch, "width": w, "height": h, "mode": mode,
                                      "median_ms": med, "min_ms": lo, "max_ms": hi}), flush=True)
                else:
                    print(f"{arch:10} {size:>10} {mode:>14} {med:10.3f} {lo:8.3f} {hi:8.3f}", flush=True)


if __name__ == "__main__":
    main()
