#!/usr/bin/env bash
# One GPU call: Nsight Compute on gemm_dev's kernel at 128x2752x4096 (BM=64 BN=128): unclustered,
# launched in pairs (LCL=2), and the 2x1 cluster kernel (dev/gemm/NOTES.md, sixth session; the
# run recorded there compared the cluster loading B locally and uncoupled, -DWEFT_GEMM_MC_LOCAL=2,
# a debug define of kernels/gemm.cu at abfa6df). Logs under $OUT.
source "$(dirname "$0")/gemm_dev_env.sh"
c=BM=64,BN=128,ST=9,EPI=1,KS=0
for v in "CL=1" "CL=1,LCL=2" "CL=2"; do
  f="$out/ncu_${v//[=,]/_}.txt"
  timeout 200 ncu --clock-control none -k regex:weft_gemm --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats \
    --section SchedulerStats "$out/gemm_dev" --m 128 --n 2752 --k 4096 --samples 3 --cfg "$c,$v" > "$f" 2>&1
  echo "== $v (rc $?)"
  grep -E "Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Memory Throughput|Cluster Size|Grid Size|Stall|Warp Cycles Per Issued|Issue Slots|No Eligible|Active Warps Per|Mem Busy|Max Bandwidth|L2 Hit|One or More" "$f" | head -30
done
