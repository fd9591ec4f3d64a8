#!/usr/bin/env bash
# Tile widths between the multiples of 64 (kernels/gemm.cu WEFT_GEMM_BOX_COL), one GPU call:
# build, the GEMM GPU tests (every new width with hooks, split tails and the fused scatter), then
# weft-bench gemm on the 21 large-m shapes with every large-m width beside the heuristic and
# cuBLAS (same run, interleaved), RUNS times. Logs under $OUT; the sweep's lines last.
#   bash dev/gemm/width_session.sh [extra weft-bench args...]
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
out=${OUT:-gpu-logs}; mkdir -p "$out"; date -u > $out/date.txt; nvidia-smi -L >> $out/date.txt
(cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build -j16) > $out/build.log 2>&1 || { tail -20 $out/build.log; exit 1; }
W="build/tools/weftrun -n 1 build/tools/weft-bench gemm"
if [ "${TESTS:-1}" = 1 ]; then
  timeout 250 ctest --test-dir build -R "gpu_test_gemm" --output-on-failure > $out/ctest.log 2>&1; echo "ctest rc=$?" > $out/summary.txt
  grep -E "Test +#|tests passed|^FAIL|checks passed" $out/ctest.log
fi
S=""; for nk in 8192,8192 2752,4096 4096,2752 3584,4096 4096,3584 7168,8192 8192,7168 13312,16384 16384,13312 7392,8192 \
  8192,7392 1376,4096 4096,1376 1792,4096 4096,1792 3584,8192 8192,3584 6656,16384 16384,6656 3696,8192 8192,3696; do S="$S -s 8192,$nk"; done
C=""; for w in ${WIDTHS:-256,4,2 240,4,2 224,4,2 208,4,2 192,4,3 176,4,3 128,6,2}; do
  IFS=, read bn st epi <<< "$w"; C="$C --config BM=128,BN=$bn,ST=$st,CL=2,EPI=$epi,TS=4"; done
for r in $(seq 1 ${RUNS:-2}); do
  timeout 200 $W ${SHAPES:-$S} -n ${N:-15} $C "$@" -J $out/widths$r.json > $out/widths$r.log 2>&1; echo "widths run $r rc=$?" >> $out/summary.txt
done
cat $out/summary.txt
for r in $(seq 1 ${RUNS:-2}); do grep -E "^#.*M +N|^ +8192" $out/widths$r.log | sed 's/BM=128,BN=\([0-9]*\),ST=[0-9],CL=2,EPI=[0-9],TS=4: us, vs weft/\1/g'; done
