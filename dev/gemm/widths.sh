#!/usr/bin/env bash
# The large-m tile widths (src/ops/gemm/config.c: the wave model's per-width costs are fitted to
# this sweep): weft-bench gemm on the 21 large-m shapes of its default list (8192^3 and the per-GPU
# layer shapes at TP=4 and TP=8, m = 8192), every width of WIDTHS (2x1 clusters, split tail)
# beside the heuristic's choice and cuBLAS, interleaved in one run, RUNS runs; the GEMM GPU tests
# first (TESTS=0 skips them). LAYOUT=kn: B [k, n], which takes multiples of 64 only (default
# widths 256, 192, 128). Logs and JSON under $OUT; each run's rows last.
# Device tool, one GPU:
#   [LAYOUT=nk|kn] [WIDTHS="bn,stages,epi ..."] [RUNS=2] [N=15] [TESTS=1] [SHAPES="-s M,N,K ..."] \
#     bash dev/gemm/widths.sh [extra weft-bench gemm args...]
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
machine_txt
build_tree "$out/build.log"
layout=${LAYOUT:-nk}
if [ "$layout" = kn ]; then widths=${WIDTHS:-256,4,2 192,4,3 128,6,2}
else widths=${WIDTHS:-256,4,2 240,4,2 224,4,2 208,4,2 192,4,3 176,4,3 128,6,2}; fi
if [ "${TESTS:-1}" = 1 ]; then
  timeout 250 ctest --test-dir build -R "gpu_test_gemm" --output-on-failure > "$out/ctest.log" 2>&1
  echo "ctest rc=$?" > "$out/summary.txt"
  grep -E "Test +#|tests passed|^FAIL|checks passed" "$out/ctest.log"
fi
S=""
for nk in 8192,8192 2752,4096 4096,2752 3584,4096 4096,3584 7168,8192 8192,7168 13312,16384 \
  16384,13312 7392,8192 8192,7392 1376,4096 4096,1376 1792,4096 4096,1792 3584,8192 8192,3584 \
  6656,16384 16384,6656 3696,8192 8192,3696; do S="$S -s 8192,$nk"; done
C=""
for w in $widths; do
  IFS=, read -r bn st epi <<< "$w"
  C="$C --config BM=128,BN=$bn,ST=$st,CL=2,EPI=$epi,TS=4"
done
W="build/tools/weftrun -n 1 build/tools/weft-bench gemm -l $layout"
for r in $(seq 1 "${RUNS:-2}"); do
  timeout 250 $W ${SHAPES:-$S} -n "${N:-15}" $C "$@" -J "$out/widths$r.json" > "$out/widths$r.log" 2>&1
  echo "widths run $r rc=$?" >> "$out/summary.txt"
done
cat "$out/summary.txt"
for r in $(seq 1 "${RUNS:-2}"); do
  grep -E "^#.*M +N|^ +8192" "$out/widths$r.log" |
    sed 's/BM=128,BN=\([0-9]*\),ST=[0-9],CL=2,EPI=[0-9],TS=4: us, vs weft/\1/g'
done
