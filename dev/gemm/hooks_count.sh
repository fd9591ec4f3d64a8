#!/usr/bin/env bash
# The wait hook's hand-off from the waiter (thread 96) to the TMA thread, A/B in the same runs
# (issue 4: wait + notify +1.6-2.2% on 8192x1376x4096, the limit 2%): the two mbarriers (ready /
# taken, the waiter one tile ahead at most) against a count in shared memory
# (WEFT_GEMM_WAIT_COUNT: the waiter stores tiles-seen with release, the TMA thread reads it with
# acquire; no arrive, no limit). gemm_dev on the short shapes' tile configurations, plain / wait
# / wait+count / wait+notify / wait+notify+count, RUNS runs, the first with --trace.
# Device tool, one GPU:   [RUNS=3] bash dev/gemm/hooks_count.sh
source "$(dirname "$0")/gemm_dev_env.sh"
date -u > "$out/date.txt"; nvidia-smi -L >> "$out/date.txt"
for r in $(seq 1 "${RUNS:-3}"); do
  for sc in 8192,1376,4096:BM=128,BN=176,ST=4,CL=2,EPI=3,G=8 8192,4096,1792:BM=128,BN=256,ST=4,CL=2,EPI=2,G=8; do
    IFS=: read -r sk c <<< "$sc"; IFS=, read -r m n k <<< "$sk"
    args=""
    for v in "" ",WAIT=1" ",WAIT=1,X_WAIT_COUNT=1" ",WAIT=1,NOTIFY=1,X_NOTIFY_SYS=1" ",WAIT=1,NOTIFY=1,X_NOTIFY_SYS=1,X_WAIT_COUNT=1"; do
      args="$args --cfg $c$v"
    done
    tr=""; [ "$r" = 1 ] && tr=--trace
    timeout 200 "$out/gemm_dev" --m "$m" --n "$n" --k "$k" --samples 40 --check $args $tr > "$out/count-$r-${sk//,/x}.log" 2>&1
    echo "== run $r $sk rc=$?"
    grep -E "^  (one|trace)|FAIL|wrong" "$out/count-$r-${sk//,/x}.log" | sed -e 's/bf16->bf16 B\[N,K\] *//' -e "s/${c},KS=0//" | cut -c1-220
  done
done
(cd "$out" && tar czf logs.tgz *.log && rm -f *.log gemm_dev)
