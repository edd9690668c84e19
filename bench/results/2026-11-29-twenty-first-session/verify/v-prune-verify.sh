# Same-call comparison: the tuned fp16 plans of the old pruned lists (.device-coop: HEAD 7e4e071's
# build) against the re-pruned ones (.device), OIDN balanced and small at 1920x1088.
set -u
work=/tmp/pv; rm -rf $work; mkdir -p $work
old_env="LD_LIBRARY_PATH=$PWD/.device-coop/lib:$LD_LIBRARY_PATH"
for arch in balanced small; do denox make-model --arch $arch --channels 3 --pad-crop $work/$arch.onnx >/dev/null; done
for v in old new; do
  for arch in balanced small; do
    if [ $v = old ]; then bin="env $old_env $PWD/.device-coop/bin/denox"; else bin=denox; fi
    t0=$(date +%s)
    DENOX_CACHE_DIR=$work/cache-$v $bin compile $work/$arch.onnx --size 1920x1088 --tuning measure --quiet >/dev/null 2>$work/err-$v-$arch.txt || echo "$v $arch: compile failed: $(tail -c 300 $work/err-$v-$arch.txt)"
    echo "$v $arch tuned compile: $(( $(date +%s) - t0 )) s"
  done
done
for round in 1 2; do
  for v in old new; do
    for arch in balanced small; do
      if [ $v = old ]; then bin="env $old_env $PWD/.device-coop/bin/denox"; else bin=denox; fi
      DENOX_CACHE_DIR=$work/cache-$v $bin bench $work/$arch.onnx --size 1920x1088 --tuning measure --runs 30 --warmup 5 --warmup-ms 500 --json > $work/b.json 2>&1 &&
        python3 -c 'import json,sys; print("round %s %-3s %-8s median %.3f ms" % (sys.argv[1], sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))["median_ms"]))' $round $v $arch $work/b.json || { echo "$v $arch bench failed"; cat $work/b.json | tail -5; }
    done
  done
done
