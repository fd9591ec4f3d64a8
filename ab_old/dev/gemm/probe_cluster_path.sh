#!/usr/bin/env bash
# One GPU call: what a 2x1 cluster costs on small grids against the same tiles unclustered
# (gemm_dev, cold B, 30 interleaved samples), then --trace of both at 128x2752x4096 (entry, first
# data, mainloop, epilogue). The bisection that found the closing cluster barrier's cost
# (dev/gemm/NOTES.md, seventh session) used debug defines that were never committed
# (MC_LOCAL=2: each CTA loads its own B and arrives locally; EXIT_EARLY: the producer warpgroup
# returns instead of waiting at the closing barrier; SPLITSTART; LOCAL_ARRIVE).
source "$(dirname "$0")/gemm_dev_env.sh"
c=BM=64,BN=128,ST=9,EPI=1,KS=0
for mnk in "128 2752 4096" "128 3584 4096" "256 4096 4096"; do
  set -- $mnk
  timeout 90 "$out/gemm_dev" --m $1 --n $2 --k $3 --samples 30 --check \
    --cfg "$c,CL=1" --cfg "$c,CL=1,LCL=2" --cfg "$c,CL=2" 2>&1 | tee -a "$out/cluster_path.log" | grep -E "^  one|FAIL|rror"
done
timeout 60 "$out/gemm_dev" --m 128 --n 2752 --k 4096 --trace --cfg "$c,CL=1" --cfg "$c,CL=2" 2>&1 |
  tee "$out/trace.log" | grep trace
