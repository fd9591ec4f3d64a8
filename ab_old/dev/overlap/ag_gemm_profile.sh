#!/usr/bin/env bash
# Where weft_ag_gemm's time goes on one shape (issue 5: 8192x29568x8192 at 4 ranks ran 1.485 ms
# against torch async-TP's 1.450 and cuBLAS alone's 1.451, 2026-11-26): weft's GEMM alone on the
# rank's shape beside cuBLAS (one GPU), then the op beside cuBLAS+NCCL. (The device image has no
# nsys.) Device tool, N GPUs:   [SHAPE=M,N,K] [NP=4] bash dev/overlap/ag_gemm_profile.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-cache}
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
shape=${SHAPE:-8192,29568,8192} np=${NP:-4}
IFS=, read -r m n k <<< "$shape"
date -u > "$out/date.txt"; git log --oneline -1 >> "$out/date.txt"; nvidia-smi -L >> "$out/date.txt"
(cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j "$(nproc)") > "$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; echo BUILD FAILED; exit 1; }
echo "== weft GEMM alone, the rank's shape ${m}x$((n / np))x$k"
timeout 120 build/tools/weft-bench gemm -s "$m,$((n / np)),$k" -n 30 2>&1 | tail -3
echo "== ag_gemm $shape, $np ranks"
timeout 150 build/tools/weftrun -n "$np" build/tools/weft-bench ag_gemm -s "$shape" -n 20 2>&1 | tail -4
