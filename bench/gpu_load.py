"""A GPU load beside denox, for bench/tune_under_load.sh: fp16 matmuls in another process.

  python3 bench/gpu_load.py SECONDS full     back-to-back matmuls (the GPU always busy)
  python3 bench/gpu_load.py SECONDS frames   ~10 ms of matmuls every 16.7 ms (a 60 Hz game's frame)

Runs until SECONDS pass or SIGTERM, then prints how many matmuls it ran and the share of the
time the GPU was busy with them, so the table says what the load was.
"""
import signal
import sys
import time

import torch

stop = False


def on_term(signum, frame):  # noqa: ARG001 (signal handler signature)
    global stop
    stop = True


def main() -> None:
    seconds, mode = float(sys.argv[1]), sys.argv[2]
    signal.signal(signal.SIGTERM, on_term)
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.half)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.half)
    a @ b  # (cuBLAS's handle and workspace are made at the first call: not timed)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    one = (time.perf_counter() - start) / 20  # one matmul alone, to size a frame's work
    per_frame = max(1, round(0.010 / one))
    print(f"gpu_load {mode}: started, {one * 1e3:.2f} ms per matmul alone", flush=True)
    begin = time.perf_counter()
    end = begin + seconds
    done, busy = 0, 0.0
    try:
        while not stop and time.perf_counter() < end:
            frame_start = time.perf_counter()
            count = per_frame if mode == "frames" else 16
            for _ in range(count):
                a @ b
            torch.cuda.synchronize()
            done += count
            busy += time.perf_counter() - frame_start
            if mode == "frames":
                rest = 1 / 60 - (time.perf_counter() - frame_start)
                if rest > 0:
                    time.sleep(rest)
    finally:
        elapsed = time.perf_counter() - begin
        print(f"gpu_load {mode}: {done} matmuls of 4096^3 fp16 in {elapsed:.1f} s, GPU busy with them {100 * busy / max(elapsed, 1e-9):.0f}% of it",
              flush=True)


if __name__ == "__main__":
    main()
