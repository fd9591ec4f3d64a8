#!/usr/bin/env bash
# One GPU call: a collective suite of weft-bench from two trees in the same call, alternating runs
# (old new old new at each world size), to tell a change from the GPU's drift; the GPU tests named
# by WEFT_AB_TESTS (a ctest regex, default the AllReduce ones) first, on the new tree. Usage:
#   NP="4 2" bash dev/collectives/ab_build.sh <old tree> <weft-bench args...>
# <old tree>: a folder that travels with the working tree, e.g. `git archive <commit> | tar -x -C
# ab_old` here (the device's copy of .git may lack recent commits). Logs under $OUT.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
old=$1; shift
source dev/device/trees.sh
ab_trees "$old" "$out" # (the whole new tree: its tests run first)
(cd build && WEFT_CACHE_DIR=/tmp/wc_new timeout 300 ctest -R "${WEFT_AB_TESTS:-gpu_test_allreduce_np}" 2>&1 |
  grep -E "Test +#|tests passed|tests failed|No tests were found")
for np in ${NP:-4 2}; do
  for r in 1 2; do
    for v in old new; do
      b=build; [ $v = old ] && b=/tmp/ab_old/build
      WEFT_CACHE_DIR=/tmp/wc_$v $b/tools/weftrun -n "$np" $b/tools/weft-bench "$@" > "$out/${v}_np${np}_$r.log" 2>&1
      echo "== np$np $v run $r (rc $?)"; grep -E "^ +[0-9]+ " "$out/${v}_np${np}_$r.log"
    done
  done
done
