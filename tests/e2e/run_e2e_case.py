"""One end-to-end case: export an OIDN U-Net with PyTorch (tests/python/), then import it and
run it on denox's CPU reference and through libdenox's Vulkan path (fp32 and fp16, validation
layer on) at every size, comparing with PyTorch's fp32 output. One checker process does it all.

CTest runs it (tests/e2e/CMakeLists.txt); by hand:
  run_e2e_case.py --checker BUILD/tests/e2e/denox_e2e_check --work-dir /tmp/e2e --name t \\
      --exporter torch --sizes 37x53,64x97 -- --size small --dynamic --opset 13

Everything after `--` goes to the exporter. The first size is the exporter's --height/--width;
the others are --also sizes (dynamic models only: one import runs them all).
"""

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTERS = {
    "torch": os.path.join(HERE, "..", "python", "export_oidn_torch.py"),
    "dynamo": os.path.join(HERE, "..", "python", "emulate_dynamo_oidn.py"),
}


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def require_modules():
    """Missing PyTorch is a broken setup, not a reason to skip: the test must fail loudly.
    find_spec, not import: importing torch takes seconds, and the exporter imports it anyway."""
    missing = [package for name, package in (("torch", "python3-torch"), ("numpy", "python3-numpy"),
                                             ("onnx", "python3-onnx"))
               if importlib.util.find_spec(name) is None]
    if missing:
        fail(f"{sys.executable} cannot import {', '.join(missing)}: the end-to-end tests compare against "
             f"PyTorch's own output and need them (scripts/setup-deps.sh installs them; "
             f"configure with -DDENOX_E2E_PYTHON=/path/to/python3 to use another interpreter)")


def run(cmd):
    print("$ " + " ".join(cmd), flush=True)
    started = time.time()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # The exporter's torch warnings are noise unless something failed.
    lines = done.stdout.splitlines()
    shown = lines if done.returncode else [l for l in lines if "Warning" not in l and not l.startswith("  ")]
    print("\n".join(shown), flush=True)
    print(f"({time.time() - started:.1f} s, exit {done.returncode})", flush=True)
    return done.returncode


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checker", required=True, help="the denox_e2e_check executable")
    p.add_argument("--work-dir", required=True, help="where models and .npy files go (in the build tree)")
    p.add_argument("--name", required=True, help="the case's folder under --work-dir")
    p.add_argument("--exporter", choices=sorted(EXPORTERS), required=True)
    p.add_argument("--sizes", default="37x53", help="comma-separated HxW, first = exported size")
    p.add_argument("--tolerance", default="1e-4", help="CPU reference: relative L2 against PyTorch")
    p.add_argument("--vulkan-fp32-tolerance", default="1e-4", help="Vulkan fp32: relative L2 against PyTorch")
    p.add_argument("--vulkan-fp16-tolerance", default="2e-2", help="Vulkan fp16: relative L2 against PyTorch")
    p.add_argument("--expect-external", action="store_true",
                   help="the weights must be in <model>.onnx.data, not in the model file")
    p.add_argument("exporter_args", nargs=argparse.REMAINDER)
    args = p.parse_args()
    extra = args.exporter_args[1:] if args.exporter_args[:1] == ["--"] else args.exporter_args
    require_modules()
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    dynamic = "--dynamic" in extra
    if len(sizes) > 1 and not dynamic:
        fail("several --sizes need a --dynamic export")

    case_dir = os.path.join(args.work_dir, args.name)
    shutil.rmtree(case_dir, ignore_errors=True)  # never compare against a previous run's files
    os.makedirs(case_dir)
    model = os.path.join(case_dir, "model.onnx")
    (h, w), more = sizes[0], sizes[1:]
    export = [sys.executable, EXPORTERS[args.exporter], model, "--height", str(h), "--width", str(w)] + extra
    for mh, mw in more:
        export += ["--also", f"{mh}x{mw}"]
    if run(export) != 0:
        fail(f"the {args.exporter} exporter failed (its output is above)")

    if args.expect_external:
        data = model + ".data"
        if not os.path.exists(data) or os.path.getsize(model) > os.path.getsize(data) / 4:
            fail(f"expected the weights in {data}, but the model file holds most of the bytes")

    stem = model[:-5]
    check = [args.checker, model, "--name", args.name, "--tolerance", args.tolerance,
             "--vulkan", "fp32", args.vulkan_fp32_tolerance, "--vulkan", "fp16", args.vulkan_fp16_tolerance]
    check += ["--symbolic"] if dynamic else []
    check += ["--case", stem + ".input.npy", stem + ".output.npy"]
    for mh, mw in more:
        check += ["--case", f"{stem}.{mh}x{mw}.input.npy", f"{stem}.{mh}x{mw}.output.npy"]
    if run(check) != 0:
        fail("denox (CPU reference or Vulkan) does not reproduce PyTorch's output (the FAILED lines above)")
    print("PASS")


if __name__ == "__main__":
    main()
