#!/usr/bin/env bash
# The hooks' cost with and without the split tail (issue 4: on the long split-tail shapes every
# hooked kernel ran 1-2% over plain in some runs, where gemm_dev's kernels, no tail, stayed
# within 0.3%): per shape, the heuristic's configuration with TS=4 and TS=0, each plain, with
# the wait hook (HK=1) and with the notify hook (HK=2), interleaved in one weft-bench run of
# N samples, RUNS runs; the summary gives each run's median over the runs, % over TS=4 plain.
# Device tool, one GPU:   [RUNS=3] [N=40] bash dev/gemm/hooks_tail.sh     (logs, JSON under $OUT)
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
out=${OUT:-gpu-logs}; mkdir -p "$out"; date -u > $out/date.txt; nvidia-smi -L >> $out/date.txt
(cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build -j16) > $out/build.log 2>&1 || { tail -20 $out/build.log; exit 1; }
# the heuristic's configurations of these shapes at 990121d (weft_gemm_config_choose, 132 SMs)
shapes="8192,16384,13312:BM=128,BN=256,ST=4,CL=2,EPI=2,G=8 8192,6656,16384:BM=128,BN=192,ST=4,CL=2,EPI=3,G=8
8192,16384,6656:BM=128,BN=256,ST=4,CL=2,EPI=2,G=8 8192,13312,16384:BM=128,BN=256,ST=4,CL=2,EPI=2,G=8"
for r in $(seq 1 ${RUNS:-3}); do
  for sc in $shapes; do
    s=${sc%%:*} c=${sc#*:}
    args=""; for ts in 4 0; do for hk in 0 1 2; do args="$args --config $c,TS=$ts,HK=$hk"; done; done
    timeout 120 build/tools/weftrun -n 1 build/tools/weft-bench gemm -s $s -n ${N:-40} $args \
      -J $out/tail-${s//,/x}-$r.json > $out/tail-${s//,/x}-$r.log 2>&1
    echo "run $r $s rc=$?"
  done
done
python3 - "$out" ${RUNS:-3} <<'PY'
import glob, json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
for f in sorted(glob.glob(f"{out}/tail-*-1.json")):
    shape = f.split("tail-")[1][:-7]
    rows = [json.load(open(f"{out}/tail-{shape}-{r}.json"))["rows"][0] for r in range(1, runs + 1)]
    keys = [k for k in rows[0] if ",TS=" in k]
    base = next(k for k in keys if k.endswith("TS=4,HK=0"))
    cells = []
    for k in keys:
        v = [100 * (row[k] / row[base] - 1) for row in rows]
        cells.append(f"{k.split(',TS=')[1]}: {statistics.median(v):+.1f} [" + " ".join(f"{x:+.1f}" for x in v) + "]")
    print(shape, "(% over TS=4 plain, median [runs])\n  " + "\n  ".join(cells))
PY
