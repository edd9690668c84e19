# GPU-assisted validation on the H200 with sid's layer (pushed-descriptor fix).
set -u
tar xJf .device-x/pack.tar.xz
source .device/env.sh
echo "### 1: [coop] OIDN U-Nets at odd sizes, GPU-AV"
(time GPUAV=1 timeout 230 bash bench/conv_layers.sh run --validation "coop family on the GPU: OIDN balanced and small U-Nets at odd sizes") 2>&1 | tail -25
echo "### 2: validate_gpu GPU-AV, balanced 317x203 heuristic"
source .device/vvl/env.sh
(time GPUAV=1 TUNINGS=heuristic SIZES=317x203 ARCHS=balanced OUT=$OUT/vg timeout 300 bash bench/validate_gpu.sh) 2>&1 | tail -30
