#!/usr/bin/env bash
# One GPU call: a 2x1 cluster's cost on small grids (gemm_dev, L2-warm inputs, 30 interleaved
# samples): per shape the unclustered tile, the same kernel launched in clusters of 2 (LCL=2: the
# launch and the CTAs' placement alone), and the cluster kernel multicasting B. (The debug
# defines that also separated the coupling and the half-size B boxes, WEFT_GEMM_MC_LOCAL and
# WEFT_GEMM_B_SPLIT, are in kernels/gemm.cu at commit abfa6df: dev/gemm/NOTES.md, sixth session.)
source "$(dirname "$0")/gemm_dev_env.sh"
run() { # m n k base-config
  local c=$4
  timeout 60 "$out/gemm_dev" --m "$1" --n "$2" --k "$3" --samples 30 --check \
    --cfg "$c,CL=1" --cfg "$c,CL=1,LCL=2" --cfg "$c,CL=2" 2>&1 |
    tee -a "$out/coupling.log" | grep -E "^  one"
}
for mnk in "128 2752 4096" "128 3584 4096" "256 4096 4096"; do run $mnk BM=64,BN=128,ST=9,EPI=1,KS=0; done
