#!/usr/bin/env bash
# The autotuner on the GPU machine (issue 5's numbers): cold compile + tune of OIDN balanced at
# 1920x1088 with the pruned config set and with the whole space (exhaustive), a second compile
# with the same cache (measures nothing), a second model that shares layers, and the latency of
# the heuristic, tuned and exhaustive plans side by side. The measurement store of the
# exhaustive run is copied to $OUT for bench/prune/prune_configs.py.
#
# Here:   bash bench/stage.sh
# There:  source .device/env.sh; bash bench/tune_gpu.sh        (device tool: carry [".device"])
#         DENOX_TUNE_EXHAUSTIVE=0 skips the exhaustive run (minutes) and everything that uses it.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/denox-tune}
work=/tmp/denox-tune-work
rm -rf "$work"; mkdir -p "$out" "$work/models"
size=${DENOX_TUNE_SIZE:-1920x1088}
for arch in balanced small; do
  denox make-model --arch "$arch" --channels 3 --pad-crop "$work/models/oidn-$arch.onnx" >/dev/null
done
denox make-model --arch balanced --channels 9 --pad-crop "$work/models/oidn-balanced-9.onnx" >/dev/null
summary() {
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); t=r["time_ms"]; print("%-34s dispatches %2d  edges %4d  measured %4d  cached %4d  failed %3d  predicted %.3f ms  wall %.1f s (measure %.1f s)" % (sys.argv[2], r["dispatches"], r["edges"], r["measured_edges"], r["cached_edges"], r["failed_edges"], r["total_ms"], t["total"]/1000, t["measure"]/1000))' "$1" "$2"
}
echo "## compile + tune at $size (wall time of the whole denox process in parentheses)"
spaces="pruned exhaustive"; [ "${DENOX_TUNE_EXHAUSTIVE:-1}" = 0 ] && spaces=pruned
for space in $spaces; do
  flag=""; [ "$space" = exhaustive ] && flag="--exhaustive"
  export DENOX_CACHE_DIR="$work/cache-$space"
  t0=$(date +%s.%N)
  timeout 300 denox compile "$work/models/oidn-balanced.onnx" --size "$size" --json --quiet $flag > "$out/compile-$space.json" 2> "$out/compile-$space.log" || echo "compile ($space) failed or timed out: $(tail -c 600 "$out/compile-$space.log")"
  t1=$(date +%s.%N)
  summary "$out/compile-$space.json" "balanced cold ($space)"; echo "  (process $(python3 -c "print('%.1f' % ($t1 - $t0))") s)"
  if [ "$space" = pruned ]; then
    denox compile "$work/models/oidn-balanced.onnx" --size "$size" --json --quiet > "$out/compile-again.json"
    summary "$out/compile-again.json" "balanced again, same cache"
    denox compile "$work/models/oidn-balanced-9.onnx" --size "$size" --json --quiet > "$out/compile-9ch.json"
    summary "$out/compile-9ch.json" "balanced 9-channel after 3-channel"
    denox compile "$work/models/oidn-small.onnx" --size "$size" --json --quiet > "$out/compile-small.json"
    summary "$out/compile-small.json" "small after balanced"
  fi
done
echo "## the chosen schedule (pruned)"
DENOX_CACHE_DIR="$work/cache-pruned" denox compile "$work/models/oidn-balanced.onnx" --size "$size" --quiet 2>&1 | tee "$out/schedule-pruned.txt" | cut -c1-250
echo "## latency of the plans (denox bench, median of 30)"
printf '%-12s %10s\n' tuning median_ms
for t in heuristic measure $([ "$spaces" = pruned ] || echo exhaustive); do
  c="$work/cache-pruned"; [ "$t" = exhaustive ] && c="$work/cache-exhaustive"
  DENOX_CACHE_DIR="$c" denox bench "$work/models/oidn-balanced.onnx" --size "$size" --tuning "$t" --runs 30 --warmup 5 --json > "$out/bench-$t.json" &&
    python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%-12s %10.3f" % (sys.argv[2], j["median_ms"]))' "$out/bench-$t.json" "$t"
done
DENOX_CACHE_DIR="$work/cache-pruned" denox bench "$work/models/oidn-balanced.onnx" --size "$size" --tuning measure --runs 20 --per-dispatch | tail -n +2 > "$out/per-dispatch-measure.txt"
# The exhaustive store, without the plans and SPIR-V, for bench/prune/prune_configs.py.
[ "$spaces" = pruned ] || python3 - "$work/cache-exhaustive/cache.sqlite3" "$out/measurements-exhaustive.sqlite3" <<'PY'
import sqlite3, sys
src = sqlite3.connect(sys.argv[1]); dst = sqlite3.connect(sys.argv[2])
dst.execute("CREATE TABLE measurements (key_digest TEXT PRIMARY KEY, key_text TEXT, result BLOB, checksum TEXT, created_at INTEGER)")
dst.executemany("INSERT INTO measurements VALUES (?,?,?,?,?)", src.execute("SELECT * FROM measurements"))
dst.commit(); dst.execute("VACUUM"); print("exhaustive measurements:", dst.execute("SELECT COUNT(*) FROM measurements").fetchone()[0])
PY
# What the driver reports for the chosen pipelines (registers, shared memory), when staged.
if command -v denox_pipeline_stats >/dev/null; then
  for space in $spaces; do
    DENOX_CACHE_DIR="$work/cache-$space" denox compile "$work/models/oidn-balanced.onnx" --size "$size" --quiet --plan "$work/$space.plan" >/dev/null &&
      denox_pipeline_stats "$work/$space.plan" > "$out/pipeline-stats-$space.txt"
  done
fi
echo "done"
