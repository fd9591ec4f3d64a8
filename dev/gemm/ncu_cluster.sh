#!/usr/bin/env bash
# One GPU call: Nsight Compute on gemm_dev's kernel at 128x2752x4096 (BM=64 BN=128), unclustered
# against the 2x1 cluster loading B locally and uncoupled (-DWEFT_GEMM_MC_LOCAL=2), to find what
# the cluster launch costs (dev/gemm/NOTES.md, sixth session). Logs under $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
nvcc -O2 -std=c++17 -arch=sm_90a -Iinclude dev/gemm/gemm_dev.cu -o "$out/gemm_dev" -lcuda -lnvrtc -lcublas \
  > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; echo BUILD FAILED; exit 1; }
c=BM=64,BN=128,ST=9,EPI=1,KS=0
for v in "CL=1" "CL=2,X_MC_LOCAL=2" "CL=2"; do
  f="$out/ncu_${v//[=,]/_}.txt"
  timeout 200 ncu --clock-control none -k regex:weft_gemm --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
    --section SchedulerStats "$out/gemm_dev" --m 128 --n 2752 --k 4096 --samples 3 --cfg "$c,$v" > "$f" 2>&1
  echo "== $v (rc $?)"
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Memory Throughput|Cluster Size|Grid Size|Stall|Warp Cycles Per Issued|Issue Slots|No Eligible|Active Warps Per|Mem Busy|Max Bandwidth|L2 Hit|One or More" "$f" | head -30
done
