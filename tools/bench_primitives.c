/*
 * bench_primitives.c — `weft-bench primitives`: the foundation's figures.
 *   barrier   barrier_all latency over all ranks: in one kernel (back to back) and per
 *             weft_stream_barrier call (launch included)
 *   pingpong  one-way signal latency between ranks 0 and 1 (half a round trip), one kernel
 *   put       rank 0 -> rank 1 bandwidth by copy engine (weft_stream_put), by SMs
 *             (weft_putmem_block over many blocks), and cudaMemcpyPeer's equivalent
 *             (cuMemcpyPeerAsync between two contexts of this process, peer access enabled)
 * Every timed transfer is checked bit for bit once per size (random data, poisoned target).
 */
#include <string.h>

#include "bench.h"

static const char *source =
    "#include <weft/device.cuh>\n"
    "extern \"C\" __global__ void bench_barrier(int iters) {\n"
    "  for (int i = 0; i < iters; i++) weft_barrier_all_block();\n"
    "}\n"
    "extern \"C\" __global__ void bench_pingpong(unsigned long long *sig, unsigned long long base,\n"
    "                                          int iters, int peer, int initiator) {\n"
    "  if (threadIdx.x) return;\n"
    "  for (int i = 1; i <= iters; i++) {\n"
    "    if (initiator) {\n"
    "      weft_signal_op(sig, base + i, WEFT_SIGNAL_SET, peer);\n"
    "      weft_signal_wait_until(sig, WEFT_CMP_GE, base + i);\n"
    "    } else {\n"
    "      weft_signal_wait_until(sig, WEFT_CMP_GE, base + i);\n"
    "      weft_signal_op(sig, base + i, WEFT_SIGNAL_SET, peer);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void bench_put_sm(char *dst, const char *src, unsigned long long bytes,\n"
    "                                        int peer) {\n"
    "  unsigned long long chunk = (bytes / gridDim.x + 4095) & ~4095ull;\n"
    "  unsigned long long off = chunk * blockIdx.x;\n"
    "  if (off >= bytes) return;\n"
    "  unsigned long long n = bytes - off < chunk ? bytes - off : chunk;\n"
    "  weft_putmem_block(dst + off, src + off, n, peer);\n"
    "}\n";

static double elapsed_ms(CUevent a, CUevent b) {
  float ms = 0;
  CU(cuEventElapsedTime(&ms, a, b));
  return ms;
}

static void fill_random(unsigned char *h, size_t n, unsigned seed) {
  unsigned long long x = 0x9e3779b97f4a7c15ull ^ seed;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    h[i] = (unsigned char)x;
  }
}

