#!/usr/bin/env bash
# Device probe for a stalled overlapped op: the GEMM+RS test cases with per-step traces and short
# deadlines, cuda-gdb stacks of the ranks if they are still alive after 40 s, then the RS and
# AllToAll tests and one shape of each overlapped benchmark. Logs under $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export WEFT_CACHE_DIR=/tmp/wc WEFT_TIMEOUT_MS=5000
out=${OUT:-probe-logs}
mkdir -p "$out"
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
  cmake --build build -j "$(nproc)" >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
(WEFT_TEST_TRACE=1 WEFT_TEST_OPS=${OPS:-gemm_rs} timeout 60 build/tools/weftrun -n 2 \
  build/tests/gpu_test_overlap > "$out/ops.log" 2>&1; echo "rc=$?" >> "$out/ops.log") &
p=$!
for i in $(seq 40); do kill -0 $p 2>/dev/null || break; sleep 1; done
for pid in $(pgrep -f build/tests/gpu_test_overlap); do
  timeout 25 cuda-gdb -p "$pid" -batch -ex "info cuda kernels" -ex "thread apply all bt" \
    > "$out/gdb_$pid.txt" 2>&1
done
wait $p
(cd build && timeout 150 ctest -R "${TESTS:-reduce_scatter_np2|alltoall_np2}" --output-on-failure) > "$out/ctest.log" 2>&1
for s in ${SUITES:-ag_gemm:8192,11008,4096 gemm_rs:8192,4096,11008}; do
  timeout 60 build/tools/weftrun -n 2 build/tools/weft-bench "${s%%:*}" -s "${s#*:}" -n 5 -w 2 \
    > "$out/bench_${s%%:*}.log" 2>&1
  echo "rc=$?" >> "$out/bench_${s%%:*}.log"
done
echo "== ops"; grep -v "^\[.\] [0-9]" "$out/ops.log" | tail -15; grep "^\[.\] [0-9]" "$out/ops.log" | tail -4
echo "== gdb"; for f in "$out"/gdb_*; do [ -f "$f" ] && grep -E "^#|Kernel|weft_|gemm" "$f" | head -25; done
echo "== ctest"; grep -E "tests passed|Failed|Passed|FAIL" "$out/ctest.log" | head -20
echo "== bench"; tail -n 6 "$out"/bench_*.log
tar -C "$out" -czf /tmp/probe.tgz . && find "$out" -mindepth 1 -delete && mv /tmp/probe.tgz "$out/"
