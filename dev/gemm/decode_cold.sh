#!/usr/bin/env bash
# One GPU call: the decode shapes (m = 1, 16, 64, 128 with the TP=4 (n, k) pairs) with cold
# inputs (weft-bench gemm's default: calls cycle through copies of A and B covering 256 MB) and
# hot (--hot), plain and as CUDA graphs (-G 1), and tile configurations beside the heuristic on
# the m = 64 / 128 shapes (or SHAPES="-s M,N,K ..."; CFGS="--config ..."). Note: --config
# ...,KS=1 selects the direct-store split-K kernel with one split, not the TMA-store kernel.
#   bash dev/gemm/decode_cold.sh [sections: plain graph hot cfg ctest]
# Logs under $OUT; a short table last.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
sections=${*:-plain graph hot cfg}
source "$(dirname "$0")/../device/env.sh"
source dev/device/trees.sh
has() { [[ " $sections " == *" $1 "* ]]; }
machine_txt
build_tree "$out/build.log"
W="build/tools/weftrun -n 1 build/tools/weft-bench gemm"
D=""; for m in 1 16 64 128; do for nk in 2752,4096 4096,2752 3584,4096 4096,3584 7168,8192 8192,7168 13312,16384 16384,13312 7392,8192 8192,7392; do D="$D -s $m,$nk"; done; done
: > "$out/summary.txt"
has ctest && { timeout 200 ctest --test-dir build -R gpu_test_gemm --output-on-failure > "$out/ctest.log" 2>&1; echo "ctest rc=$?" >> "$out/summary.txt"; }
has plain && { timeout 120 $W $D -J "$out/cold.json" > "$out/cold.log" 2>&1; echo "plain cold rc=$?" >> "$out/summary.txt"; }
has graph && { timeout 120 $W $D -G 1 -J "$out/cold_graph.json" > "$out/cold_graph.log" 2>&1; echo "graph cold rc=$?" >> "$out/summary.txt"; }
has hot && { timeout 120 $W $D -G 1 --hot -J "$out/hot_graph.json" > "$out/hot_graph.log" 2>&1; echo "graph hot rc=$?" >> "$out/summary.txt"; }
if has cfg; then
  S=${SHAPES:-}; [ -n "$S" ] || for m in 64 128; do for nk in 2752,4096 4096,2752 3584,4096 4096,3584; do S="$S -s $m,$nk"; done; done
  timeout 120 $W $S -G 1 ${CFGS:---config BM=128,BN=128,ST=6,CL=1,EPI=2,KS=4 --config BM=128,BN=64,ST=9,CL=1,EPI=1,KS=2 --config BM=64,BN=128,ST=9,CL=1,EPI=1,KS=2 --config BM=64,BN=64,ST=13,CL=1,EPI=1,KS=1} \
    > "$out/cfg.log" 2>&1; echo "cfg rc=$?" >> "$out/summary.txt"
fi
for f in cold cold_graph hot_graph; do [ -f "$out/$f.log" ] && { echo "== $f"; grep -v "^#  rank" "$out/$f.log" | grep -E "^ +(1|16|64|128) |lowest|inputs" | cut -c1-80; }; done
[ -f "$out/cfg.log" ] && { echo "== cfg"; grep -v "^#  rank" "$out/cfg.log" | tail -10 | cut -c1-200; }
cat "$out/summary.txt"
