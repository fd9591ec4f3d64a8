#!/usr/bin/env bash
# The LL kernels' grids: each variant lines:threads of VARIANTS (default "1:512 2:512 4:512")
# sets RED_LL_LINES / RED_LL_THREADS (src/ops/reduce.c) and AG_LL_LINES / AG_THREADS_LL
# (src/ops/allgather.c) in its own copy of the tree, then `weft-bench allreduce -a ll` from 8 B
# to 2 MiB and `allgather -a ll` to 512 KiB at 2 ranks run for each, ROUNDS times in turn (each
# run beside its own NCCL). Logs under $OUT. Device tool, 2+ GPUs:
#   [VARIANTS="1:512 2:512"] [ROUNDS=2] bash dev/collectives/ll_grid.sh
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
machine_txt
lines=${VARIANTS:-1:512 2:512 4:512}
for l in $lines; do
  tree=/tmp/weft-ll${l/:/-}
  variant_tree "$tree" src/ops/reduce.c RED_LL_LINES "${l%%:*}" src/ops/reduce.c RED_LL_THREADS "${l##*:}" \
    src/ops/allgather.c AG_LL_LINES "${l%%:*}" src/ops/allgather.c AG_THREADS_LL "${l##*:}" || exit 1
  variant_build "$tree" "$out/build${l/:/-}.log" weft-bench weftrun &
done
wait
for r in $(seq 1 "${ROUNDS:-2}"); do
  for l in $lines; do
    t=${l/:/-}
    timeout 90 /tmp/weft-ll$t/build/tools/weftrun -n 2 /tmp/weft-ll$t/build/tools/weft-bench allreduce \
      -a ll -b 8 -e 2M -f 2 -J "$out/ll${t}_r$r.json" > "$out/ll${t}_r$r.log" 2>&1
    echo "lines $l round $r rc=$?"
    timeout 90 /tmp/weft-ll$t/build/tools/weftrun -n 2 /tmp/weft-ll$t/build/tools/weft-bench allgather \
      -a ll -b 8 -e 512K -f 2 -J "$out/ag${t}_r$r.json" > "$out/ag${t}_r$r.log" 2>&1
    echo "allgather lines $l round $r rc=$?"
  done
done
python3 - "$out" "$lines" "${ROUNDS:-2}" <<'PY'
import json, sys
out, lines, rounds = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
for suite, tag in (("allreduce", "ll"), ("allgather", "ag")):
    runs = {l: [json.load(open(f"{out}/{tag}{l.replace(':', '-')}_r{r}.json"))["rows"] for r in range(1, rounds + 1)]
            for l in lines}
    print(f"# {suite} -a ll; bytes " + "".join(f"  {l} lines:threads, us (NCCL/weft) per round".ljust(44) for l in lines))
    for i, row in enumerate(runs[lines[0]][0]):
        cells = []
        for l in lines:
            cells.append(" ".join(f"{rs[i]['weft_us']:6.2f} ({rs[i]['nccl_us'] / rs[i]['weft_us']:.2f})" for rs in runs[l]).ljust(44))
        print(f"{row['bytes']:>9} " + "".join(cells))
PY
tar -C "$out" -czf /tmp/ll-logs.tgz . && find "$out" -mindepth 1 -delete && mv /tmp/ll-logs.tgz "$out/"
