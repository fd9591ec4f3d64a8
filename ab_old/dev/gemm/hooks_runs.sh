#!/usr/bin/env bash
# The hooks' cost (issue 4: at most 2% with signals set) from RUNS runs of `weft-bench gemm --hooks
# -n 30` in one GPU call: a run's medians of 30 interleaved samples still move 1-2% between runs
# on the long shapes, so the summary gives each shape's median over the runs beside every run's
# figure. Logs and JSON under $OUT.   [RUNS=3] [N=30] [SHAPES="M,N,K ..."] bash dev/gemm/hooks_runs.sh
# (SHAPES: weft-bench's -s shapes, default all).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
out=${OUT:-gpu-logs}; mkdir -p "$out"; date -u > $out/date.txt; nvidia-smi -L >> $out/date.txt
(cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build -j16) > $out/build.log 2>&1 || { tail -20 $out/build.log; exit 1; }
runs=${RUNS:-3}
shapes=""; for s in ${SHAPES:-}; do shapes="$shapes -s $s"; done
for r in $(seq 1 $runs); do
  timeout 180 build/tools/weftrun -n 1 build/tools/weft-bench gemm --hooks -n ${N:-30} $shapes -J $out/hooks$r.json > $out/hooks$r.log 2>&1
  echo "hooks run $r rc=$?"
done
python3 dev/gemm/runs_median.py hooks "$out" $runs
