R=$PWD
for f in .device-coop/debs/*.deb; do dpkg -x "$f" /; done; ldconfig
export LD_LIBRARY_PATH="$R/.device-coop/lib" PATH="$R/.device-coop/bin:$PATH"
[ -e /usr/share/vulkan/icd.d/nvidia_icd.json ] || [ -e /etc/vulkan/icd.d/nvidia_icd.json ] || export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
source $R/.device-coop/vvl/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cd /tmp
for t in runtime api; do
  echo "== $t tests under the layer"; timeout 200 $R/.device-coop/bin/denox_${t}_tests > $OUT/$t-tests.txt 2>&1; echo "rc=$?"
  grep -c "vulkan validation" $OUT/$t-tests.txt; grep -B3 -A10 "FAILED" $OUT/$t-tests.txt | head -30 | cut -c1-400; tail -2 $OUT/$t-tests.txt
done
cd $R
echo "== [coop],[q8] tests under the layer"; DENOX_COOP_VALIDATION=1 timeout 300 .device-coop/bin/denox_kernel_tests "[coop],[q8]" > $OUT/coop-q8-tests.txt 2>&1; echo "rc=$?"
grep -i "vulkan validation\|validation layer\|FAILED" $OUT/coop-q8-tests.txt | head; tail -2 $OUT/coop-q8-tests.txt
echo "== validate_gpu heuristic"; OUT=$OUT/validate TUNINGS=heuristic timeout 150 bash bench/validate_gpu.sh 2>&1 | grep -v "^/\|^name\|^sum" | tail -16
echo "== validate_gpu measure"; OUT=$OUT/validate-measure TUNINGS=measure SIZES=317x203 timeout 200 bash bench/validate_gpu.sh 2>&1 | grep "relative\|FAIL\|validate_gpu"
cd $OUT && tar czf validate.tgz validate validate-measure && rm -rf validate validate-measure
