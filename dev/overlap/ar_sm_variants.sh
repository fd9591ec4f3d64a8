#!/usr/bin/env bash
# GEMM + AllReduce's SM form (kernels/gemm_ar.cu) against variants of its copy depth and piece
# size: each variant depth:pieceKiB of VARIANTS (default "4:128 8:128 8:512 16:512") sets
# WEFT_COPY_DEPTH (include/weft/shmem.cuh) and GEMM_AR_PIECE_BYTES (src/ops/gemm_ar.c) in its own
# copy of the tree; `weft-bench gemm_ar -a sm` then runs for each at WEFT_COMM_SMS = SMS (default
# "8 16") consumer SMs, 2 ranks, on k = 128 (the AllReduce alone, nearly) and a TP=2 shape.
# Logs under $OUT. Device tool, 2+ GPUs:   bash dev/overlap/ar_sm_variants.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-cache}
out=${OUT:-gpu-logs}
mkdir -p "$out"
src=$(cd "$(dirname "$0")/../.." && pwd)
variants=${VARIANTS:-4:128 8:128 8:512 16:512}
{ date -u; nvidia-smi -L; } > "$out/machine.txt" 2>&1
for v in $variants; do
  tree=/tmp/weft-arsm-${v/:/-}
  rm -rf "$tree" && mkdir -p "$tree"
  (cd "$src" && tar --exclude=./build --exclude=./.git -cf - .) | tar -C "$tree" -xf -
  sed -i "s/^#define WEFT_COPY_DEPTH [0-9]*/#define WEFT_COPY_DEPTH ${v%%:*}/" "$tree/include/weft/shmem.cuh"
  sed -i "s/^#define GEMM_AR_PIECE_BYTES .*/#define GEMM_AR_PIECE_BYTES (${v##*:}u << 10)/" "$tree/src/ops/gemm_ar.c"
  grep -q "^#define WEFT_COPY_DEPTH ${v%%:*}" "$tree/include/weft/shmem.cuh" &&
    grep -q "(${v##*:}u << 10)" "$tree/src/ops/gemm_ar.c" || { echo "sed failed ($v)"; exit 1; }
  (cmake -S "$tree" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release > /dev/null &&
     cmake --build "$tree/build" -j "$(nproc)" --target weft-bench weftrun) > "$out/build-${v/:/-}.log" 2>&1 &
done
wait
for g in ${SMS:-8 16}; do
  for v in $variants; do
    t=${v/:/-}
    WEFT_COMM_SMS=$g timeout 120 /tmp/weft-arsm-$t/build/tools/weftrun -n 2 \
      /tmp/weft-arsm-$t/build/tools/weft-bench gemm_ar -a sm -s 8192,4096,128 -s 8192,4096,11008 \
      -s 8192,8192,28672 -n 10 -J "$out/arsm-$t-sms$g.json" > "$out/arsm-$t-sms$g.log" 2>&1
    echo "== depth:piece $v, $g consumer SMs (rc=$?)"
    grep -E "^ +8192" "$out/arsm-$t-sms$g.log"
  done
done
tar -C "$out" -czf /tmp/arsm-logs.tgz . && find "$out" -mindepth 1 -delete && mv /tmp/arsm-logs.tgz "$out/"
