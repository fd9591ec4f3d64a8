#!/usr/bin/env bash
# One GPU call: the unclustered decode kernels launched plain and in clusters of 2 (LCL=2: the
# launch alone, no cluster code), gemm_dev, L2-warm, interleaved medians (dev/gemm/NOTES.md,
# sixth session). Logs under $OUT.
source "$(dirname "$0")/gemm_dev_env.sh"
run() { # m n k config...
  local m=$1 n=$2 k=$3; shift 3
  local args=()
  for c in "$@"; do args+=(--cfg "$c" --cfg "$c,LCL=2"); done
  timeout 100 "$out/gemm_dev" --m "$m" --n "$n" --k "$k" --samples 30 "${args[@]}" 2>&1 |
    tee -a "$out/pairs.log" | grep -E "^  one"
}
for nk in "2752 4096" "4096 2752" "3584 4096" "7168 8192"; do
  run 1 $nk BM=64,BN=64,ST=16,CL=1,EPI=1,KS=1,AR=8
  run 16 $nk BM=64,BN=64,ST=16,CL=1,EPI=1,KS=1,AR=16
  run 64 $nk BM=64,BN=64,ST=13,CL=1,EPI=1,KS=1 BM=64,BN=64,ST=13,CL=1,EPI=1,KS=2
  run 128 $nk BM=64,BN=64,ST=13,CL=1,EPI=1,KS=1 BM=128,BN=64,ST=9,CL=1,EPI=1,KS=1
done
run 256 4096 4096 BM=64,BN=128,ST=9,CL=1,EPI=1,KS=0 BM=128,BN=128,ST=6,CL=1,EPI=2,KS=0
run 512 4096 4096 BM=128,BN=128,ST=6,CL=1,EPI=2,KS=0
