#!/usr/bin/env bash
# Where overlap starts to win (include/weft.h, WEFT_OVERLAP_MIN_ROWS): the three overlapped ops
# at m = 128 ... 8192 rows of C, each shape with the copy-engine form (-a ce) and the sequential
# form (-a seq) in one weft-bench call after the other (each beside its own cuBLAS+NCCL), at
# every world size in NP (default "4 2"). Logs under $OUT; the rows last.
#   [NP="4 2"] [MS="128 ... 8192"] bash dev/overlap/min_rows_sweep.sh
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
{ date -u; nvidia-smi -L; } > "$out/machine.txt" 2>&1
(cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build -j "$(nproc)" > /dev/null) \
  > "$out/build.log" 2>&1 || { tail -20 "$out/build.log"; echo BUILD FAILED; exit 1; }
ms=${MS:-"128 256 512 1024 2048 4096 8192"}
for n in ${NP:-4 2}; do
  for op in ag_gemm gemm_rs gemm_ar; do
    # a short and a long layer of weft-bench's default shapes (N, K of the layer)
    if [ $op = ag_gemm ]; then nk="11008,4096 28672,8192"; else nk="4096,11008 8192,28672"; fi
    shapes=""
    for m in $ms; do for x in $nk; do shapes="$shapes -s $m,$x"; done; done
    for a in ce seq; do
      timeout 150 build/tools/weftrun -n "$n" build/tools/weft-bench $op $shapes -a $a -n 20 \
        -J "$out/${op}_${a}_np$n.json" > "$out/${op}_${a}_np$n.log" 2>&1
      echo "$op -a $a np$n rc=$?"
    done
  done
done
for f in "$out"/*_np*.log; do echo "-- $(basename "$f")"; grep -E '^ +[0-9]+ +[0-9]+ +[0-9]+ \|' "$f"; done
