#!/usr/bin/env bash
# One GPU call for the transposed product (swap_ab) between decode and large m: weft-bench gemm
# with [n, k] B (SWAP_LAYOUT=kn: [k, n]) from the parent library ($1, a directory or commit: see
# ab_build.sh) and the working tree, alternating, on the shapes SWAP_SHAPES ("m,n,k ...") and m =
# SWAP_MS x SWAP_NK (default five (n, k) of DITRON's layers, Appendix C; SWAP_MS=" " for none), with the
# full table; then the tests matching SWAP_TEST. Logs under $OUT.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-logs}; mkdir -p "$out"
old=$1; shift
shapes=()
for s in ${SWAP_SHAPES:-}; do shapes+=(-s "$s"); done  # m,n,k triples, beside the grid below
for m in ${SWAP_MS:-129 160 192 224 256 288 320 384 448 576 640 768 1000}; do
  for nk in ${SWAP_NK:-8192,14336 16384,13312 5120,13312 8192,8192 4096,14336}; do shapes+=(-s "$m,$nk"); done
done
AB_TABLE=1 bash dev/gemm/ab_build.sh "$old" -l "${SWAP_LAYOUT:-nk}" -n "${SWAP_ITERS:-10}" "${shapes[@]}" "$@" > "$out/ab.txt" 2>&1
sed -n '/shapes; lowest/,$p' "$out/ab.txt"
if [ -n "${SWAP_TEST:-}" ]; then  # the tests matching $SWAP_TEST, their transposed cases shown
  cmake --build build -j16 > "$out/build_tests.log" 2>&1
  (cd build && ctest -R "$SWAP_TEST" -V > "$out/tests.log" 2>&1)
  grep -E "FAIL|transposed|tests passed|tests failed" "$out/tests.log" | sed 's/^[0-9]*: //' | tail -24
fi
