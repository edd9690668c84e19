source .device/env.sh
P=bench/winograd_probe/winograd.comp
for v in "" "#define PROF_NO_MMA 1" "#define PROF_NO_OUT 1" "#define PROF_NO_LOAD 1" "#define PROF_NO_MMA 1
#define PROF_NO_OUT 1"; do
  echo "== ${v:-base}" | tr '\n' ' '; echo
  WINO_DEFINES="$v" WINO_ONLY="2x8 blk ckw64 nt32 cpw2 gc4 ibw1 pf" denox_winograd_probe $P 0 | grep " 132 "
  WINO_DEFINES="$v" WINO_ONLY="4x4 blk ckw64 nt64 cpw1 gc4 ibw1 pf" denox_winograd_probe $P 2 | grep " 132 "
done