int main_primitives(int argc, char **argv) {
  bench_t b;
  bench_parse(&b, argc, argv, 64 << 10, 256 << 20);
  bench_init(&b, "primitives");
  if (b.world < 2) {
    fprintf(stderr, "weft-bench primitives: needs at least 2 ranks\n");
    exit(2);
  }
  weft_module_t *mod;
  weft_kernel_t *k_barrier, *k_pingpong, *k_put;
  OK(weft_module_load(b.comm, source, "bench_primitives.cu", NULL, 0, &mod));
  OK(weft_module_get_kernel(mod, "bench_barrier", &k_barrier));
  OK(weft_module_get_kernel(mod, "bench_pingpong", &k_pingpong));
  OK(weft_module_get_kernel(mod, "bench_put_sm", &k_put));
  CUevent e0, e1;
  CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  int n = b.opt.iters;
  double *t = bench_calloc((size_t)(n + 1), sizeof *t);

  /* ---- barrier ---- */
  {
    int inner = 1000;
    weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
    cfg.block[0] = 32;
    void *args[] = {&inner};
    for (int i = -b.opt.warmup; i < n; i++) {
      OK(weft_comm_barrier(b.comm));
      CU(cuEventRecord(e0, b.stream));
      OK(weft_kernel_launch(k_barrier, &cfg, args, b.stream));
      CU(cuEventRecord(e1, b.stream));
      OK(weft_stream_synchronize(b.comm, b.stream));
      if (i >= 0) t[i] = elapsed_ms(e0, e1) * 1e3 / inner;
    }
    double in_kernel = bench_max_across_ranks(&b, bench_median(t, n));
    int calls = 200;
    for (int i = -b.opt.warmup; i < n; i++) {
      OK(weft_comm_barrier(b.comm));
      CU(cuEventRecord(e0, b.stream));
      for (int c = 0; c < calls; c++) OK(weft_stream_barrier(b.comm, b.stream));
      CU(cuEventRecord(e1, b.stream));
      OK(weft_stream_synchronize(b.comm, b.stream));
      if (i >= 0) t[i] = elapsed_ms(e0, e1) * 1e3 / calls;
    }
    double per_call = bench_max_across_ranks(&b, bench_median(t, n));
    if (b.rank == 0) {
      printf("#\n# barrier_all over %d GPUs: %.2f us back to back in one kernel, %.2f us per "
             "weft_stream_barrier call\n", b.world, in_kernel, per_call);
      const char *k[] = {"ranks", "in_kernel_us", "stream_call_us"};
      double v[] = {b.world, in_kernel, per_call};
      bench_json_row(&b, "primitives", "barrier_all", 3, k, v);
    }
  }

  /* ---- ping-pong between ranks 0 and 1 ---- */
  {
    unsigned long long *sig;
    OK(weft_malloc(b.comm, 8, (void **)&sig));
    int iters = 2000, launches = 0;
    double oneway = 0;
    if (b.rank < 2) {
      int peer = 1 - b.rank, initiator = b.rank == 0;
      weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
      for (int i = -b.opt.warmup; i < n; i++) {
        unsigned long long base = (unsigned long long)launches++ * (unsigned long long)iters;
        void *args[] = {&sig, &base, &iters, &peer, &initiator};
        CU(cuEventRecord(e0, b.stream));
        OK(weft_kernel_launch(k_pingpong, &cfg, args, b.stream));
        CU(cuEventRecord(e1, b.stream));
        OK(weft_stream_synchronize(b.comm, b.stream));
        if (i >= 0) t[i] = elapsed_ms(e0, e1) * 1e3 / iters / 2;
      }
      oneway = bench_median(t, n);
    }
    oneway = bench_max_across_ranks(&b, oneway);
    if (b.rank == 0) {
      printf("# signal ping-pong rank 0 <-> 1: %.2f us one way (half of a %d-round-trip median)\n",
             oneway, iters);
      const char *k[] = {"oneway_us"};
      bench_json_row(&b, "primitives", "pingpong", 1, k, &oneway);
    }
    OK(weft_free(b.comm, sig));
  }

  /* ---- put bandwidth rank 0 -> rank 1 ---- */
  {
    size_t maxb = b.opt.max_bytes;
    char *dst;
    CUdeviceptr src;
    OK(weft_malloc(b.comm, maxb, (void **)&dst));
    CU(cuMemAlloc(&src, maxb));
    unsigned char *host = bench_calloc(1, maxb), *back = bench_calloc(1, maxb);
    fill_random(host, maxb, (unsigned)(b.rank * 7919 + 17));
    CU(cuMemcpyHtoD(src, host, maxb));
    /* cudaMemcpyPeer's equivalent: rank 0 also opens GPU 1 in this process. */
    CUcontext ctx1 = NULL;
    CUdeviceptr peer_buf = 0;
    CUdevice dev1;
    if (b.rank == 0) {
      CU(cuDeviceGet(&dev1, b.comm->device_ordinal + 1));
      CU(cuDevicePrimaryCtxRetain(&ctx1, dev1));
      CU(cuCtxSetCurrent(ctx1));
      CU(cuMemAlloc(&peer_buf, maxb));
      CU(cuCtxSetCurrent(b.comm->context));
      CUresult r = weft_cu.cuCtxEnablePeerAccess(ctx1, 0);
      if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) CU(cuCtxEnablePeerAccess(ctx1, 0));
    }
    if (b.rank == 0)
      printf("#\n# put rank 0 -> rank 1: GB/s (1e9 B/s), median of %d\n"
             "#%12s %12s %12s %12s %9s %9s\n", n, "bytes", "copy engine", "SMs", "MemcpyPeer",
             "CE/peer", "#wrong");
    for (size_t bytes = b.opt.min_bytes; bytes <= maxb; bytes = (size_t)(bytes * b.opt.factor)) {
      double gbs[3] = {0, 0, 0};
      int wrong = 0;
      for (int method = 0; method < 3; method++) {
        /* Poison the target, run once, check every byte on rank 1, then time. */
        OK(weft_comm_barrier(b.comm));
        if (b.rank == 1) CU(cuMemsetD8((CUdeviceptr)(uintptr_t)dst, 0xA5, bytes));
        OK(weft_comm_barrier(b.comm));
        for (int i = -b.opt.warmup - 1; i < n; i++) {
          if (b.rank == 0) {
            CU(cuEventRecord(e0, b.stream));
            if (method == 0) {
              OK(weft_stream_put(b.comm, dst, (void *)(uintptr_t)src, bytes, 1, b.stream));
            } else if (method == 1) {
              weft_launch_config_t cfg = WEFT_LAUNCH_CONFIG_INIT;
              cfg.grid[0] = 132;
              cfg.block[0] = 512;
              unsigned long long nb = bytes;
              int peer = 1;
              void *args[] = {&dst, &src, &nb, &peer};
              OK(weft_kernel_launch(k_put, &cfg, args, b.stream));
            } else {
              CU(cuMemcpyPeerAsync(peer_buf, ctx1, src, b.comm->context, bytes, b.stream));
            }
            CU(cuEventRecord(e1, b.stream));
            OK(weft_stream_synchronize(b.comm, b.stream));
            if (i >= 0) t[i] = elapsed_ms(e0, e1);
          }
          if (i == -b.opt.warmup - 1 && method < 2 && b.opt.check) { /* the checked run */
            OK(weft_comm_barrier(b.comm));
            if (b.rank == 1) {
              CU(cuMemcpyDtoH(back, (CUdeviceptr)(uintptr_t)dst, bytes));
              unsigned char *want = bench_calloc(1, bytes);
              fill_random(want, bytes, 17); /* rank 0's data */
              for (size_t j = 0; j < bytes; j++) wrong += back[j] != want[j];
              free(want);
            }
            OK(weft_comm_barrier(b.comm));
          }
        }
        if (b.rank == 0) gbs[method] = bytes / (bench_median(t, n) * 1e-3) / 1e9;
      }
      b.wrong += wrong;
      int all_wrong = (int)bench_max_across_ranks(&b, wrong);
      if (b.rank == 0) {
        char sw[16];
        printf(" %12zu %12.1f %12.1f %12.1f %9.2f %9s\n", bytes, gbs[0], gbs[1], gbs[2],
               gbs[0] / gbs[2], bench_wrong_text(&b, all_wrong, sw));
        const char *k[] = {"bytes", "ce_gbs", "sm_gbs", "memcpy_peer_gbs", "wrong"};
        double v[] = {(double)bytes, gbs[0], gbs[1], gbs[2], bench_wrong_json(&b, all_wrong)};
        bench_json_row(&b, "primitives", "put", 5, k, v);
      }
    }
    if (b.rank == 0) {
      CU(cuCtxSetCurrent(ctx1));
      CU(cuMemFree(peer_buf));
      CU(cuCtxSetCurrent(b.comm->context));
      weft_cu.cuDevicePrimaryCtxRelease(dev1);
    }
    CU(cuMemFree(src));
    OK(weft_free(b.comm, dst));
    free(host);
    free(back);
  }
  free(t);
  weft_module_unload(mod);
  bench_finish(&b);
  return 0;
}
