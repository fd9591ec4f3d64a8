#!/usr/bin/env bash
# The three ops between decode and large m (their sequential form: the GEMM at the layer's m)
# from two libraries in one call: the parent ($1, a directory, e.g. `git archive <rev> | tar -x -C
# ab_old`) and the working tree, old then new then old then new, each beside its own cuBLAS +
# NCCL, at NP ranks (default 2), m in MS (default "160 288 416") x a short and a long layer of
# weft-bench's default shapes, B as LAYOUT (default nk). Logs under $OUT; the data rows last.
#   [NP=2] [MS="160 288 416"] [LAYOUT=nk] bash dev/overlap/mid_m_ab.sh <old tree or commit>
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
old=$1
source dev/device/trees.sh
ab_trees "$old" "$out" weft-bench weftrun
np=${NP:-2}
for op in ag_gemm gemm_rs gemm_ar; do
  if [ $op = ag_gemm ]; then nk="11008,4096 28672,8192"; else nk="4096,11008 8192,28672"; fi
  shapes=""
  for m in ${MS:-160 288 416}; do for x in $nk; do shapes="$shapes -s $m,$x"; done; done
  for r in 1 2; do
    for v in old new; do
      b=build; [ $v = old ] && b=/tmp/ab_old/build
      WEFT_CACHE_DIR=/tmp/wc_$v timeout 150 $b/tools/weftrun -n "$np" $b/tools/weft-bench $op $shapes \
        -l "${LAYOUT:-nk}" -n 20 > "$out/${op}_${v}_$r.log" 2>&1
      echo "$op $v run $r rc=$?"
    done
  done
done
for f in "$out"/*_[12].log; do echo "-- $(basename "$f")"; grep -E '^ +[0-9]+ +[0-9]+ +[0-9]+ \|' "$f"; done
