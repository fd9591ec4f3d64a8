#!/usr/bin/env bash
# The main job: the benchmark suite on all local GPUs (called by `make bench`).
# Usage: bench/run.sh [build-dir]. Logs and JSON go to <build-dir>/bench-logs/.
set -uo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
# NVLink multicast stays off (docs/architecture.md, section 7).
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

ngpu=0
if command -v nvidia-smi >/dev/null 2>&1; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
if [ "$ngpu" -eq 0 ]; then
  echo "make bench: no GPU on this machine (no driver or nvidia-smi sees none): nothing to benchmark."
  exit 0
fi
logs=$build/bench-logs
mkdir -p "$logs"
echo "make bench: $ngpu GPU(s); logs in $logs"
status=0
run() { # name, ranks, args...
  local name=$1 n=$2; shift 2
  echo "== $name (ranks $n)"
  "$build/tools/weftrun" -n "$n" "$build/tools/weft-bench" "$@" -J "$logs/$name.json" 2>&1 | tee "$logs/$name.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
}
# GEMM beside cuBLAS on every GPU at once (each rank its own GEMM; the slowest rank's times)
run gemm "$ngpu" gemm
run gemm-hooks "$ngpu" gemm --hooks
# the grouped GEMM of MoE layers beside cuBLAS's grouped GEMM, uniform and skewed routings
run grouped_gemm "$ngpu" grouped_gemm
run grouped_gemm-zipf "$ngpu" grouped_gemm -r zipf
# one MoE layer's experts, fused and unfused, both routings
run moe_layer "$ngpu" moe_layer
run moe_layer-zipf "$ngpu" moe_layer -r zipf
if [ "$ngpu" -ge 2 ]; then
  run primitives "$ngpu" primitives
  run allgather "$ngpu" allgather
  run reduce_scatter "$ngpu" reduce_scatter
  run allreduce "$ngpu" allreduce
  run alltoall "$ngpu" alltoall
  run alltoallv "$ngpu" alltoallv
  # the overlapped ops beside cuBLAS + NCCL, on every GPU and at 2 where there are more
  for n in $(printf '%s\n' "$ngpu" 2 | sort -un); do
    [ "$n" -le "$ngpu" ] || continue
    run ag_gemm-np$n "$n" ag_gemm
    run gemm_rs-np$n "$n" gemm_rs
    run gemm_rs-fused-np$n "$n" gemm_rs -a sm
    run gemm_ar-np$n "$n" gemm_ar
    # AUTO with the autotuner: each shape's plan timed on its check call
    for op in ag_gemm gemm_rs gemm_ar; do run $op-tuned-np$n "$n" $op --autotune; done
    # the tensor-parallel MoE ops beside NCCL and the unfused steps
    for op in ag_moe moe_rs moe_ar; do run $op-np$n "$n" $op; done
  done
else
  echo "primitives and the collectives: need 2 GPUs, skipped"
fi
# the peer columns: PyTorch async-TP beside cuBLAS + NCCL, and PyTorch's tensor-parallel MoE ops
# on torch.distributed, on the same shapes (bench/peers/README.md)
if [ "$ngpu" -lt 2 ]; then
  echo "torch async-TP peer column: needs 2 GPUs, skipped"
elif ! python3 -c "import torch" >/dev/null 2>&1; then
  echo "torch async-TP peer column: python3 cannot import torch, skipped"
else
  for n in $(printf '%s\n' "$ngpu" 2 | sort -un); do
    echo "== torch_async_tp-np$n (ranks $n)"
    python3 -m torch.distributed.run --standalone --nproc-per-node "$n" bench/peers/torch_async_tp.py \
      -J "$logs/torch_async_tp-np$n.json" 2>&1 | tee "$logs/torch_async_tp-np$n.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    echo "== torch_moe_tp-np$n (ranks $n)"
    python3 -m torch.distributed.run --standalone --nproc-per-node "$n" bench/peers/torch_moe_tp.py \
      -J "$logs/torch_moe_tp-np$n.json" 2>&1 | tee "$logs/torch_moe_tp-np$n.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  done
fi
# PyTorch's grouped GEMM and MoE layer on weft-bench grouped_gemm's and moe_layer's shapes and
# routings (bench/peers/README.md)
if [ "$ngpu" -ge 1 ] && python3 -c "import torch" >/dev/null 2>&1; then
  for r in uniform zipf; do
    for peer in torch_grouped_mm torch_moe_layer; do
      echo "== $peer ($r)"
      python3 bench/peers/$peer.py --routing $r -J "$logs/$peer-$r.json" 2>&1 | tee "$logs/$peer-$r.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
    done
  done
else
  echo "torch grouped GEMM and MoE layer peer columns: need a GPU and python3 with torch, skipped"
fi
# every table in markdown, and the figures the targets set (bench/tables.py)
if command -v python3 >/dev/null 2>&1 && python3 bench/tables.py "$logs" > "$logs/tables.md"; then
  echo "== tables: $logs/tables.md; targets:"
  grep -E "^- |^Geometric" "$logs/tables.md"
fi
exit $status
