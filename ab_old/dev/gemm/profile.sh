#!/usr/bin/env bash
# One GPU call to see why a GEMM config is slow: SASS of the kernel (wgmma count and the
# waits between them), occupancy (max active clusters), Nsight Compute sections for one launch,
# and single-config timings against cuBLAS. Logs under $OUT. Usage:
#   bash dev/gemm/profile.sh [M N K] [cfg]     (NOVARIANTS=1: skip the variant timings)
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}
mkdir -p "$out/cubin"
rm -f "$out"/cubin/*
M=${1:-8192} N=${2:-8192} K=${3:-8192}
cfg=${4:-BM=128,BN=256,ST=4,CL=2,EPI=2,G=8}
nvidia-smi -L > "$out/machine.txt" 2>&1
nvcc -O2 -std=c++17 -arch=sm_90a -Iinclude dev/gemm/gemm_dev.cu -o "$out/gemm_dev" -lcuda -lnvrtc -lcublas \
  > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; echo BUILD FAILED; exit 1; }
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
