#!/usr/bin/env bash
# gemm_dev's suites in one device call (one GPU): builds dev/gemm/gemm_dev.cu, runs each suite
# under its own time limit, logs and JSON under $OUT (or ./gpu-logs), a short table last
# (summarize.py). A failed smoke suite stops the run.
#   bash dev/gemm/gemm_dev_suites.sh [suites...]
# Suites (gemm_dev --suite): smoke correct hooks variants perf small layouts timeout (the
# default), and smallsweep, largesweep, hookcost, compile.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
suites=${*:-smoke correct hooks variants perf small layouts timeout}
t0=$(date +%s)
source "$(dirname "$0")/gemm_dev_build.sh"
echo "build $(( $(date +%s) - t0 )) s" > "$out/summary.txt"
for s in $suites; do
  t1=$(date +%s)
  case $s in smoke) lim=40 ;; correct|perf) lim=150 ;; small) lim=120 ;; smallsweep) lim=300 ;; timeout) lim=40 ;; *) lim=90 ;; esac
  timeout $lim "$out/gemm_dev" --suite "$s" --json "$out/$s.json" > "$out/$s.log" 2>&1
  rc=$?
  echo "suite $s rc=$rc $(( $(date +%s) - t1 )) s: $(tail -1 "$out/$s.log")" >> "$out/summary.txt"
  if [ "$s" = smoke ] && [ $rc -ne 0 ]; then cat "$out/smoke.log"; echo "SMOKE FAILED: stopping"; break; fi
done
cat "$out/machine.txt" | tail -3
echo "---- failures / probes"
grep -h "FAIL\|probe\|ptxas\|error\|rror" "$out"/*.log | grep -v "^  check.* ok$" | head -40
echo "---- hooks"; grep -h "hooks.*exact\|WRONG" "$out/hooks.log" 2>/dev/null | head -12
echo "---- timeout"; cat "$out/timeout.log" 2>/dev/null | tail -4
echo "---- table (TFLOP/s, medians of interleaved samples; ratio = cuBLAS time / weft time)"
python3 dev/gemm/summarize.py "$out"/smallsweep.json "$out"/variants.json "$out"/perf.json "$out"/small.json "$out"/layouts.json "$out"/hooks.json 2>&1 | tee "$out/table.txt"
echo "---- summary"; cat "$out/summary.txt"
