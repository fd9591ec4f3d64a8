#!/usr/bin/env bash
# The GEMM tables of bench/results in one GPU call: the GEMM GPU tests, weft-bench gemm (all
# shapes, cold inputs), --hooks, the decode shapes (TP=4 and TP=8 n, k) timed as CUDA graphs
# (-G 1) cold and hot (--hot), and the shape that swings most between runs (8192x2752x4096)
# beside its tile widths, alone and after 8192^3. Logs and JSON under $OUT (logs packed into
# logs.tgz). Over 600 s in all: PART=main (tests, the plain table, hooks) and PART=decode (graphs,
# the swing) split it in two calls.
# RUNS=r repeats the plain table, the hooks table and the decode graphs (cold) r times: a run's
# 20-30 interleaved samples still move the ratios about 1% between runs (the small decode shapes
# 5-15%), so the summary gives each shape's median over the runs beside every run's figure.
#   [PART=main|decode] [RUNS=3] bash dev/gemm/tables.sh
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
machine_txt
build_tree "$out/build.log"
part=${PART:-all} runs=${RUNS:-1}
W="build/tools/weftrun -n 1 build/tools/weft-bench gemm"
if [ $part != decode ]; then
timeout 200 ctest --test-dir build -R "gpu_test_gemm" --output-on-failure > $out/ctest.log 2>&1; echo "ctest rc=$?" > $out/summary.txt
for r in $(seq 1 $runs); do
  timeout 250 $W -J $out/gemm$r.json > $out/gemm$r.log 2>&1; echo "gemm run $r rc=$?" >> $out/summary.txt
done
grep -E "Test +#|tests passed" $out/ctest.log; echo
python3 dev/gemm/runs_median.py plain "$out" $runs
OUT=$out RUNS=$runs N=30 bash dev/gemm/hooks_runs.sh; echo "hooks rc=$?" >> $out/summary.txt
fi
if [ $part != main ]; then
D=""; for m in 1 16 64 128; do for nk in 2752,4096 4096,2752 3584,4096 4096,3584 7168,8192 8192,7168 13312,16384 16384,13312 7392,8192 8192,7392 \
  1376,4096 4096,1376 1792,4096 4096,1792 3584,8192 8192,3584 6656,16384 16384,6656 3696,8192 8192,3696; do D="$D -s $m,$nk"; done; done
for r in $(seq 1 $runs); do
  timeout 200 $W $D -G 1 -J $out/gemm_graph$r.json > $out/gemm_graph$r.log 2>&1; echo "graph run $r rc=$?" >> $out/summary.txt
done
python3 dev/gemm/runs_median.py decode "$out" $runs
timeout 200 $W $D -G 1 --hot > $out/gemm_graph_hot.log 2>&1; echo "graph hot rc=$?" >> $out/summary.txt
C="--config BM=128,BN=256,ST=4,CL=2,EPI=2 --config BM=128,BN=192,ST=4,CL=2,EPI=3 --config BM=128,BN=128,ST=6,CL=2,EPI=2"
timeout 60 $W -s 8192,2752,4096 -n 40 $C > $out/swing.log 2>&1; echo "swing alone rc=$?" >> $out/summary.txt
timeout 60 $W -s 8192,8192,8192 -s 8192,2752,4096 -n 40 $C >> $out/swing.log 2>&1; echo "swing after 8192^3 rc=$?" >> $out/summary.txt
grep -E "^ +8192" $out/swing.log | cut -c1-200
fi
cat $out/summary.txt
(cd $out && tar czf logs.tgz *.log && rm -f *.log)
