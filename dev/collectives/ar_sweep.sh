#!/usr/bin/env bash
# Where the AllReduce's LL form stops winning: builds a copy of the tree whose LL forms take
# LL_MAX bytes at any world size (default 4 MiB; variant_tree of dev/device/trees.sh), runs the
# reduction tests at 2 ranks there (LL then covers the larger sizes), then every
# AllReduce / ReduceScatter algorithm from 64 KiB to 16 MiB beside NCCL, and GEMM+AR (whose
# M = 128 shapes reduce 1-2 MiB). Logs under $OUT. Device tool, 2+ GPUs:
#   [LL_MAX=bytes] [TESTS=ctest-regex] bash dev/collectives/ar_sweep.sh
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
machine_txt
ll_max=${LL_MAX:-4194304}
tests=${TESTS:-gpu_test_(allreduce|reduce_scatter)_np2}
tree=/tmp/weft-llmax
variant_tree "$tree" include/weft.h "WEFT_ALLREDUCE_LL_MAX_BYTES(world)" "((size_t)${ll_max}u)" || exit 1
variant_build "$tree" "$out/build.log" || { tail -30 "$out/build.log"; exit 1; }
cd "$tree"
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
