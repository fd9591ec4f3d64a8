#!/usr/bin/env bash
# Where AllToAll(v)'s LL lines stop paying (include/weft.h WEFT_ALLTOALL_LL_MAX_BYTES, the bytes
# a rank pushes): a copy of the tree with the limit at LIMIT KiB (default 1024; variant_tree of
# dev/device/trees.sh), then weft-bench alltoall -a ll and -a sm, and alltoallv (AUTO: LL per
# pair up to the limit) from 64 KiB to 4 MiB a rank at 2 ranks, beside NCCL. Logs packed under
# $OUT.
# Device tool, 2 GPUs:   [LIMIT=1024] bash dev/collectives/a2a_ll_limit.sh
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
machine_txt
t=/tmp/weft-a2a-ll
variant_tree $t include/weft.h WEFT_ALLTOALL_LL_MAX_BYTES "(${LIMIT:-1024}u << 10)" || exit 1
variant_build $t "$out/build.log" weft-bench weftrun || { tail -20 "$out/build.log"; exit 1; }
for spec in ll:alltoall:-a,ll sm:alltoall:-a,sm v:alltoallv: vsm:alltoallv:-a,sm; do
  IFS=: read -r n op a <<< "$spec"
  timeout 120 $t/build/tools/weftrun -n 2 $t/build/tools/weft-bench $op ${a//,/ } -b 64K -e 4M -f 2 \
    -J "$out/$n.json" > "$out/$n.log" 2>&1 || echo "$n rc=$?"
done
python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
rows = {n: {r["bytes"]: r for r in json.load(open(f"{out}/{n}.json"))["rows"]}
        for n in ["ll", "sm", "v", "vsm"] if os.path.exists(f"{out}/{n}.json")}
print("# bytes a rank: weft us (NCCL us) for alltoall -a ll, -a sm, alltoallv auto, alltoallv -a sm")
for b in sorted(rows["sm"]):
    print(f"{b:>9} " + "  ".join(f"{n}: {rows[n][b]['weft_us']:6.1f} ({rows[n][b]['nccl_us']:5.1f}){' WRONG' if rows[n][b]['wrong'] else ''}"
                                  for n in rows if b in rows[n]))
PY
(cd "$out" && tar czf logs.tgz *.log *.json && rm -f *.log *.json)
