#!/usr/bin/env bash
# Build, every test (CPU and GPU), then weft-bench suites, in one device call: logs under $OUT
# (or ./gpu-logs) packed into one archive, a short summary last.
#   [WEFT_TEST_BUDGET=s] [WEFT_BENCH_TIMEOUT=s] [WEFT_PEERS=1] [WEFT_BENCH_NP="4 2"] \
#     bash dev/device/test_and_bench.sh [ctest regex] [bench suites...]
# The suites run at every world size in WEFT_BENCH_NP (default: all local GPUs, then 2).
# A suite may carry weft-bench arguments after commas: "allgather,-a,ring" runs
# `weft-bench allgather -a ring` (logs named bench_allgather--a-ring_np<n>); colons inside an
# argument stand for its own commas: "gemm_ar,-s,128:16384:53248" runs `-s 128,16384,53248`.
# WEFT_PEERS=1 adds the torch async-TP column (bench/peers) at every world size the suites used.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/env.sh"
regex=${1:-.}
shift || true
suites=${*:-primitives}
{
  date -u; hostname; nvidia-smi -L; nvidia-smi topo -m 2>/dev/null | head -12
  nvcc --version | tail -1
} > "$out/machine.txt" 2>&1
ngpu=$(nvidia-smi -L | grep -c '^GPU ')

t0=$(date +%s)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
  cmake --build build -j "$(nproc)" >> "$out/build.log" 2>&1
build_rc=$?
t1=$(date +%s)
if [ $build_rc -ne 0 ]; then
  tail -40 "$out/build.log"
  echo "BUILD FAILED"
  exit 1
fi
# WEFT_TEST_BUDGET (s, default 330) bounds the whole ctest run so that the benchmarks still get time.
(cd build && timeout "${WEFT_TEST_BUDGET:-330}" ctest -V -R "$regex" -j 1) > "$out/ctest.log" 2>&1
t2=$(date +%s)
for spec in $suites; do
  IFS=, read -r -a args <<< "$spec"
  args=("${args[@]//:/,}")
  s=$(printf '%s' "$spec" | tr -d ' ' | tr : x | tr , '\n' | paste -sd- | tr -d -c 'A-Za-z0-9_.-')
  for n in ${WEFT_BENCH_NP:-$(printf '%s\n' "$ngpu" 2 | awk '!seen[$0]++')}; do
    [ "$n" -ge 2 ] && [ "$n" -le "$ngpu" ] || continue
    timeout "${WEFT_BENCH_TIMEOUT:-150}" build/tools/weftrun -n "$n" build/tools/weft-bench "${args[@]}" -J "$out/bench_${s}_np$n.json" \
      > "$out/bench_${s}_np$n.log" 2>&1
    echo "bench $spec np$n rc=$?" >> "$out/bench_rc.txt"
  done
done
if [ "${WEFT_PEERS:-0}" = 1 ]; then
  for n in ${WEFT_BENCH_NP:-$(printf '%s\n' "$ngpu" 2 | sort -un)}; do
    [ "$n" -ge 2 ] && [ "$n" -le "$ngpu" ] || continue
    PYTHONUNBUFFERED=1 timeout -k 5 "${WEFT_BENCH_TIMEOUT:-150}" python3 -m torch.distributed.run \
      --standalone --nproc-per-node "$n" bench/peers/torch_async_tp.py -J "$out/torch_np$n.json" \
      > "$out/bench_torch_np$n.log" 2>&1
    echo "bench torch np$n rc=$?" >> "$out/bench_rc.txt"
  done
fi
t3=$(date +%s)
echo "==== failed/skipped tests"
grep -E "Test +#[0-9]+:" "$out/ctest.log" | grep -v " Passed" | head -40
grep -E "tests passed|tests failed" "$out/ctest.log"
echo "==== bench"
cat "$out/bench_rc.txt" 2>/dev/null
for f in "$out"/bench_*.log; do [ -f "$f" ] && { echo "-- $f"; grep -v '^#  rank' "$f" | tail -25; }; done
echo "==== times: build $((t1-t0))s tests $((t2-t1))s bench $((t3-t2))s"
# the tables and the targets' lines, from the JSON files (bench/tables.py)
python3 bench/tables.py "$out" > "$out/tables.md" 2>&1 && { echo "==== targets"; grep -E "^- |^Geometric" "$out/tables.md"; }
# The device tool brings back at most 8 files: the logs travel as one archive.
tar -C "$out" -czf /tmp/weft-logs.tgz . && find "$out" -mindepth 1 -delete && mv /tmp/weft-logs.tgz "$out/"
