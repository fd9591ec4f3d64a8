#!/usr/bin/env bash
# One GPU call: (1) the hooks on the long split-tail shapes with many samples (weft-bench gemm
# --hooks -n 40, twice), whether their 2-3% is the median's noise; (2) in gemm_dev, what the
# producer warpgroup's 40 registers cost the hook variants of the split-tail kernel (TAIL code, no
# split: gemm_dev launches no tail tiles) against 48 producer / 224 consumer registers.
#   bash dev/gemm/probe_hook_regs.sh          (logs under $OUT)
source "$(dirname "$0")/gemm_dev_env.sh"
(cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build -j16) > $out/build_lib.log 2>&1 || { tail -20 $out/build_lib.log; exit 1; }
W="build/tools/weftrun -n 1 build/tools/weft-bench gemm"
for r in $([ "${LONG:-1}" = 1 ] && echo 1 2); do
  timeout 150 $W --hooks -n 40 -s 8192,16384,6656 -s 8192,16384,13312 -s 8192,13312,16384 -s 8192,6656,16384 \
    -J $out/hooks_long$r.json > $out/hooks_long$r.log 2>&1
  grep -E "^ +8192" $out/hooks_long$r.log | cut -c1-20,75-
done
R=${R:-X_PRODUCER_REGS=48,X_CONSUMER_REGS=224}
IFS=';' read -r -a shapes <<< "${SHAPES:-8192 1792 4096 224 2;8192 16384 6656 256 2}"
for s in "${shapes[@]}"; do
  set -- $s
  base=BM=128,BN=$4,ST=4,CL=2,EPI=$5,X_TAIL=1
  "$out/gemm_dev" --m $1 --n $2 --k $3 --samples 20 --cfg $base --cfg $base,$R --cfg $base,WAIT=1 --cfg $base,WAIT=1,$R \
    --cfg $base,NOTIFY=1,X_NOTIFY_SYS=1 --cfg $base,NOTIFY=1,X_NOTIFY_SYS=1,$R > "$out/regs_$2.log" 2>&1
  echo "== $s"; grep -E "BM=|cuBLAS" "$out/regs_$2.log" | tail -7
done
