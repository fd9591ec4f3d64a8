#!/usr/bin/env bash
# The hooks' cost with signals set (the target: at most 2%) from RUNS runs of `weft-bench gemm
# --hooks -n 30` in one GPU call: a run's medians of 30 interleaved samples still move 1-2%
# between runs on the long shapes, so the summary gives each shape's median over the runs beside
# every run's figure. Logs and JSON under $OUT.
#   [RUNS=3] [N=30] [SHAPES="M,N,K ..."] bash dev/gemm/hooks_runs.sh   (SHAPES default: all)
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
[ -f "$out/machine.txt" ] || machine_txt
build_tree "$out/build.log" weft-bench weftrun
runs=${RUNS:-3}
shapes=""; for s in ${SHAPES:-}; do shapes="$shapes -s $s"; done
for r in $(seq 1 $runs); do
  timeout 180 build/tools/weftrun -n 1 build/tools/weft-bench gemm --hooks -n ${N:-30} $shapes -J $out/hooks$r.json > $out/hooks$r.log 2>&1
  echo "hooks run $r rc=$?"
done
python3 dev/gemm/runs_median.py hooks "$out" $runs
