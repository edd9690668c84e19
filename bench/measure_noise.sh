#!/usr/bin/env bash
# How repeatable the tuner's edge measurements are on the GPU machine (~2 minutes): tunes the
# shipped denoiser in int8 at 1920x1088 twice, each time on a fresh cache, while nvidia-smi logs
# the SM clock every 50 ms; then compares the two caches' measurement rows edge by edge and
# prints the clock over each tuning.
#
# Here:   stage as bench/int8_product.sh says (denox, denox_pathtracer -> .device)
# There:  source .device/env.sh; bash bench/measure_noise.sh     (device tool, carry [".device"])
# Knobs: SIZE (1920x1088), PRECISION (int8), OUT, WORK, MODEL (another ONNX model) with
# CALIBRATION (its calibration file, for int8).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/denox-measure-noise}
work=${WORK:-/tmp/denox-measure-noise-work}
model=${MODEL:-models/oidn_pathtracer_balanced.onnx}
mkdir -p "$out" "$work"
precision=(--precision "${PRECISION:-int8}")
if [ "${PRECISION:-int8}" = int8 ] && [ -n "${CALIBRATION:-}" ]; then
  precision+=(--calibration "$CALIBRATION")
elif [ "${PRECISION:-int8}" = int8 ] && [ -n "${MODEL:-}" ]; then
  echo "measure_noise: MODEL with int8 needs CALIBRATION (its calibration file)" >&2; exit 1
elif [ "${PRECISION:-int8}" = int8 ]; then
  # One random 9-channel sample (color, albedo, normal) is enough to time int8 kernels.
  python3 -c "import numpy as np; np.save('$work/cal.npy', np.random.default_rng(1).random((1, 9, 256, 256), dtype=np.float32))"
  denox calibrate "$model" -i "$work/cal.npy" -o "$work/cal.json" >/dev/null
  precision+=(--calibration "$work/cal.json")
fi
nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu,power.draw,clocks_event_reasons.active --format=csv,noheader -lms 50 > "$out/clocks.csv" &
smi=$!
trap 'kill $smi 2>/dev/null || true' EXIT
for run in 1 2; do
  rm -f "$work/cache$run.sqlite3"
  date +%H:%M:%S.%N > "$out/start$run.txt"
  denox -v compile "$model" --size "${SIZE:-1920x1088}" --cache "$work/cache$run.sqlite3" --quiet "${precision[@]}" > "$out/compile$run.txt" 2> "$out/log$run.txt"
  grep -E "clock keeper:|measure: |timed while" "$out/log$run.txt" || true
  date +%H:%M:%S.%N > "$out/end$run.txt"
  tail -3 "$out/compile$run.txt"
done
kill $smi
python3 - "$work" "$out" <<'PY'
import sqlite3, sys, statistics
work, out = sys.argv[1], sys.argv[2]
def rows(n):
    db = sqlite3.connect(f"{work}/cache{n}.sqlite3")
    return {k: (i, t, bytes(r).decode() if isinstance(r, (bytes, memoryview)) else r)
            for i, (k, t, r, c) in enumerate(db.execute("SELECT key_digest, key_text, result, created_at FROM measurements ORDER BY rowid"))}
for n in (1, 2):  # when each edge was stored, for lining up with clocks.csv
    db = sqlite3.connect(f"{work}/cache{n}.sqlite3")
    with open(f"{out}/measurements{n}.csv", "w") as f:
        for k, t, r, c in db.execute("SELECT key_digest, key_text, result, created_at FROM measurements ORDER BY rowid"):
            f.write(f"{c},{k},{bytes(r).decode() if isinstance(r, (bytes, memoryview)) else r},{t}\n")
a, b = rows(1), rows(2)
pairs = []
for k, (i, t, r) in a.items():
    if k in b and r.startswith("ok ") and b[k][2].startswith("ok "):
        pairs.append((float(b[k][2][3:]) / float(r[3:]), i, float(r[3:]), float(b[k][2][3:]), t))
ratios = sorted(p[0] for p in pairs)
print(f"{len(pairs)} edges measured ok in both runs")
q = lambda f: ratios[min(len(ratios) - 1, int(f * len(ratios)))]
print(f"run2/run1: min {ratios[0]:.3f}  p10 {q(.1):.3f}  median {q(.5):.3f}  p90 {q(.9):.3f}  max {ratios[-1]:.3f}")
print(f"edges off by more than 10%: {sum(1 for r in ratios if abs(r - 1) > .1)}")
print("largest differences (order in run 1, ms run 1, ms run 2, edge):")
for r, i, m1, m2, t in sorted(pairs, key=lambda p: -abs(p[0] - 1))[:15]:
    print(f"  #{i:4d} {m1:8.4f} {m2:8.4f}  {t[-110:]}")
PY
echo "SM clock (MHz) during each tuning:"
python3 - "$out" <<'PY'
import sys, datetime
out = sys.argv[1]
def t(s): return datetime.datetime.strptime(s.strip()[:15], "%H:%M:%S.%f")
samples = []
for line in open(f"{out}/clocks.csv"):
    f = [x.strip() for x in line.split(",")]
    try: samples.append((t(f[0].split(" ")[1]), int(f[1].split()[0]), f[4]))
    except Exception: pass
for run in (1, 2):
    s, e = t(open(f"{out}/start{run}.txt").read()), t(open(f"{out}/end{run}.txt").read())
    c = sorted(x[1] for x in samples if s <= x[0] <= e)
    if c: print(f"  run {run}: {len(c)} samples, min {c[0]}, p10 {c[len(c)//10]}, median {c[len(c)//2]}, max {c[-1]}")
PY
