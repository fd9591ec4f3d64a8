#!/usr/bin/env bash
# One GPU call for the decode splits whose clusters the GPU cannot hold at once:
# dev/gemm/cluster_fit.sh, then the parent library ($1, see ab_build.sh) against the working tree
# on the shapes the rule moves, both layouts (graphs, cold, 40 samples), then test_gemm.
# Logs under $OUT (tarred); the tables last.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."
o=${OUT:-gpu-logs}; mkdir -p "$o"
OUT=$o/fit REPS=${REPS:-2} bash dev/gemm/cluster_fit.sh > "$o/fit.txt" 2>&1
NK="1,2048,4096 16,2048,4096 64,2048,4096 1,2048,8192 64,2048,6144 64,2048,8192 128,2048,4096 128,2048,6144 128,2048,8192 128,2048,10240"
KN="1,4096,4096 16,4096,5504 64,4096,4096 1,4096,7168 64,4096,7168 1,4096,8192 1,4096,10240 64,4096,14336 1,2048,8192 64,2048,8192 128,2048,4096 128,2048,6144 128,2048,8192"
for l in nk kn; do
  s=$NK; [ $l = kn ] && s=$KN
  OUT=$o/$l SWAP_MS=" " SWAP_SHAPES="$s" SWAP_ITERS=40 SWAP_LAYOUT=$l bash dev/gemm/swap_ab.sh "$1" -G 1 > "$o/ab_$l.txt" 2>&1
done
(cd build && timeout 200 ctest -R "gpu_test_gemm_np1" --output-on-failure > "$o/ctest.log" 2>&1; echo "ctest rc=$?" >> "$o/ctest.log")
grep -h "rank  0" "$o"/nk/new_1.log | head -1
(cd "$o" && tar czf ab.tgz nk kn fit && rm -rf nk kn fit)
cat "$o/fit.txt"; for l in nk kn; do sed -n '/^| m x n/,$p' "$o/ab_$l.txt"; done; tail -2 "$o/ctest.log"
