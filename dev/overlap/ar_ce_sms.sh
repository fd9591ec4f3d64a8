#!/usr/bin/env bash
# GEMM + AllReduce's copy-engine form at several reduction SM counts (WEFT_COMM_SMS), the M = 8192
# shapes of DESIGN.md's GEMM+RS table, every local GPU; after a build (dev/gpu_session.sh):
#   [SMS="8 16 24"] [NP=4] bash dev/overlap/ar_ce_sms.sh
# Logs and JSON under $OUT (or ./gpu-logs); the table rows last.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
np=${NP:-$(nvidia-smi -L | grep -c '^GPU ')}
shapes=(-s 8192,4096,11008 -s 8192,4096,14336 -s 8192,8192,28672 -s 8192,16384,53248 -s 8192,8192,29568)
for g in ${SMS:-8 16 24}; do
  WEFT_COMM_SMS=$g timeout 150 build/tools/weftrun -n "$np" build/tools/weft-bench gemm_ar -a ce \
    "${shapes[@]}" -J "$out/ar_ce_sms$g.json" > "$out/ar_ce_sms$g.log" 2>&1
  echo "== WEFT_COMM_SMS=$g rc=$?"
  grep -E '^ +8192 ' "$out/ar_ce_sms$g.log"
done
