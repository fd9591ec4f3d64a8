#!/usr/bin/env bash
# The MoE ops on one GPU in one device call: build, the grouped-GEMM and routing tests and
# AllGather + MoE at 2 ranks sharing the GPU, then for each routing of MOE_ROUTINGS (default:
# uniform zipf) `weft-bench grouped_gemm` beside PyTorch's torch._grouped_mm
# (bench/peers/torch_grouped_mm.py) and `weft-bench moe_layer` beside PyTorch's MoE layer
# (bench/peers/torch_moe_layer.py) on the same shapes and routings, then any extra ctest regex;
# each step skipped once MOE_BUDGET seconds (default 540) have passed. Logs and JSON under $OUT
# (one archive), a short summary last.
#   [MOE_ROUTINGS="uniform zipf"] [MOE_BENCH_TIMEOUT=s] [MOE_BUDGET=s] \
#     bash dev/moe/one_gpu.sh [ctest regex]
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
start=$(date +%s)
left() { echo $(( ${MOE_BUDGET:-540} - ($(date +%s) - start) )); }
step() { # name, timeout, command...: runs it into $out/<name>.log unless the budget is spent
  local name=$1 t=$2; shift 2
  [ "$(left)" -gt 20 ] || { echo "$name: skipped (budget)"; return; }
  [ "$t" -lt "$(left)" ] || t=$(left)
  timeout "$t" "$@" > "$out/$name.log" 2>&1
  echo "$name rc=$? ($(tail -1 "$out/$name.log" | cut -c1-100))"
}
{ date -u; nvidia-smi -L; nvcc --version | tail -1; } > "$out/machine.txt" 2>&1
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
  cmake --build build -j "$(nproc)" >> "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start ))s"
step test_grouped_gemm 240 build/tools/weftrun -n 1 build/tests/gpu_test_grouped_gemm
step test_moe_route 120 build/tools/weftrun -n 1 build/tests/gpu_test_moe_route
step test_ag_moe_np2 200 build/tools/weftrun --share-gpus -n 2 build/tests/gpu_test_ag_moe
for r in ${MOE_ROUTINGS:-uniform zipf}; do
  b=${MOE_BENCH_TIMEOUT:-120}
  step bench_grouped_gemm-$r "$b" build/tools/weftrun -n 1 build/tools/weft-bench grouped_gemm -r $r -J "$out/grouped_gemm-$r.json"
  step bench_torch_grouped_mm-$r "$b" python3 bench/peers/torch_grouped_mm.py --routing $r -J "$out/torch_grouped_mm-$r.json"
  step bench_moe_layer-$r "$b" build/tools/weftrun -n 1 build/tools/weft-bench moe_layer -r $r -J "$out/moe_layer-$r.json"
  step bench_torch_moe_layer-$r "$b" python3 bench/peers/torch_moe_layer.py --routing $r -J "$out/torch_moe_layer-$r.json"
done
[ -n "${1:-}" ] && step ctest 400 bash -c "cd build && ctest -V -R '$1' -j 1"
echo "==== $(( $(date +%s) - start ))s"
for f in "$out"/test_*.log; do grep -E "^FAIL|FAILED|checks" "$f" | head -8; done
for f in "$out"/bench_*.log; do echo "-- $f"; grep -v '^#  rank' "$f" | tail -22; done
python3 bench/tables.py "$out" > "$out/tables.md" 2>&1 && grep -E "^- |^Geometric" "$out/tables.md"
# The device tool brings back at most 8 files: the logs travel as one archive.
tar -C "$out" -czf /tmp/moe-logs.tgz . && find "$out" -mindepth 1 -delete && mv /tmp/moe-logs.tgz "$out/"
