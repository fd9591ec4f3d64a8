#!/usr/bin/env bash
# The reductions' sum loop (include/weft/reduce.cuh) with other batch sizes: each variant
# BATCH:UNROLL of VARIANTS (default "8:1 2:2 2:4"; 8:1 is the tree's) sets the defaults of
# WEFT_RED_BATCH and WEFT_RED_UNROLL in its own copy of the tree (dev/device/trees.sh), which
# every reducing kernel but GEMM+AR's consumer takes (kernels/reduce.cu: AllReduce one-shot and
# two-shot, ReduceScatter SM and the copy-engine ReduceScatter's reduction; kernels/gemm_rs.cu).
# At 2 ranks BATCH 2 holds every source and destination, so the loop double-buffers with UNROLL
# vectors a buffer (include/weft/reduce.cuh); 8:1 double-buffers 1. Each variant: the
# reduction tests at 2 ranks, then AllReduce (two_shot, sm) and ReduceScatter (sm, ce) from
# 256 KiB to 256 MiB beside NCCL, and gemm_rs. Logs under $OUT; a side-by-side table last.
# Device tool, 2 GPUs:   [VARIANTS="8:1 2:2"] bash dev/collectives/red_batch.sh
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
machine_txt
variants=${VARIANTS:-8:1 2:2 2:4}
for v in $variants; do
  variant_tree /tmp/weft-rb-${v/:/-} include/weft/reduce.cuh WEFT_RED_BATCH "${v%:*}" \
    include/weft/reduce.cuh WEFT_RED_UNROLL "${v#*:}" || exit 1
  variant_build /tmp/weft-rb-${v/:/-} "$out/build-${v/:/-}.log" &
done
wait
for v in $variants; do
  t=/tmp/weft-rb-${v/:/-}
  (cd $t/build && timeout 150 ctest -R "gpu_test_(allreduce|reduce_scatter)_np2" -j 1) > "$out/ctest-${v/:/-}.log" 2>&1
  echo "== $v: $(grep -E 'tests passed|tests failed' "$out/ctest-${v/:/-}.log")"
  for spec in ar_two_shot:allreduce:two_shot ar_sm:allreduce:sm rs_sm:reduce_scatter:sm rs_ce:reduce_scatter:ce; do
    IFS=: read -r n op a <<< "$spec"
    timeout 90 $t/build/tools/weftrun -n 2 $t/build/tools/weft-bench $op -a $a -b 256K -e 256M -f 4 \
      -J "$out/$n-${v/:/-}.json" > "$out/$n-${v/:/-}.log" 2>&1
  done
  timeout 90 $t/build/tools/weftrun -n 2 $t/build/tools/weft-bench gemm_rs -J "$out/gemm_rs-${v/:/-}.json" \
    > "$out/gemm_rs-${v/:/-}.log" 2>&1
done
python3 - "$out" $variants <<'PY'
import json, sys, os
out, vs = sys.argv[1], sys.argv[2:]
for n in ["ar_two_shot", "ar_sm", "rs_sm", "rs_ce"]:
    rows = {}
    for v in vs:
        f = f"{out}/{n}-{v.replace(':', '-')}.json"
        if os.path.exists(f):
            rows[v] = {r["bytes"]: r for r in json.load(open(f))["rows"]}
    if not rows: continue
    print(f"# {n}: us (NCCL/weft time) per variant")
    for b in sorted(next(iter(rows.values()))):
        print(f"{b:>10} " + "  ".join(f"{v} {rows[v][b]['weft_us']:8.1f} ({rows[v][b]['speedup']:.2f}x)"
                                      for v in vs if v in rows and b in rows[v]))
for v in vs:
    f = f"{out}/gemm_rs-{v.replace(':', '-')}.json"
    if os.path.exists(f):
        print("gemm_rs", v, " ".join(f"{r['speedup']:.3f}x" for r in json.load(open(f))["rows"]))
PY
