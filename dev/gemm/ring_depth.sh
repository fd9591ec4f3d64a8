#!/usr/bin/env bash
# One GPU call: decode split tiles with rings of 8 stages (the heuristic's, fitted on an H100)
# against deeper ones, on the shapes where the H200 trails cuBLAS (graphs, cold, -n 30, two runs).
# Each group: layout, tile as --config keys, stage counts, shapes. Logs under $OUT; a table last.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
source dev/builds.sh
build_tree "$out/build.log" weft-bench weftrun
W="build/tools/weftrun -n 1 build/tools/weft-bench gemm -G 1 -n 30"
groups=(
  "kn BM=64,BN=128,AR=8,KS=2,KC=1 8:10:12 1,8192,7168:1,8192,3584:1,6656,16384:1,4096,1792:1,8192,7392"
  "kn BM=64,BN=128,AR=16,KS=2,KC=1 8:11 16,8192,7168:16,8192,3584:16,6656,16384"
  "nk BM=64,BN=64,AR=8,KS=2,KC=1 8:12:16 1,4096,1376:1,4096,1792:1,4096,2752"
  "nk BM=64,BN=64,AR=0,KS=2,KC=1 8:10:13 64,4096,2752:64,4096,3584:64,4096,1792"
)
for rep in 1 2; do
  i=0
  for g in "${groups[@]}"; do
    read -r l cfg sts shapes <<< "$g"
    S=""; for s in ${shapes//:/ }; do S="$S -s $s"; done
    C=""; for st in ${sts//:/ }; do C="$C --config $cfg,ST=$st,CL=1"; done
    timeout 100 $W -l "$l" $S $C > "$out/g$i.r$rep.log" 2>&1 || echo "group $i rep $rep rc=$?"
    i=$((i + 1))
  done
done
for f in "$out"/g*.r*.log; do
  echo "== $(basename "$f" .log): $(grep -o 'B \[[NK],[NK]\]' "$f" | head -1); cuBLAS, heuristic, then each --config (us)"
  grep -v "^#" "$f" | awk 'NF > 8 && $1 ~ /^[0-9]+$/ {printf "%s %s %s | %s %s", $1, $2, $3, $4, $5; for (i = 10; i <= NF; i++) if ($i == "|") printf " %s", $(i + 1); printf "\n"}'
done
