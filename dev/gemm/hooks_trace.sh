#!/usr/bin/env bash
# Where the hooks' fixed 1-2 us a call goes (README.md, hooks): gemm_dev on two short shapes'
# tile configurations (no split tail), plain, wait, notify (sys), both, interleaved with cuBLAS
# (RUNS runs), the first run also traced (per-CTA %globaltimer: entry, first data, mainloops,
# last epilogue, end).
# VARIANT (gemm_dev --cfg items, X_NAME=v: -DWEFT_GEMM_NAME=v) adds wait+V and both+V to every
# run: a kernel variant of the hooks A/B against the kernel as it is (the variant's #if lives in
# a working copy of kernels/gemm/, which gemm_dev compiles at run time).
# Device tool, one GPU:   [RUNS=2] [VARIANT=X_NAME=v] bash dev/gemm/hooks_trace.sh
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/gemm_dev_build.sh"
v=${VARIANT:-}
for r in $(seq 1 "${RUNS:-2}"); do
  for sc in 8192,1376,4096:BM=128,BN=176,ST=4,CL=2,EPI=3,G=8 8192,4096,1792:BM=128,BN=256,ST=4,CL=2,EPI=2,G=8; do
    IFS=: read -r sk c <<< "$sc"; IFS=, read -r m n k <<< "$sk"
    hooks=("" ",WAIT=1" ",NOTIFY=1,X_NOTIFY_SYS=1" ",WAIT=1,NOTIFY=1,X_NOTIFY_SYS=1")
    [ -n "$v" ] && hooks+=(",WAIT=1,$v" ",WAIT=1,NOTIFY=1,X_NOTIFY_SYS=1,$v")
    args=""; for h in "${hooks[@]}"; do args="$args --cfg $c$h"; done
    tr=""; [ "$r" = 1 ] && tr=--trace
    timeout 200 "$out/gemm_dev" --m "$m" --n "$n" --k "$k" --samples 40 --check $args $tr > "$out/trace-$r-${sk//,/x}.log" 2>&1
    echo "== run $r $sk rc=$?"
    grep -E "^  (one|trace)|FAIL|wrong" "$out/trace-$r-${sk//,/x}.log" | sed -e 's/bf16->bf16 B\[N,K\] *//' -e "s/${c},KS=0//" | cut -c1-250
  done
done
(cd "$out" && tar czf logs.tgz *.log && rm -f *.log gemm_dev)
