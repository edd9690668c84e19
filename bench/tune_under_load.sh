#!/usr/bin/env bash
# Does a tune that runs while the GPU is busy (a game rendering during tune_in_background) pick
# a worse plan? OIDN balanced at 1920x1088, fp16, the pruned space: a cold MEASURE tune on a
# quiet GPU, one beside a saturating load and one beside a 60 Hz frame-like load
# (bench/gpu_load.py, another process), each into its own cache; then every plan is timed on
# the quiet GPU (denox bench, median of 30), beside the heuristic plan.
# Also the cost of a synced commit on this machine's /tmp (crash-journal timing markers are
# committed with synchronous=FULL since 0.4.2): SQLite in WAL mode, NORMAL against FULL.
#
# Here:   bash bench/stage.sh
# There:  source .device/env.sh; bash bench/tune_under_load.sh OUT_DIR   (carry [".device"])
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/denox-load}; mkdir -p "$out"
work=/tmp/denox-load-work; rm -rf "$work"; mkdir -p "$work"
model="$work/oidn-balanced.onnx"; size=1920x1088
denox make-model --arch balanced --channels 3 --pad-crop "$model" >/dev/null
python3 - "$work" <<'PY' | tee "$out/fsync.txt"
import os, sqlite3, sys, time
for mode in ("NORMAL", "FULL"):
    path = os.path.join(sys.argv[1], f"sync-{mode}.sqlite3")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL"); db.execute(f"PRAGMA synchronous={mode}")
    db.execute("CREATE TABLE m (k TEXT PRIMARY KEY, v TEXT)")
    times = []
    for i in range(200):
        t = time.perf_counter()
        db.execute("BEGIN IMMEDIATE"); db.execute("INSERT OR REPLACE INTO m VALUES (?, ?)", (f"k{i}", "running pid=1 phase=time" * 4)); db.execute("COMMIT")
        times.append(time.perf_counter() - t)
    times.sort()
    print(f"sqlite WAL commit, synchronous={mode:6s}: median {times[100] * 1e3:.3f} ms, p90 {times[180] * 1e3:.3f} ms (200 commits, /tmp)")
PY
tune() {  # name, then the load mode ("" for none)
  local name=$1 load=$2 pid=""
  export DENOX_CACHE_DIR="$work/cache-$name"
  if [ -n "$load" ]; then
    python3 bench/gpu_load.py 400 "$load" > "$out/load-$name.txt" 2>&1 & pid=$!
    for _ in $(seq 60); do grep -q started "$out/load-$name.txt" 2>/dev/null && break; sleep 0.5; done
    if ! kill -0 "$pid" 2>/dev/null || ! grep -q started "$out/load-$name.txt"; then
      echo "$name: the GPU load did not start: $(tail -c 400 "$out/load-$name.txt")"; kill "$pid" 2>/dev/null; return 1
    fi
  fi
  local t0; t0=$(date +%s.%N)
  timeout 150 denox compile "$model" --size "$size" --tuning measure --json --quiet > "$out/compile-$name.json" 2> "$out/compile-$name.log" ||
    echo "$name: compile failed: $(tail -c 400 "$out/compile-$name.log")"
  local t1; t1=$(date +%s.%N)
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; tail -1 "$out/load-$name.txt" | tee -a "$out/tunes.txt"; fi
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); t=r["time_ms"]; print("%-10s tune: edges %4d measured %4d failed %3d predicted %.3f ms  measure %.1f s  process %.1f s" % (sys.argv[2], r["edges"], r["measured_edges"], r["failed_edges"], r["total_ms"], t["measure"]/1000, float(sys.argv[3])))' \
    "$out/compile-$name.json" "$name" "$(python3 -c "print($t1 - $t0)")" | tee -a "$out/tunes.txt"
}
tune quiet ""
tune full full
tune frames frames
echo "## the plans on the quiet GPU (denox bench, median of 30 after 5; balanced $size fp16)" | tee "$out/plans.txt"
printf '%-22s %10s %10s\n' plan median_ms min_ms | tee -a "$out/plans.txt"
for round in 1 2; do  # (twice, interleaved: drift shows as a difference between rounds)
  for name in heuristic quiet full frames; do
    cache="$work/cache-$name"; tuning=measure
    [ "$name" = heuristic ] && { cache="$work/cache-quiet"; tuning=heuristic; }
    DENOX_CACHE_DIR="$cache" denox bench "$model" --size "$size" --tuning "$tuning" --runs 30 --warmup 5 --json > "$out/bench-$name-$round.json" 2> "$out/bench-$name-$round.err" &&
      python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%-22s %10.3f %10.3f" % (sys.argv[2], j["median_ms"], j["min_ms"]))' "$out/bench-$name-$round.json" "$name (round $round)" | tee -a "$out/plans.txt" ||
      echo "$name: bench failed: $(tail -c 300 "$out/bench-$name-$round.err")" | tee -a "$out/plans.txt"
  done
done
# Which dispatches' configurations differ from the quiet tune's (names and configurations only).
for name in quiet full frames; do
  DENOX_CACHE_DIR="$work/cache-$name" denox compile "$model" --size "$size" --tuning measure --json --quiet > "$out/schedule-$name.json" 2>/dev/null
done
python3 - "$out" <<'PY' | tee -a "$out/plans.txt"
import json, sys
def choices(name):
    s = json.load(open(f"{sys.argv[1]}/schedule-{name}.json"))["schedule"]
    return [(d["name"], d.get("config", "")) for d in s]
quiet = choices("quiet")
for name in ("full", "frames"):
    other = choices(name)
    differ = [o for q, o in zip(quiet, other) if q != o]
    print(f"{name}: {len(differ)} of {len(other)} dispatches chose otherwise than the quiet tune" + ("" if len(other) == len(quiet) else f" (the quiet plan has {len(quiet)})"))
    for d in differ:
        print(f"  {d[0][:70]}  {d[1]}")
PY
