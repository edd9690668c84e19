# Same call: OIDN small's int8 plans at 1280x720, tuned with the old lists (.device-coop: HEAD
# 7e4e071's build) and the new ones (.device), one calibration, two rounds, plus --per-dispatch.
set -u
work=/tmp/q7; rm -rf $work; mkdir -p $work/models
source bench/calibration_images.sh
calib_args=(); calibration_images "$work"
denox make-model --arch small --channels 3 --pad-crop $work/small.onnx >/dev/null
denox calibrate $work/small.onnx "${calib_args[@]}" -o $work/cal.json >/dev/null || echo "calibration failed"
old="env LD_LIBRARY_PATH=$PWD/.device-coop/lib:$LD_LIBRARY_PATH $PWD/.device-coop/bin/denox"
args=($work/small.onnx --size 1280x720 --precision int8 --calibration $work/cal.json)
for v in old new; do
  if [ $v = old ]; then bin=$old; else bin=denox; fi
  DENOX_CACHE_DIR=$work/cache-$v $bin compile "${args[@]}" --tuning measure --json > $work/compile-$v.json 2>&1 || echo "$v compile failed"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], "check:", r.get("check"))' $work/compile-$v.json $v
done
sleep 3
for round in 1 2; do
  for v in old new; do
    if [ $v = old ]; then bin=$old; else bin=denox; fi
    for t in heuristic measure; do
      DENOX_CACHE_DIR=$work/cache-$v $bin bench "${args[@]}" --tuning $t --runs 30 --warmup 5 --warmup-ms 500 --json > $work/b.json 2>&1 &&
        python3 -c 'import json,sys; print("round %s %-3s %-9s median %.3f ms" % (sys.argv[1], sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))["median_ms"]))' $round $v $t $work/b.json || tail -3 $work/b.json
    done
  done
done
for v in old new; do
  if [ $v = old ]; then bin=$old; else bin=denox; fi
  echo "## $v tuned, per dispatch"; DENOX_CACHE_DIR=$work/cache-$v $bin bench "${args[@]}" --tuning measure --runs 20 --per-dispatch 2>&1 | tail -22
done
