export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 WEFT_CACHE_DIR=/tmp/wc WEFT_TMP_AR_SUMMERS=0
mkdir -p $OUT; (cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j) > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
R=build/tools/weftrun; B=build/tools/weft-bench
S="-s 8192,16384,53248 -s 8192,8192,28672"
for v in 0 1 2 3 4 0 1 2 3 4; do date -u +%T; echo "== PLAIN=$v"; if [ $v = 0 ]; then unset WEFT_TMP_AR_PLAIN; else export WEFT_TMP_AR_PLAIN=$v; fi; $R -n 4 $B gemm_ar $S -n 10 -a ce 2>&1 | grep -E "^ +8192" ; done | tee $OUT/ab.log
