set -u
tar xJf .device-x/pack.tar.xz
echo "### 3: the case 1.4.309 flagged, first 200 s, GPU-AV on 1.4.363"
(time GPUAV=1 timeout 200 bash bench/conv_layers.sh run --validation "coop family on the GPU's cooperative matrices against the CPU reference") 2>&1 | tail -12
cp $OUT/coop-gpuav.txt $OUT/coop-gpuav-case.txt
grep -c "access out of bounds" $OUT/coop-gpuav-case.txt
echo "### 4: [q8], GPU-AV, 170 s"
(time GPUAV=1 timeout 170 bash bench/conv_layers.sh run --validation "[q8]") 2>&1 | tail -12
