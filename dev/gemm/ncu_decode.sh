#!/usr/bin/env bash
# One GPU call: Nsight Compute on the decode shapes where weft trails cuBLAS, both libraries'
# kernels from the same weft-bench process (cold inputs): duration, launch configuration (grid,
# cluster, smem), DRAM and L2 throughput, memory workload. Clocks left as they are
# (--clock-control none). Usage: bash dev/gemm/ncu_decode.sh ["-s M,N,K ..."]. Logs under $OUT.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
S=${1:--s 1,4096,2752 -s 64,2752,4096 -s 128,2752,4096}
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
build_tree "$out/build.log" weft-bench weftrun
for s in $S; do
  [ "$s" = -s ] && continue
  f="$out/ncu_${s//,/x}.txt"
  timeout 240 ncu --target-processes all --clock-control none -k regex:"gemm|nvjet|gemv|splitK|reduce|sm90" \
    --launch-count 6 --section SpeedOfLight --section LaunchStats --section MemoryWorkloadAnalysis --section Occupancy \
    build/tools/weftrun -n 1 build/tools/weft-bench gemm -s $s -n 1 -w 0 > "$f" 2>&1
  echo "== $s (rc $?)"
  grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Grid Size|Cluster Size|Dynamic Shared|Registers Per|Threads  |Achieved Occupancy|L2 Hit|Mem Busy|Max Bandwidth" "$f" | grep -v "^==" | head -${LINES_PER:-80}
done
