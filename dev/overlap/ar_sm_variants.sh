#!/usr/bin/env bash
# GEMM + AllReduce's SM form (kernels/gemm_ar.cu) against variants: each variant
# depth:pieceKiB:share of VARIANTS (default "4:512:2 4:128:2 4:512:3": the tree's values, then
# smaller pieces, then a third of the blocks scattering) sets WEFT_COPY_DEPTH
# (include/weft/shmem.cuh), GEMM_AR_PIECE_BYTES and GEMM_AR_SCATTER_SHARE (src/ops/gemm_ar.c) in
# its own copy of the tree (the reducers' in-flight counts follow the world size: gemm_ar.c);
# `weft-bench gemm_ar -a sm` then runs for each at WEFT_COMM_SMS = SMS (default "8 16") consumer
# SMs, 2 ranks, on k = 128 (the AllReduce alone, nearly) and two TP=2 shapes. Logs under $OUT.
# Device tool, 2+ GPUs:   [VARIANTS="d:p:s ..."] [SMS="8 16"] bash dev/overlap/ar_sm_variants.sh
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
machine_txt
variants=${VARIANTS:-4:512:2 4:128:2 4:512:3}
for v in $variants; do
  IFS=: read -r depth piece share <<< "$v"
  tree=/tmp/weft-arsm-${v//:/-}
  variant_tree "$tree" include/weft/shmem.cuh WEFT_COPY_DEPTH "$depth" \
    src/ops/gemm_ar.c GEMM_AR_PIECE_BYTES "(${piece}u << 10)" \
    src/ops/gemm_ar.c GEMM_AR_SCATTER_SHARE "${share:-2}" || exit 1
  variant_build "$tree" "$out/build-${v//:/-}.log" weft-bench weftrun &
done
wait
for g in ${SMS:-8 16}; do
  for v in $variants; do
    t=${v//:/-}
    WEFT_COMM_SMS=$g timeout 120 /tmp/weft-arsm-$t/build/tools/weftrun -n 2 \
      /tmp/weft-arsm-$t/build/tools/weft-bench gemm_ar -a sm -s 8192,4096,128 -s 8192,4096,11008 \
      -s 8192,8192,28672 -n 10 -J "$out/arsm-$t-sms$g.json" > "$out/arsm-$t-sms$g.log" 2>&1
    echo "== depth:piece:share $v, $g consumer SMs (rc=$?)"
    grep -E "^ +8192" "$out/arsm-$t-sms$g.log"
  done
done
tar -C "$out" -czf /tmp/arsm-logs.tgz . && find "$out" -mindepth 1 -delete && mv /tmp/arsm-logs.tgz "$out/"
