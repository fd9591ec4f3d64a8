#!/usr/bin/env bash
# Where the AllReduce's LL form stops winning: builds a copy of the tree with
# WEFT_ALLREDUCE_LL_MAX_BYTES raised to LL_MAX (default 4 MiB; the copy only, the tree is not
# touched), runs the reduction tests at 2 ranks there (LL now covers the larger sizes), then every
# AllReduce / ReduceScatter algorithm from 64 KiB to 16 MiB beside NCCL, and GEMM+AR (whose
# M = 128 shapes reduce 1-2 MiB). Logs under $OUT. Device tool, 2+ GPUs:
#   [LL_MAX=bytes] [TESTS=ctest-regex] bash dev/collectives/ar_sweep.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export WEFT_CACHE_DIR=${WEFT_CACHE_DIR:-/tmp/weft-cache}
out=${OUT:-gpu-logs}
mkdir -p "$out"
ll_max=${LL_MAX:-4194304}
tests=${TESTS:-gpu_test_(allreduce|reduce_scatter)_np2}
src=$(cd "$(dirname "$0")/../.." && pwd)
tree=/tmp/weft-llmax
rm -rf "$tree" && mkdir -p "$tree"
(cd "$src" && tar --exclude=./build --exclude=./.git -cf - .) | tar -C "$tree" -xf -
sed -i "s/#define WEFT_ALLREDUCE_LL_MAX_BYTES .*/#define WEFT_ALLREDUCE_LL_MAX_BYTES ${ll_max}u/" \
  "$tree/include/weft.h"
grep -n "define WEFT_ALLREDUCE_LL_MAX_BYTES" "$tree/include/weft.h" | tee "$out/ll_max.txt"
cd "$tree"
{ date -u; nvidia-smi -L; nvidia-smi topo -m 2>/dev/null | head -6; } > "$out/machine.txt" 2>&1
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
  cmake --build build -j "$(nproc)" >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
(cd build && timeout "${WEFT_TEST_BUDGET:-300}" ctest -V -R "$tests" -j 1) > "$out/ctest.log" 2>&1
grep -E "Test +#[0-9]+:|tests passed|tests failed" "$out/ctest.log"
run() { # name, weft-bench arguments
  local name=$1
  shift
  timeout "${WEFT_BENCH_TIMEOUT:-90}" build/tools/weftrun -n 2 build/tools/weft-bench "$@" \
    -J "$out/$name.json" > "$out/$name.log" 2>&1
  echo "$name rc=$?"
}
run ar_ll allreduce -a ll -b 64K -e "$ll_max" -f 2
run ar_two_shot allreduce -a two_shot -b 64K -e 16M -f 2
run ar_sm allreduce -a sm -b 64K -e 16M -f 2
run rs_ll reduce_scatter -a ll -b 128K -e $((ll_max * 2)) -f 2
run rs_sm reduce_scatter -a sm -b 128K -e 16M -f 2
run gemm_ar gemm_ar
for f in "$out"/ar_*.log "$out"/rs_*.log; do
  echo "-- $f"
  grep -v '^#' "$f" | awk 'NF > 6' | head -20
done
echo "-- gemm_ar"
grep -v '^#  rank' "$out/gemm_ar.log" | tail -16
tar -C "$out" -czf /tmp/ar-logs.tgz . && find "$out" -mindepth 1 -delete && mv /tmp/ar-logs.tgz "$out/"
