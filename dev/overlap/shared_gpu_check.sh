#!/usr/bin/env bash
# The overlapped ops on one shared GPU, in one device call: the hang probe on the given cases
# (stdin, "op M N K algo" lines; RANKS world sizes), the planted-hang test, test_abort and the
# random-shape test (SHAPES cases per op) at each of RANKS; logs under $OUT.
#   RANKS="2 3" SHAPES=20 bash dev/overlap/shared_gpu_check.sh < cases
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
source "$(dirname "$0")/../device/env.sh"
t0=$(date +%s)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release > "$out/build.log" 2>&1 &&
  cmake --build build -j "$(nproc)" --target weftrun hang_probe gpu_test_hang_report \
    gpu_test_overlap_shapes gpu_test_overlap gpu_test_abort >> "$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log"; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
RANKS=${RANKS:-2} bash dev/overlap/hang_repro.sh 2>&1 | tee "$out/probes.txt"
t1=$(date +%s)
timeout 200 build/tests/gpu_test_hang_report build/tools/weftrun > "$out/hang_report.log" 2>&1
echo "hang_report rc $? ($(( $(date +%s) - t1 )) s)"
grep -E "FAIL|^----|weft WARN|CHILD" "$out/hang_report.log" | grep -v WEFT_SHARE | head -40
for w in ${RANKS:-2}; do
  timeout 60 build/tools/weftrun --share-gpus -n "$w" build/tests/gpu_test_abort > "$out/abort-np$w.log" 2>&1
  echo "abort np$w rc $?: $(grep -E 'kernel ended' "$out/abort-np$w.log" | sed 's/.*kernel ended/ended/' | tr '\n' ';')"
done
for w in ${RANKS:-2}; do
  t1=$(date +%s)
  WEFT_TEST_SHAPES=${SHAPES:-20} timeout ${SHAPES_BUDGET:-240} build/tools/weftrun --share-gpus -n "$w" \
    build/tests/gpu_test_overlap_shapes > "$out/shapes-np$w.log" 2>&1
  echo "shapes np$w rc $? ($(( $(date +%s) - t1 )) s): $(grep -c '\] ok' "$out/shapes-np$w.log") ok, $(grep -c FAIL "$out/shapes-np$w.log") FAIL"
  grep -E "FAIL|checks passed|seed" "$out/shapes-np$w.log" | head -12
  grep -E "weft WARN" "$out/shapes-np$w.log" | grep -v WEFT_SHARE | head -5
done
