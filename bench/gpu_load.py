"""A GPU load beside denox, for bench/tune_under_load.sh: fp16 matmuls in another process.

  python3 bench/gpu_load.py SECONDS full     back-to-back matmuls (the GPU always busy)
  python3 bench/gpu_load.py SECONDS frames   ~10 ms of matmuls every 16.7 ms (a 60 Hz game's frame)

Prints how many matmuls it ran and the GPU share it took, so the table says what the load was.
"""
import sys
import time

import torch


def main() -> None:
    seconds, mode = float(sys.argv[1]), sys.argv[2]
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.half)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.half)
    torch.cuda.synchronize()
    # How long one matmul takes here, alone, to size a frame's work.
    start = time.perf_counter()
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    one = (time.perf_counter() - start) / 20
    per_frame = max(1, round(0.010 / one))
    end = time.perf_counter() + seconds
    done, busy = 0, 0.0
    while time.perf_counter() < end:
        frame_start = time.perf_counter()
        for _ in range(per_frame if mode == "frames" else 16):
            a @ b
        torch.cuda.synchronize()
        done += per_frame if mode == "frames" else 16
        busy += time.perf_counter() - frame_start
        if mode == "frames":
            rest = 1 / 60 - (time.perf_counter() - frame_start)
            if rest > 0:
                time.sleep(rest)
    print(f"gpu_load {mode}: {done} matmuls of 4096^3 fp16 ({one * 1e3:.2f} ms each alone), busy {100 * busy / seconds:.0f}% of {seconds:.0f} s")


if __name__ == "__main__":
    main()
