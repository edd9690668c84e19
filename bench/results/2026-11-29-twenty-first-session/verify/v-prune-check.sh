# The re-pruned lists' tuned fp16 plans against the CPU reference (random image, an odd size and
# the benchmark size), OIDN small and balanced.
set -u
work=/tmp/pc; rm -rf $work; mkdir -p $work
export DENOX_CACHE_DIR=$work/cache
for arch in small balanced; do
  denox make-model --arch $arch --channels 3 --pad-crop $work/$arch.onnx >/dev/null
  for size in 957x541 1920x1088; do
    denox make-image $work/in.pfm --size $size --seed 11 >/dev/null
    denox run $work/$arch.onnx -i $work/in.pfm -o $work/cpu.npy --backend cpu >/dev/null || echo "cpu failed"
    denox run $work/$arch.onnx -i $work/in.pfm -o $work/vk.npy --backend vulkan --precision fp16 --tuning measure >/dev/null 2>$work/err.txt || { echo "vulkan failed"; tail -5 $work/err.txt; }
    python3 -c 'import numpy as np,sys; a=np.load(sys.argv[1]); b=np.load(sys.argv[2]); print("%-8s %-9s fp16 tuned: relative L2 %.2e, NaN %s" % (sys.argv[3], sys.argv[4], np.linalg.norm(a-b)/np.linalg.norm(a), bool(np.isnan(b).any())))' $work/cpu.npy $work/vk.npy $arch $size
  done
done
