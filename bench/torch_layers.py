#!/usr/bin/env python3
"""Per-layer reference for the denox conv kernels: OIDN balanced's plain 3x3 convolutions (and
the up+concat ones) at 1920x1088 in PyTorch/cuDNN, fp16, channels-last (NHWC), conv + ReLU, timed
with CUDA events (median of --runs after --warmup), eager and replayed as a CUDA graph. Prints
one table row per layer with TFLOP/s (2 * H * W * Cin * Cout * 9 FLOPs).

  torch_layers.py [--runs 50] [--warmup 20]
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_oidn import time_cuda  # noqa: E402  (median, min, max) of CUDA-event timings

# (name, cin, cout, height, width, upsample+concat: channels of the upsampled input or 0)
LAYERS = [
    ("enc_conv1 (+pool)", 32, 32, 1088, 1920, 0),
    ("enc_conv2 (+pool)", 32, 48, 544, 960, 0),
    ("dec_conv3b", 96, 96, 272, 480, 0),
    ("dec_conv2b", 64, 64, 544, 960, 0),
    ("dec_conv1b", 64, 32, 1088, 1920, 0),
    ("dec_conv3a (up+concat)", 144, 96, 272, 480, 96),
    ("dec_conv2a (up+concat)", 128, 64, 544, 960, 96),
    ("dec_conv1a (up+concat)", 67, 64, 1088, 1920, 64),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    print(f"# torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}", flush=True)
    print(f"{'layer':26} {'shape':>22} {'eager ms':>9} {'graph ms':>9} {'TFLOP/s':>8}")
    for name, cin, cout, h, w, up in LAYERS:
        pool = "pool" in name
        weight = (torch.randn(cout, cin, 3, 3, device=dev) / (3 * cin**0.5)).half().to(memory_format=torch.channels_last)
        bias = torch.randn(cout, device=dev).half() * 0.1
        if up:
            low = torch.rand(1, up, h // 2, w // 2, device=dev).half().to(memory_format=torch.channels_last)
            skip = torch.rand(1, cin - up, h, w, device=dev).half().to(memory_format=torch.channels_last)

            def layer():
                x = torch.cat([F.interpolate(low, scale_factor=2, mode="nearest"), skip], dim=1)
                return F.relu(F.conv2d(x, weight, bias, padding=1))
        else:
            x = torch.rand(1, cin, h, w, device=dev).half().to(memory_format=torch.channels_last)

            def layer():
                y = F.relu(F.conv2d(x, weight, bias, padding=1))
                return F.max_pool2d(y, 2) if pool else y

        with torch.inference_mode():
            eager = time_cuda(layer, args.warmup, args.runs)[0]
            for _ in range(3):
                layer()
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                layer()
            replay = time_cuda(graph.replay, args.warmup, args.runs)[0]
        flop = 2.0 * h * w * cin * cout * 9
        print(f"{name:26} {f'{cin}->{cout} {w}x{h}':>22} {eager:9.3f} {replay:9.3f} {flop / (replay * 1e-3) / 1e12:8.1f}", flush=True)


if __name__ == "__main__":
    main()
