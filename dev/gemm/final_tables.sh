#!/usr/bin/env bash
# The GEMM tables of bench/results (issue 4) in one GPU call: the GEMM GPU tests, weft-bench gemm
# (all shapes), --hooks, and the decode shapes timed as CUDA graphs (-G 1). Logs and JSON under $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
out=${OUT:-gpu-logs}; mkdir -p "$out"; date -u > $out/date.txt; nvidia-smi -L >> $out/date.txt
(cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build -j16) > $out/build.log 2>&1 || { tail -20 $out/build.log; exit 1; }
timeout 200 ctest --test-dir build -R "gpu_test_gemm" --output-on-failure > $out/ctest.log 2>&1; echo "ctest rc=$?" > $out/summary.txt
W="build/tools/weftrun -n 1 build/tools/weft-bench gemm"
timeout 170 $W -J $out/gemm.json > $out/gemm.log 2>&1; echo "gemm rc=$?" >> $out/summary.txt
timeout 150 $W --hooks -n 15 -J $out/hooks.json > $out/hooks.log 2>&1; echo "hooks rc=$?" >> $out/summary.txt
D=""; for m in 1 16 64 128; do for nk in 2752,4096 4096,2752 3584,4096 4096,3584 7168,8192 8192,7168 13312,16384 16384,13312 7392,8192 8192,7392; do D="$D -s $m,$nk"; done; done
timeout 100 $W $D -G 1 -J $out/gemm_graph.json > $out/gemm_graph.log 2>&1; echo "graph rc=$?" >> $out/summary.txt
grep -E "Test +#|tests passed" $out/ctest.log; echo; grep -v "^#  rank" $out/gemm.log | cut -c1-90; grep -v "^#  rank" $out/hooks.log | tail -23 | cut -c60-; grep -v "^#  rank" $out/gemm_graph.log | tail -42 | cut -c1-80; cat $out/summary.txt
