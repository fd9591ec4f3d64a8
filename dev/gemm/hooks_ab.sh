#!/usr/bin/env bash
# A kernel variant of the wait hook against the kernel as it is, A/B in the same runs (issue 4:
# wait + notify +1.2-2.4% on 8192x1376x4096, the limit 2%): gemm_dev on the short shapes' tile
# configurations, plain / wait / wait+V / wait+notify / wait+notify+V, RUNS runs of 40 samples,
# the first traced. V is VARIANT, gemm_dev --cfg items (X_NAME=v: -DWEFT_GEMM_NAME=v).
# Tried at stop 24, no change (both reverted): X_WAIT_COUNT=1 (the hand-off as a shared-memory
# count), X_WAIT_SEEN=1 (a signal seen set is not read again). dev/gemm/NOTES.md.
# Device tool, one GPU:   VARIANT=X_WAIT_SEEN=1 [RUNS=3] bash dev/gemm/hooks_ab.sh
source "$(dirname "$0")/gemm_dev_env.sh"
v=${VARIANT:?VARIANT=X_NAME=v}
date -u > "$out/date.txt"; nvidia-smi -L >> "$out/date.txt"
for r in $(seq 1 "${RUNS:-3}"); do
  for sc in 8192,1376,4096:BM=128,BN=176,ST=4,CL=2,EPI=3,G=8 8192,4096,1792:BM=128,BN=256,ST=4,CL=2,EPI=2,G=8; do
    IFS=: read -r sk c <<< "$sc"; IFS=, read -r m n k <<< "$sk"
    args=""
    for h in "" ",WAIT=1" ",WAIT=1,$v" ",WAIT=1,NOTIFY=1,X_NOTIFY_SYS=1" ",WAIT=1,NOTIFY=1,X_NOTIFY_SYS=1,$v"; do
      args="$args --cfg $c$h"
    done
    tr=""; [ "$r" = 1 ] && tr=--trace
    timeout 200 "$out/gemm_dev" --m "$m" --n "$n" --k "$k" --samples 40 --check $args $tr > "$out/ab-$r-${sk//,/x}.log" 2>&1
    echo "== run $r $sk rc=$?"
    grep -E "^  (one|trace)|FAIL|wrong" "$out/ab-$r-${sk//,/x}.log" | sed -e 's/bf16->bf16 B\[N,K\] *//' -e "s/${c},KS=0//" | cut -c1-200
  done
done
(cd "$out" && tar czf logs.tgz *.log && rm -f *.log gemm_dev)
