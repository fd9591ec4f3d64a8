#!/usr/bin/env bash
# Device probe for the overlapped ops at 2 GPUs: test_overlap with per-step traces and short
# deadlines (WEFT_TEST_OPS narrows it), then the RS and AllToAll tests and one shape of each
# overlapped benchmark. Logs under $OUT (one archive).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export WEFT_CACHE_DIR=/tmp/wc WEFT_TIMEOUT_MS=5000
out=${OUT:-probe-logs}
mkdir -p "$out"
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
  cmake --build build -j "$(nproc)" >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
# (no debugger attach: a killed cuda-gdb leaves its tracee stopped, and the run hangs)
WEFT_TEST_TRACE=1 timeout -k 5 "${OPS_S:-120}" build/tools/weftrun -n 2 build/tests/gpu_test_overlap \
  > "$out/ops.log" 2>&1
echo "rc=$?" >> "$out/ops.log"
(cd build && timeout -k 5 90 ctest -R "${TESTS:-reduce_scatter_np2|alltoall_np2}" --output-on-failure) > "$out/ctest.log" 2>&1
for s in ${SUITES:-ag_gemm:8192,11008,4096 gemm_rs:8192,4096,11008 gemm_ar:8192,4096,11008}; do
  timeout -k 5 45 build/tools/weftrun -n 2 build/tools/weft-bench "${s%%:*}" -s "${s#*:}" -n 5 -w 2 \
    > "$out/bench_${s%%:*}.log" 2>&1
  echo "rc=$?" >> "$out/bench_${s%%:*}.log"
done
echo "== ops"; grep -c "ok  " "$out/ops.log"; grep -v "^\[.\] [0-9]" "$out/ops.log" | grep -v "ok  " | tail -15; grep "^\[.\] [0-9]" "$out/ops.log" | tail -4
echo "== ctest"; grep -E "tests passed|Failed|Passed|FAIL" "$out/ctest.log" | head -20
echo "== bench"; tail -n 6 "$out"/bench_*.log
tar -C "$out" -czf /tmp/probe.tgz . && find "$out" -mindepth 1 -delete && mv /tmp/probe.tgz "$out/"
