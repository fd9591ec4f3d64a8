#!/usr/bin/env bash
# The MoE ops on one GPU in one device call: build, the grouped-GEMM and routing tests, then for
# each routing of MOE_ROUTINGS (default: uniform zipf) `weft-bench grouped_gemm` beside PyTorch's
# torch._grouped_mm (bench/peers/torch_grouped_mm.py) and `weft-bench moe_layer` beside PyTorch's
# MoE layer (bench/peers/torch_moe_layer.py) on the same shapes and routings, then any extra ctest regex
# given; logs and JSON under $OUT (one archive), a short table last.
#   [MOE_ROUTINGS="uniform zipf"] [MOE_BENCH_TIMEOUT=s] bash dev/moe/one_gpu.sh [ctest regex]
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
{ date -u; nvidia-smi -L; nvcc --version | tail -1; git rev-parse HEAD 2>/dev/null; } > "$out/machine.txt" 2>&1
t0=$(date +%s)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
  cmake --build build -j "$(nproc)" >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
t1=$(date +%s)
for t in grouped_gemm moe_route; do
  timeout 240 build/tools/weftrun -n 1 "build/tests/gpu_test_$t" > "$out/test_$t.log" 2>&1
  echo "test $t rc=$? $(tail -1 "$out/test_$t.log")"
done
t2=$(date +%s)
for r in ${MOE_ROUTINGS:-uniform zipf}; do
  timeout "${MOE_BENCH_TIMEOUT:-120}" build/tools/weftrun -n 1 build/tools/weft-bench grouped_gemm -r $r \
    -J "$out/grouped_gemm-$r.json" > "$out/bench_grouped_gemm-$r.log" 2>&1
  echo "bench weft $r rc=$?"
  timeout "${MOE_BENCH_TIMEOUT:-120}" python3 bench/peers/torch_grouped_mm.py --routing $r \
    -J "$out/torch_grouped_mm-$r.json" > "$out/bench_torch_grouped_mm-$r.log" 2>&1
  echo "bench torch $r rc=$?"
  timeout "${MOE_BENCH_TIMEOUT:-120}" build/tools/weftrun -n 1 build/tools/weft-bench moe_layer -r $r \
    -J "$out/moe_layer-$r.json" > "$out/bench_moe_layer-$r.log" 2>&1
  echo "bench weft layer $r rc=$?"
  timeout "${MOE_BENCH_TIMEOUT:-120}" python3 bench/peers/torch_moe_layer.py --routing $r \
    -J "$out/torch_moe_layer-$r.json" > "$out/bench_torch_moe_layer-$r.log" 2>&1
  echo "bench torch layer $r rc=$?"
done
t3=$(date +%s)
if [ -n "${1:-}" ]; then
  (cd build && timeout "${WEFT_TEST_BUDGET:-200}" ctest -V -R "$1" -j 1) > "$out/ctest.log" 2>&1
  grep -E "Test +#[0-9]+:" "$out/ctest.log" | sed 's/^.*Test *#/#/'
fi
echo "==== times: build $((t1-t0))s tests $((t2-t1))s bench $((t3-t2))s"
for f in "$out"/bench_*.log; do echo "-- $f"; grep -v '^#  rank' "$f" | tail -22; done
# The device tool brings back at most 8 files: the logs travel as one archive.
tar -C "$out" -czf /tmp/moe-logs.tgz . && find "$out" -mindepth 1 -delete && mv /tmp/moe-logs.tgz "$out/"
