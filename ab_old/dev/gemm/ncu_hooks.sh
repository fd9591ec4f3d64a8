#!/usr/bin/env bash
# Where the hooks' fixed cost goes on a short shape (issue 4: wait + notify +2.4% on H100 at
# 8192x1376x4096): Nsight Compute's issue-stall breakdown (every smsp__average_warps_issue_stalled_*
# per issued instruction), duration and instructions of one launch of gemm_dev's kernel, plain and
# with each hook, and the kernels' code sizes. Device tool, one GPU:
#   [SHAPE="8192 1376 4096"] [CFG=BM=128,BN=176,ST=4,CL=2,EPI=3,G=8] bash dev/gemm/ncu_hooks.sh
source "$(dirname "$0")/gemm_dev_env.sh"
read -r M N K <<< "${SHAPE:-8192 1376 4096}"
c=${CFG:-BM=128,BN=176,ST=4,CL=2,EPI=3,G=8}
date -u > "$out/date.txt"; nvidia-smi -L >> "$out/date.txt"
for h in plain wait notify both; do
  case $h in plain) x="";; wait) x=",WAIT=1";; notify) x=",NOTIFY=1,X_NOTIFY_SYS=1";; both) x=",WAIT=1,NOTIFY=1,X_NOTIFY_SYS=1";; esac
  mkdir -p "$out/cubin_$h"
  GEMM_DEV_CUBIN_DIR="$out/cubin_$h" timeout 200 ncu --clock-control none -k regex:weft_gemm -s 3 -c 1 \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg" \
    "$out/gemm_dev" --m "$M" --n "$N" --k "$K" --cfg "$c$x" --samples 1 > "$out/ncu_$h.log" 2>&1
  echo "== $h rc=$? code $(for f in "$out"/cubin_$h/*.cubin; do size -A "$f" | awk '/text.weft_gemm /{print $2}'; done | head -1) bytes"
done
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
vals = {}
for h in ("plain", "wait", "notify", "both"):
    d = {}
    for l in open(f"{out}/ncu_{h}.log"):
        m = re.match(r"\s+(\S+)\s+(\S+)\s+([\d,.]+)\s*$", l)
        if m: d[m.group(1)] = float(m.group(3).replace(",", ""))
    vals[h] = d
keys = sorted(set().union(*vals.values()))
print(f"{'metric':75s}" + "".join(f"{h:>10s}" for h in vals))
for k in keys:
    v = [vals[h].get(k, float('nan')) for h in vals]
    if all(x == x and abs(x) < 1e-3 for x in v): continue
    print(f"{k.replace('smsp__average_warps_issue_stalled_', 'stall ').replace('_per_issue_active.ratio', ''):75s}" + "".join(f"{x:10.3f}" for x in v))
PY
(cd "$out" && tar czf logs.tgz *.log && rm -rf *.log cubin_* gemm_dev)
