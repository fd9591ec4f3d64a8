#!/usr/bin/env bash
# Where GEMM + AllReduce's SM consumer spends its time: builds a copy of the tree with
# WEFT_GEMM_AR_TRACE=1 (kernels/gemm_ar.cu: every block of the call of epoch 3 prints its waits,
# copies or sums, and releases) and runs `weft-bench gemm_ar -a sm` at WEFT_COMM_SMS = SMS
# (default 16) consumer SMs, 2 ranks, on SHAPE (default 8192,4096,128). Logs under $OUT.
# Device tool, 2+ GPUs:   [SMS=16] [SHAPE=M,N,K] bash dev/overlap/ar_sm_trace.sh
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
machine_txt
tree=/tmp/weft-artrace
variant_tree "$tree" kernels/gemm_ar.cu WEFT_GEMM_AR_TRACE 1 || exit 1
variant_build "$tree" "$out/build.log" weft-bench weftrun || { tail -20 "$out/build.log"; exit 1; }
WEFT_COMM_SMS=${SMS:-16} timeout 120 "$tree/build/tools/weftrun" -n 2 "$tree/build/tools/weft-bench" \
  gemm_ar -a sm -s "${SHAPE:-8192,4096,128}" -n 3 -w 1 > "$out/trace.log" 2>&1
echo "rc=$?"
grep "gemm_ar trace" "$out/trace.log" | sort -k4,4n -k6,6n
grep -E "^ +[0-9]+ +[0-9]+ +[0-9]+ \|" "$out/trace.log"
