#!/usr/bin/env bash
# One GPU call: which part of the 2x1 cluster kernel's code path costs ~30% on small decode grids
# (dev/gemm/NOTES.md, sixth session). gemm_dev, L2-warm inputs, 30 interleaved samples; per shape
# the unclustered tile, the cluster kernel with each CTA loading its own B and arriving locally
# (MC_LOCAL=2: only the cluster code path left), then that with the producer warpgroup leaving
# early (EXIT_EARLY: no wait at the closing cluster barrier) and the opening barrier split
# (SPLITSTART), and the multicast kernel with those and LOCAL_ARRIVE. Then --trace of a few, and
# the SASS of the unclustered and MC_LOCAL=2 kernels (cuobjdump) for a diff.
source "$(dirname "$0")/gemm_dev_env.sh"
mkdir -p "$out/cubin"
run() { # m n k base-config
  local c=$4
  timeout 90 "$out/gemm_dev" --m "$1" --n "$2" --k "$3" --samples 30 --check \
    --cfg "$c,CL=1" --cfg "$c,CL=1,X_EXIT_EARLY=1" \
    --cfg "$c,CL=2,X_MC_LOCAL=2" --cfg "$c,CL=2,X_MC_LOCAL=2,X_EXIT_EARLY=1" \
    --cfg "$c,CL=2,X_MC_LOCAL=2,X_EXIT_EARLY=1,X_SPLITSTART=1" \
    --cfg "$c,CL=2" --cfg "$c,CL=2,X_EXIT_EARLY=1" --cfg "$c,CL=2,X_EXIT_EARLY=1,X_SPLITSTART=1" \
    --cfg "$c,CL=2,X_EXIT_EARLY=1,X_SPLITSTART=1,X_LOCAL_ARRIVE=1" 2>&1 |
    tee -a "$out/cluster_path.log" | grep -E "^  one|FAIL|rror"
}
for mnk in "128 2752 4096" "128 3584 4096" "256 4096 4096"; do run $mnk BM=64,BN=128,ST=9,EPI=1,KS=0; done
c=BM=64,BN=128,ST=9,EPI=1,KS=0
GEMM_DEV_CUBIN_DIR="$out/cubin" timeout 60 "$out/gemm_dev" --m 128 --n 2752 --k 4096 --trace \
  --cfg "$c,CL=1" --cfg "$c,CL=2,X_MC_LOCAL=2" --cfg "$c,CL=2,X_MC_LOCAL=2,X_EXIT_EARLY=1,X_SPLITSTART=1" \
  --cfg "$c,CL=2" 2>&1 | tee "$out/trace.log" | grep -E "trace|cubin"
for f in "$out"/cubin/*.cubin; do cuobjdump -sass "$f" > "${f%.cubin}.sass" 2>&1 || echo "cuobjdump failed on $f"; done
ls "$out/cubin" | head
