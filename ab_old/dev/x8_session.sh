#!/usr/bin/env bash
# Issue 6 (the papers' world size) on nvidia-h200-x8, in two device calls of at most 600 s each:
#   PART=tests bash dev/x8_session.sh    every GPU test at 8 ranks (ctest's *_np8 entries, which
#                                        skip on smaller machines), then every collective 8 B -
#                                        256 MB beside NCCL at 8 ranks
#   PART=ops bash dev/x8_session.sh      AG+GEMM, GEMM+RS, GEMM+AR on DESIGN.md's layer shapes
#                                        (M = 8192; weft-bench's defaults divide N or K by the
#                                        world size) with the torch async-TP peer column
# Logs and JSON under $OUT as dev/gpu_session.sh leaves them (one archive), the tables and the
# targets last (bench/tables.py). Compare the geometric means with seeds/000 section 4.1 (8 x H800:
# AG+GEMM 1.43x, GEMM+RS 1.27x, GEMM+AR 1.32x over cuBLAS + NCCL).
set -uo pipefail
cd "$(dirname "$0")/.."
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ "$ngpu" -ge 8 ] || { echo "x8_session: $ngpu GPUs here, 8 needed"; exit 2; }
export WEFT_BENCH_NP=8
case ${PART:-tests} in
  tests) WEFT_TEST_BUDGET=${WEFT_TEST_BUDGET:-280} WEFT_BENCH_TIMEOUT=${WEFT_BENCH_TIMEOUT:-50} \
           bash dev/gpu_session.sh "_np8" allgather reduce_scatter allreduce alltoall alltoallv ;;
  ops) WEFT_TEST_BUDGET=30 WEFT_BENCH_TIMEOUT=${WEFT_BENCH_TIMEOUT:-150} WEFT_PEERS=1 \
         bash dev/gpu_session.sh "^no-test$" ag_gemm gemm_rs gemm_ar ;;
  *) echo "PART=tests or PART=ops"; exit 2 ;;
esac
