#!/usr/bin/env python3
"""The end-to-end table of bench/run_gpu.sh: denox (Vulkan timestamps) beside PyTorch (CUDA
events) per network and size, with PyTorch's time over denox's.

  side_by_side.py DENOX_JSONL [TORCH_JSONL]

DENOX_JSONL: one `denox bench --json` object per line (its "tuning": heuristic or measure), with
the "arch" that run_gpu.sh adds. TORCH_JSONL: bench/torch_oidn.py --json lines (optional; the
PyTorch columns stay empty without it). Where a run is missing its cell is "-": the table never
invents a number. The ratio columns divide PyTorch's best mode (the lowest median of eager,
CUDA graph and torch.compile) by denox's tuned plan, fp16 and int8.
"""

import json
import sys


def read_jsonl(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    denox = read_jsonl(sys.argv[1])
    torch = read_jsonl(sys.argv[2]) if len(sys.argv) == 3 else []
    # (arch, width, height) -> {column: median ms}
    table = {}
    for r in denox:
        key = (r["arch"], r["width"], r["height"])
        # "int8+fp16": the int8 precision's plan (int8 convs, the image's first and the last in fp16).
        precision = "int8" if r["precision"].startswith("int8") else r["precision"]
        table.setdefault(key, {})[f'{precision} {r["tuning"]}'] = r["median_ms"]
    for r in torch:
        key = (r["arch"], r["width"], r["height"])
        table.setdefault(key, {})[f'torch {r["mode"]}'] = r["median_ms"]
    denox_cols = ["fp16 heuristic", "fp16 measure", "int8 heuristic", "int8 measure"]
    torch_cols = ["torch eager", "torch cuda-graph", "torch compile-maxat"]
    heads = ["fp16 heur", "fp16 tuned", "int8 heur", "int8 tuned", "torch eager", "torch graph", "torch compile", "torch/fp16", "torch/int8"]
    print("## side by side, median ms (denox: Vulkan timestamps; PyTorch: CUDA events, fp16 NHWC cuDNN)")
    print(f"{'arch':10} {'size':>10} " + " ".join(f"{h:>13}" for h in heads))
    for (arch, w, h), cells in sorted(table.items(), key=lambda kv: (kv[0][0], kv[0][1] * kv[0][2])):
        torch_best = min((cells[c] for c in torch_cols if c in cells), default=None)

        def ratio(col):
            return f"{torch_best / cells[col]:12.2f}x" if torch_best and col in cells else f"{'-':>13}"

        values = [f"{cells[c]:13.3f}" if c in cells else f"{'-':>13}" for c in denox_cols + torch_cols]
        print(f"{arch:10} {f'{w}x{h}':>10} " + " ".join(values) + " " + ratio("fp16 measure") + " " + ratio("int8 measure"))


if __name__ == "__main__":
    main()
