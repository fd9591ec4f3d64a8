#!/usr/bin/env bash
# Runs hang_probe (one overlapped call, its signal words read every second) on the cases given as
# "op M N K algo" lines on stdin, each at the world sizes in $RANKS on shared GPUs; logs under $OUT.
#   RANKS="2 3" bash dev/overlap/hang_repro.sh < cases
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
export WEFT_TIMEOUT_MS=${WEFT_TIMEOUT_MS:-8000}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
  cmake --build build -j "$(nproc)" --target hang_probe weftrun >> "$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; exit 1; }
i=0
while read -r op m n k algo; do
  [ -z "$op" ] && continue
  for w in ${RANKS:-2}; do
    i=$((i + 1))
    log="$out/probe-$i-$op-$m-$n-$k-$algo-np$w.log"
    t0=$(date +%s)
    WEFT_DEBUG=TRACE timeout 60 build/tools/weftrun --share-gpus -n "$w" build/dev/overlap/hang_probe \
      "$op" "$m" "$n" "$k" "$algo" 14 > "$log" 2>&1
    rc=$?
    printf '%-8s %5s %5s %5s %-4s np%d rc %3d %4d s  %s\n' "$op" "$m" "$n" "$k" "$algo" "$w" "$rc" \
      "$(( $(date +%s) - t0 ))" "$(grep -c finished "$log") finished"
    grep -E "gemm [0-9]+x|t=|timed out|failed|error" "$log" | grep -v "weft_jit\|cache" | head -12 | sed 's/^/    /'
  done
done
