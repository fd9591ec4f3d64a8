#!/usr/bin/env bash
# One GPU call to see why a GEMM config is slow: SASS of the kernel (wgmma count and the
# waits between them), occupancy (max active clusters), Nsight Compute sections for one launch,
# and single-config timings against cuBLAS. Logs under $OUT. Usage:
#   bash dev/gemm/profile.sh [M N K] [cfg]     (NOVARIANTS=1: skip the variant timings)
# cfg is a gemm_dev --cfg (hooks included: ...,WAIT=1 or ...,NOTIFY=1,X_NOTIFY_SYS=1 profiles a
# hook's kernel; X_NAME=v compiles the kernel with -DWEFT_GEMM_NAME=v). NCU_KERNELS (a regex,
# default weft_gemm), NCU_COUNT and NCU_LINES shape the Nsight Compute part.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
M=${1:-8192} N=${2:-8192} K=${3:-8192}
cfg=${4:-BM=128,BN=256,ST=4,CL=2,EPI=2,G=8}
source "$(dirname "$0")/gemm_dev_build.sh"
mkdir -p "$out/cubin"
rm -f "$out"/cubin/*
G="$out/gemm_dev"
GEMM_DEV_CUBIN_DIR="$out/cubin" timeout 120 $G --m $M --n $N --k $K --cfg "$cfg" --check > "$out/one.log" 2>&1
cat "$out/one.log"
for c in "$out"/cubin/*.cubin; do cuobjdump -sass "$c" > "${c%.cubin}.sass" 2>&1; done
s=$(ls "$out"/cubin/*.sass | head -1)
echo "---- SASS $s: $(grep -c HGMMA "$s") HGMMA, $(grep -c 'WARPGROUP.DEPBAR' "$s") DEPBAR, $(grep -c 'WARPGROUP.ARRIVE' "$s") ARRIVE, $(grep -c 'SYNCS' "$s") SYNCS, $(grep -c 'LDL\|STL' "$s") local"
grep -n "HGMMA\|WARPGROUP\|SYNCS.PHASECHK\|BAR.SYNC\|UTMALDG\|WARPSYNC" "$s" | head -60
if command -v ncu > /dev/null; then
  timeout 240 ncu --target-processes all -k regex:"${NCU_KERNELS:-weft_gemm}" -c ${NCU_COUNT:-1} --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats \
    --section Occupancy $G --m $M --n $N --k $K --cfg "$cfg" --samples 1 > "$out/ncu.txt" 2>&1
  echo "---- ncu (rc $?)"; grep -v "^==PROF==" "$out/ncu.txt" | grep -E "Throughput|Pipe|Issue|Stall|Warp Cycles|Eligible|Active|Occupancy|Cluster|Grid|Block|Registers|Shared|Duration|L2 Hit|Hit Rate|DRAM|Tensor|Busy|ERR|rror" | head -${NCU_LINES:-70}
else echo "no ncu"; fi
[ -n "${NOVARIANTS:-}" ] && exit 0
echo "---- variants"
for v in "BM=128,BN=256,ST=4,CL=1,EPI=2,G=8" "BM=128,BN=256,ST=3,CL=2,EPI=4,G=8" "BM=128,BN=128,ST=6,CL=2,EPI=2,G=8" "BM=128,BN=256,ST=4,CL=2,EPI=2,G=16"; do
  timeout 60 $G --m $M --n $N --k $K --cfg "$v" --samples 9 2>&1 | grep -E "one |max active|FAIL"
done
