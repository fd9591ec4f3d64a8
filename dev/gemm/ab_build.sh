#!/usr/bin/env bash
# One GPU call: weft-bench gemm from two commits in the same call, same shapes, alternating runs
# (A B A B), to tell a regression from the GPU's drift. Usage: bash dev/gemm/ab_build.sh <commit or
# directory> [weft-bench gemm args...]; the other build is the working tree. Logs and each run's
# JSON under $OUT;
# dev/gemm/ab_summary.py last (AB_TABLE=1: with every shape's table). AB_ROUNDS: rounds of A B (2).
# The device's copy of .git may predate commits made since (they fail to archive there): then
# `git archive <commit> | tar -x -C ab_old` here (an untracked folder travels with the tree) and
# pass ab_old.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
old=$1; shift
source dev/device/trees.sh
ab_trees "$old" "$out" weft-bench weftrun
for r in $(seq "${AB_ROUNDS:-2}"); do
  for v in old new; do
    b=build; [ $v = old ] && b=/tmp/ab_old/build
    WEFT_CACHE_DIR=/tmp/wc_$v $b/tools/weftrun -n 1 $b/tools/weft-bench gemm "$@" \
      -J "$out/${v}_$r.json" > "$out/${v}_$r.log" 2>&1
    echo "== $v run $r"; grep -E "^ +[0-9]+ " "$out/${v}_$r.log" | awk '{printf "%6s %6s %6s  weft %8s us  ratio %s\n", $1, $2, $3, $5, $8}'
  done
done
python3 dev/gemm/ab_summary.py "$out" ${AB_TABLE:+--table}
