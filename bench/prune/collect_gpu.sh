#!/usr/bin/env bash
# Collects the data prune_configs.py chooses from: exhaustive tuning (`denox compile
# --exhaustive`, every configuration of the whole space measured) of OIDN networks at the given
# sizes into one measurement store, plus the latency of each exhaustive plan.
#
# Here:   bash bench/stage.sh
# There:  source .device/env.sh; bash bench/prune/collect_gpu.sh [arch@WxH ...]
#         (device tool, carry [".device"]; default: balanced@1920x1088 small@1920x1088)
# Output ($OUT or /tmp/denox-collect): measurements.sqlite3 (for prune_configs.py), one
# compile-*.json report and bench-*.json per network.
set -uo pipefail
out=${OUT:-/tmp/denox-collect}
work=/tmp/denox-collect-work
rm -rf "$work"; mkdir -p "$out" "$work"
export DENOX_CACHE_DIR="$work/cache"  # one store: layers shared between runs are measured once
runs=("$@")
[ ${#runs[@]} -eq 0 ] && runs=(balanced@1920x1088 small@1920x1088)
for run in "${runs[@]}"; do
  arch=${run%@*} size=${run#*@}
  model="$work/oidn-$arch.onnx"
  [ -f "$model" ] || denox make-model --arch "$arch" --channels 3 --pad-crop "$model" >/dev/null
  t0=$(date +%s)
  timeout 420 denox compile "$model" --size "$size" --exhaustive --json --quiet > "$out/compile-$arch-$size.json" 2> "$out/compile-$arch-$size.log" ||
    { echo "$run: compile failed or timed out: $(tail -c 400 "$out/compile-$arch-$size.log")"; continue; }
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%-24s edges %5d measured %5d failed %3d predicted %.3f ms" % (sys.argv[2], r["edges"], r["measured_edges"], r["failed_edges"], r["total_ms"]))' \
    "$out/compile-$arch-$size.json" "$run"
  echo "  ($(( $(date +%s) - t0 )) s)"
  denox bench "$model" --size "$size" --tuning exhaustive --runs 30 --warmup 5 --json > "$out/bench-$arch-$size.json" &&
    python3 -c 'import json,sys; print("  exhaustive plan: %.3f ms (denox bench, median of 30)" % json.load(open(sys.argv[1]))["median_ms"])' "$out/bench-$arch-$size.json"
done
# The store without plans and SPIR-V: what prune_configs.py reads.
python3 - "$work/cache/cache.sqlite3" "$out/measurements.sqlite3" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1]); dst = sqlite3.connect(sys.argv[2])
dst.execute("CREATE TABLE measurements (key_digest TEXT PRIMARY KEY, key_text TEXT, result BLOB, checksum TEXT, created_at INTEGER)")
dst.executemany("INSERT INTO measurements VALUES (?,?,?,?,?)", src.execute("SELECT * FROM measurements"))
dst.commit(); dst.execute("VACUUM"); print("measurements:", dst.execute("SELECT COUNT(*) FROM measurements").fetchone()[0])
PY
