#!/usr/bin/env bash
# AllToAll(v)'s SM form side by side: each variant of VARIANTS is a copy of the tree
# (variant_tree of dev/device/trees.sh) with WEFT_A2A_SLICE_BYTES (the bytes a block copies) set
# to the variant's KiB; a variant named "old<KiB>" also takes $OLD as its kernels/alltoall.cu (e.g.
# `git show <rev>:kernels/alltoall.cu > old_alltoall.cu`, to measure a kernel change). Each: the
# alltoall tests at 2 ranks (first variant only), weft-bench alltoall -a sm and alltoallv from
# 64 KiB to 64 MiB beside NCCL. Logs packed under $OUT; a side-by-side table last.
# Device tool, 2 GPUs:   [VARIANTS="256 64 32"] [OLD=file] bash dev/collectives/a2a_slices.sh
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
machine_txt
variants=${VARIANTS:-256 64 32}
for v in $variants; do
  kb=${v#old}
  variant_tree /tmp/weft-a2a-$v kernels/alltoall.h WEFT_A2A_SLICE_BYTES "(${kb}ull << 10)" || exit 1
  [ "$v" != "$kb" ] && cp "$OLD" /tmp/weft-a2a-$v/kernels/alltoall.cu
  variant_build /tmp/weft-a2a-$v "$out/build-$v.log" weft-bench weftrun gpu_test_alltoall &
done
wait
first=1
for v in $variants; do
  t=/tmp/weft-a2a-$v
  if [ $first = 1 ]; then
    (cd $t/build && timeout 200 ctest -R "gpu_test_alltoall_np2" --output-on-failure) > "$out/ctest-$v.log" 2>&1
    echo "== $v: $(grep -E 'tests passed|tests failed' "$out/ctest-$v.log")"; first=0
  fi
  for spec in a2a:alltoall:-a,sm a2av:alltoallv: a2av32:alltoallv:-d,fp32; do
    IFS=: read -r n op a <<< "$spec"
    timeout 120 $t/build/tools/weftrun -n 2 $t/build/tools/weft-bench $op ${a//,/ } -b 64K -e 64M -f 2 \
      -J "$out/$n-$v.json" > "$out/$n-$v.log" 2>&1 || echo "$n $v rc=$?"
  done
done
python3 - "$out" $variants <<'PY'
import json, sys, os
out, vs = sys.argv[1], sys.argv[2:]
for n in ["a2a", "a2av", "a2av32"]:
    rows = {v: {r["bytes"]: r for r in json.load(open(f"{out}/{n}-{v}.json"))["rows"]}
            for v in vs if os.path.exists(f"{out}/{n}-{v}.json")}
    if not rows: continue
    print(f"# {n}: weft us (NCCL time / weft time) per variant, wrong")
    for b in sorted(next(iter(rows.values()))):
        print(f"{b:>10} " + "  ".join(f"{v}: {rows[v][b]['weft_us']:7.1f} ({rows[v][b]['speedup']:.2f}x){'' if not rows[v][b]['wrong'] else ' WRONG'}"
                                      for v in vs if b in rows[v]))
PY
(cd "$out" && tar czf logs.tgz *.log && rm -f *.log)
