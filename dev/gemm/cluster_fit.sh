#!/usr/bin/env bash
# One GPU call: the decode shapes whose chosen k-splits would reduce in more clusters than the GPU
# holds at once (4 or 8 CTAs a cluster), each in its splits through the workspace (what such a
# launch runs) and in half as many clustered splits; the co-resident cluster counts
# (WEFT_DEBUG=TRACE's gemm and gpu lines). Graphs, cold inputs, REPS interleaved repetitions.
# Usage: bash dev/gemm/cluster_fit.sh; logs under $OUT, a short table last.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
{ date -u; nvidia-smi -L; git log -1 --format=%h 2>/dev/null; } > "$out/machine.txt" 2>&1
source dev/device/trees.sh
build_tree "$out/build.log"
W="build/tools/weftrun -n 1 build/tools/weft-bench gemm -G 1 -n ${ITERS:-40}"
# group: layout, m, a_rows, tile, the (n, k) pairs, splits through the workspace, clustered splits
groups=(
  "kn 1 8 64,128 4096,4096:4096,5504:4096,7168 4 2"
  "kn 16 16 64,128 4096,4096:4096,5504:4096,7168 4 2"
  "kn 64 0 64,128 4096,4096:4096,5504:4096,7168 4 2"
  "nk 1 8 64,64 2048,4096:2048,8192 4 2"
  "nk 16 16 64,64 2048,4096:2048,8192 4 2"
  "nk 64 0 64,64 2048,4096:2048,8192 4 2"
  "kn 1 8 64,128 2048,8192 8 4"
  "kn 64 0 64,128 2048,8192 8 4"
  "kn 128 0 128,64 2048,4096:2048,8192 4 2"
  "nk 128 0 128,64 2048,4096:2048,8192 4 2"
  "nk 1 8 64,64 2048,6144:2048,10240 4 2"
  "nk 64 0 64,64 2048,6144:2048,10240 4 2"
  "kn 1 8 64,128 4096,8192:4096,10240:4096,14336 4 2"
  "kn 64 0 64,128 4096,8192:4096,10240:4096,14336 4 2"
  "kn 128 0 128,64 2048,6144:2048,10240 4 2"
  "nk 128 0 128,64 2048,6144:2048,10240 4 2"
)
for rep in $(seq 1 "${REPS:-2}"); do
  i=0
  for g in "${groups[@]}"; do
    read -r l m ar tile nks ws cl <<< "$g"
    IFS=, read -r bm bn <<< "$tile"
    S=""; for nk in ${nks//:/ }; do S="$S -s $m,$nk"; done
    WEFT_DEBUG=TRACE WEFT_DEBUG_FILE="$out/trace_$rep.$i.log" timeout 120 $W -l "$l" $S \
      --config BM=$bm,BN=$bn,ST=8,CL=1,AR=$ar,KS=$ws,KC=0 --config BM=$bm,BN=$bn,ST=8,CL=1,AR=$ar,KS=$cl,KC=1 \
      > "$out/g$i.r$rep.log" 2>&1 || echo "group $i rep $rep rc=$?" >> "$out/summary.txt"
    i=$((i + 1))
  done
done
grep -h "co-resident\|gpu: " "$out"/trace_*.log | sed 's/.*gemm BM/BM/; s/.*gpu: /gpu: /' | sort -u > "$out/clusters.txt"
cat "$out/clusters.txt"
echo "== layout M N K | cuBLAS heuristic ws-splits clustered-half (us), each rep"
for f in "$out"/g*.r*.log; do
  grep -v "^#" "$f" | awk -v f="$(basename "$f" .log)" -v l="$(grep -o 'B \[[NK],[NK]\]' "$f" | head -1)" \
    'NF > 8 && $1 ~ /^[0-9]+$/ {printf "%s %s %s %s %s | %s %s", f, l, $1, $2, $3, $4, $5; for (i = 10; i <= NF; i++) if ($i == "|") printf " %s", $(i + 1); if ($0 ~ /WRONG/) printf " WRONG"; printf "\n"}'
done
cat "$out/summary.txt" 2>/dev/null
tar -C "$out" -czf "$out/logs.tgz" --remove-files $(cd "$out" && ls g*.log trace_*.log) 2>/dev/null
