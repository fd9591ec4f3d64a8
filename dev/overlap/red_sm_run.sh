#!/usr/bin/env bash
# Builds dev/overlap/red_sm.cu with the in-flight counts of VARIANTS ("UNROLL:BATCH:threads:pipe"
# each; default: GEMM+AR's reducers at 2 ranks, then the reducing kernels of kernels/reduce.cu)
# and runs each: the sum loop's speed on few blocks, alone. Device tool, 2 GPUs:
#   bash dev/overlap/red_sm_run.sh     (log: $OUT/red_sm.log)
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
machine_txt
variants=${VARIANTS:-4:2:256:8 1:8:512:4}
for v in $variants; do
  IFS=: read -r u b th pu <<< "$v"
  nvcc -O3 -arch=sm_90a -I "$variant_src/include" -DWEFT_RED_UNROLL=$u -DWEFT_RED_BATCH=$b \
    -DRED_THREADS=$th -DPIPE_U=$pu -o /tmp/red_sm_${v//:/-} "$variant_src/dev/overlap/red_sm.cu" &
done
wait
for v in $variants; do timeout 60 /tmp/red_sm_${v//:/-}; done 2>&1 | tee "$out/red_sm.log"
