#!/usr/bin/env bash
# [K, N] B (the overlapped ops' layout) on every large-m width it takes, same run: weft-bench gemm
# -l kn on DESIGN.md's large shapes, the heuristic's choice beside 256, 192 and 128 columns (2x1
# clusters, split tail), so that the choice can be read against the widths it chose from. 192
# became possible on 2026-11-26 (a cluster's CTAs load two and one of its three B boxes): at
# 8192x7392x8192 256 columns run 14.06 waves, 192 19 (0.9 of the last full).
# Device tool, one GPU:   [N=20] bash dev/gemm/kn_widths.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-cache}
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
[ -x build/tools/weft-bench ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j "$(nproc)"; } > "$out/build.log" 2>&1
shapes=""
for s in 8192,8192,8192 8192,2752,4096 8192,4096,2752 8192,3584,4096 8192,4096,3584 8192,7168,8192 \
  8192,8192,7168 8192,13312,16384 8192,16384,13312 8192,7392,8192 8192,8192,7392 8192,1376,4096 \
  8192,4096,1376 8192,1792,4096 8192,4096,1792 8192,3584,8192 8192,8192,3584 8192,6656,16384 \
  8192,16384,6656 8192,3696,8192 8192,8192,3696; do shapes="$shapes -s $s"; done
date -u > "$out/kn_widths.log"
timeout 500 build/tools/weft-bench gemm -l kn -n "${N:-20}" $shapes \
  --config BM=128,BN=256,ST=4,CL=2,EPI=2,TS=4 --config BM=128,BN=192,ST=4,CL=2,EPI=3,TS=4 \
  --config BM=128,BN=128,ST=6,CL=2,EPI=2,TS=4 -J "$out/kn_widths.json" >> "$out/kn_widths.log" 2>&1
echo "kn_widths rc=$?"
grep -v "^#  rank" "$out/kn_widths.log" | tail -26
