#!/usr/bin/env bash
# One GPU call: what the split tail's code (WEFT_GEMM_TAIL=1, no tail tiles) costs the hook
# variants of the 128-column large-m kernel, in gemm_dev (interleaved, same run).
#   bash dev/gemm/probe_tail_hooks.sh          (logs under $OUT)
source "$(dirname "$0")/gemm_dev_env.sh"
base=BM=128,BN=128,ST=6,CL=2,EPI=2
for s in "8192 1792 4096" "8192 2752 4096"; do
  set -- $s
  "$out/gemm_dev" --m $1 --n $2 --k $3 --samples 20 \
    --cfg $base --cfg $base,X_TAIL=1 --cfg $base,WAIT=1 --cfg $base,WAIT=1,X_TAIL=1 \
    --cfg $base,NOTIFY=1,X_NOTIFY_SYS=1 --cfg $base,NOTIFY=1,X_NOTIFY_SYS=1,X_TAIL=1 > "$out/tail_hooks_$2.log" 2>&1
  echo "== $s"; grep -E "BM=|cuBLAS" "$out/tail_hooks_$2.log" | tail -8
done
