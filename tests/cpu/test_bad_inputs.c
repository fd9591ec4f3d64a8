/*
 * test_bad_inputs.c — the table of bad inputs to public calls that a CPU machine can exercise,
 * each with the status it must return, a non-empty message, and no side effect (the heap's
 * allocations unchanged, the communicator still usable). Calls that need a live GPU are checked
 * the same way in tests/gpu/test_bad_inputs.c.
 *
 * The communicator here is built by hand around a world-of-one bootstrap and a heap range that
 * is never touched: every call below must reject its arguments before it reaches the driver.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/comm.h"
#include "runtime/loader.h"
#include "runtime/multicast.h"

static int failures, checked;

static void expect(const char *what, weft_status_t got, weft_status_t want, const char *msg) {
  checked++;
  if (got != want) {
    failures++;
    printf("FAIL %-60s got %-22s want %s\n", what, weft_get_error_string(got),
           weft_get_error_string(want));
  } else if (want != WEFT_STATUS_SUCCESS && (!msg || !*msg)) {
    failures++;
    printf("FAIL %-60s no error message\n", what);
  } else {
    printf("ok   %-60s %-22s %.90s\n", what, weft_get_error_string(got), msg ? msg : "");
  }
}

static void clear_launcher_env(void) {
  const char *vars[] = {"WEFT_RANK", "WEFT_WORLD_SIZE", "WEFT_LOCAL_RANK", "WEFT_LOCAL_WORLD_SIZE",
                        "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                        "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                        "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_PROCID", "SLURM_NTASKS",
                        "SLURM_LOCALID", "MASTER_ADDR", "MASTER_PORT", "WEFT_BOOTSTRAP_ADDR"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

#define T(what, call, want)                                                               \
  do {                                                                                    \
    uint64_t used_ = weft_suballoc_used(&comm->heap.alloc);                               \
    weft_status_t st_ = (call);                                                           \
    expect(what, st_, want, weft_comm_get_last_error(comm));                              \
    if (weft_suballoc_used(&comm->heap.alloc) != used_) {                                 \
      failures++;                                                                         \
      printf("FAIL %s changed the heap\n", what);                                         \
    }                                                                                     \
    comm->last_error[0] = 0;                                                              \
  } while (0)

#define TG(what, call, want) expect(what, (call), want, weft_get_last_error())

int main(void) {
  clear_launcher_env();
  setenv("WEFT_TIMEOUT_MS", "2000", 1);

  /* ---- before any communicator ---- */
  weft_comm_config_t cfg = WEFT_COMM_CONFIG_INIT;
  weft_comm_t *none = NULL;
  TG("comm_init(NULL)", weft_comm_init(NULL, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  cfg.timeout_ms = -1;
  TG("comm_init timeout_ms -1", weft_comm_init(&none, &cfg), WEFT_STATUS_INVALID_ARGUMENT);
  cfg = (weft_comm_config_t)WEFT_COMM_CONFIG_INIT;
  cfg.device = -7;
  TG("comm_init device -7", weft_comm_init(&none, &cfg), WEFT_STATUS_INVALID_ARGUMENT);
  setenv("WEFT_RANK", "4", 1);
  setenv("WEFT_WORLD_SIZE", "4", 1);
  TG("comm_init WEFT_RANK=4 of 4", weft_comm_init(&none, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  setenv("WEFT_RANK", "0", 1);
  setenv("WEFT_WORLD_SIZE", "two", 1);
  TG("comm_init WEFT_WORLD_SIZE=two", weft_comm_init(&none, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  setenv("WEFT_WORLD_SIZE", "2", 1);
  TG("comm_init world 2 without an address", weft_comm_init(&none, NULL),
     WEFT_STATUS_INVALID_ARGUMENT);
  clear_launcher_env();
  if (weft_cu_load(NULL, NULL) == WEFT_STATUS_NO_DEVICE)
    TG("comm_init without a GPU", weft_comm_init(&none, NULL), WEFT_STATUS_NO_DEVICE);
  TG("malloc(NULL comm)", weft_malloc(NULL, 8, (void **)&none), WEFT_STATUS_INVALID_ARGUMENT);
  TG("comm_destroy(NULL)", weft_comm_destroy(NULL), WEFT_STATUS_INVALID_ARGUMENT);
  TG("comm_abort(NULL)", weft_comm_abort(NULL), WEFT_STATUS_INVALID_ARGUMENT);
  int r;
  TG("comm_rank(NULL comm)", weft_comm_rank(NULL, &r), WEFT_STATUS_INVALID_ARGUMENT);
  TG("comm_set_autotune(NULL comm)", weft_comm_set_autotune(NULL, 1), WEFT_STATUS_INVALID_ARGUMENT);

  /* ---- JIT (needs no GPU) ---- */
  void *cubin = NULL;
  size_t cubin_size = 0;
  const char *good = "extern \"C\" __global__ void k(int *p) { *p = 1; }\n";
  const char *bad_opts[] = {NULL};
  TG("jit_compile(NULL source)", weft_jit_compile(NULL, "x.cu", NULL, 0, &cubin, &cubin_size, NULL),
     WEFT_STATUS_INVALID_ARGUMENT);
  TG("jit_compile(NULL cubin)", weft_jit_compile(good, "x.cu", NULL, 0, NULL, &cubin_size, NULL),
     WEFT_STATUS_INVALID_ARGUMENT);
  TG("jit_compile num_options -1",
     weft_jit_compile(good, "x.cu", NULL, -1, &cubin, &cubin_size, NULL),
     WEFT_STATUS_INVALID_ARGUMENT);
  TG("jit_compile NULL option", weft_jit_compile(good, "x.cu", bad_opts, 1, &cubin, &cubin_size, NULL),
     WEFT_STATUS_INVALID_ARGUMENT);
  char *log = NULL;
  setenv("WEFT_CACHE_DISABLE", "1", 1);
  TG("jit_compile syntax error",
     weft_jit_compile("extern \"C\" __global__ void k( {", "bad.cu", NULL, 0, &cubin, &cubin_size, &log),
     WEFT_STATUS_COMPILE_ERROR);
  if (!log || !strstr(log, "bad.cu")) {
    failures++;
    printf("FAIL compile error log does not name the file: %s\n", log ? log : "(null)");
  }
  weft_jit_free(log);
  weft_kernel_t *kern = NULL;
  TG("module_get_kernel(NULL module)", weft_module_get_kernel(NULL, "k", &kern),
     WEFT_STATUS_INVALID_ARGUMENT);
  weft_launch_config_t lc = WEFT_LAUNCH_CONFIG_INIT;
  TG("kernel_launch(NULL kernel)", weft_kernel_launch(NULL, &lc, NULL, NULL),
     WEFT_STATUS_INVALID_ARGUMENT);
  TG("module_load(NULL comm)", weft_module_load(NULL, good, "x.cu", NULL, 0, (weft_module_t **)&kern),
     WEFT_STATUS_INVALID_ARGUMENT);

  /* ---- a hand-built communicator: world of 1, a fake heap of 1 MiB ---- */
  weft_comm_t *comm = calloc(1, sizeof *comm);
  pthread_mutex_init(&comm->error_lock, NULL);
  comm->world = comm->local_world = 1;
  comm->timeout_ns = 2000000000ull;
  if (weft_bootstrap_create("", 0, 1, comm->timeout_ns, &comm->bootstrap) != WEFT_STATUS_SUCCESS) {
    printf("FAIL bootstrap of a world of one: %s\n", weft_get_last_error());
    return 1;
  }
  comm->heap.base = comm->heap.mine = 0x7f0000000000ull;
  comm->heap.stride = (1u << 20) + WEFT_SYNC_BYTES;
  comm->heap.size = 1u << 20;
  weft_suballoc_init(&comm->heap.alloc, comm->heap.size, 1024);
  uint64_t off;
  weft_suballoc_alloc(&comm->heap.alloc, 4096, &off); /* one live allocation at the heap start */
  char *heap = (char *)(uintptr_t)(comm->heap.mine + WEFT_SYNC_BYTES + off);
  char local[64];
  void *p = NULL;
  uint64_t *sig = (uint64_t *)heap;

  T("malloc size 0", weft_malloc(comm, 0, &p), WEFT_STATUS_INVALID_ARGUMENT);
  T("malloc NULL result", weft_malloc(comm, 64, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  T("malloc beyond the heap (exhausted)", weft_malloc(comm, 2u << 20, &p), WEFT_STATUS_OUT_OF_MEMORY);
  T("free(NULL)", weft_free(comm, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  T("free of host memory", weft_free(comm, local), WEFT_STATUS_INVALID_ARGUMENT);
  T("free inside an allocation", weft_free(comm, heap + 64), WEFT_STATUS_INVALID_ARGUMENT);
  T("free of heap memory never allocated", weft_free(comm, heap + 8192), WEFT_STATUS_INVALID_ARGUMENT);
  T("peer_ptr rank -1", weft_peer_ptr(comm, heap, -1, &p), WEFT_STATUS_INVALID_ARGUMENT);
  T("peer_ptr rank == world", weft_peer_ptr(comm, heap, 1, &p), WEFT_STATUS_INVALID_ARGUMENT);
  T("peer_ptr of host memory", weft_peer_ptr(comm, local, 0, &p), WEFT_STATUS_INVALID_ARGUMENT);
  T("peer_ptr NULL result", weft_peer_ptr(comm, heap, 0, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  T("put dst outside the heap", weft_stream_put(comm, local, heap, 8, 0, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("put crossing the heap's end",
    weft_stream_put(comm, (char *)(uintptr_t)comm->heap.mine + comm->heap.stride - 8, heap, 16, 0, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("put src NULL", weft_stream_put(comm, heap, NULL, 8, 0, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  T("put rank 3 of 1", weft_stream_put(comm, heap, local, 8, 3, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  T("get src outside the heap", weft_stream_get(comm, heap, local, 8, 0, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("get dst NULL", weft_stream_get(comm, NULL, heap, 8, 0, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  T("signal_set misaligned", weft_stream_signal_set(comm, (uint64_t *)(heap + 4), 1, 0, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("signal_set outside the heap", weft_stream_signal_set(comm, (uint64_t *)local, 1, 0, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("signal_add rank -2", weft_stream_signal_add(comm, sig, 1, -2, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  T("signal_wait cmp 99", weft_stream_signal_wait(comm, sig, (weft_cmp_t)99, 1, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("signal_wait NULL", weft_stream_signal_wait(comm, NULL, WEFT_CMP_GE, 1, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("put_signal with a bad signal (nothing enqueued)",
    weft_stream_put_signal(comm, heap + 64, local, 8, (uint64_t *)(heap + 3), 1, 0, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  /* the overlapped ops refuse before any GPU work (fake but aligned device pointers) */
  char *hend = (char *)(uintptr_t)(comm->heap.mine + comm->heap.stride);
  void *off_heap = (void *)(uintptr_t)0x100000, *dev = heap + 1024;
  const weft_dtype_t BF = WEFT_DTYPE_BF16;
  const weft_gemm_layout_t NK = WEFT_GEMM_LAYOUT_NK;
  T("ag_gemm by LL", weft_ag_gemm(comm, dev, heap, dev, 64, dev, 64, 8, 64, 64, BF, BF, NK, WEFT_ALGO_LL, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("ag_gemm layout 5", weft_ag_gemm(comm, dev, heap, dev, 64, dev, 64, 8, 64, 64, BF, BF, (weft_gemm_layout_t)5,
    WEFT_ALGO_AUTO, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  T("ag_gemm k 12", weft_ag_gemm(comm, dev, heap, dev, 16, dev, 64, 8, 64, 12, BF, BF, NK, WEFT_ALGO_AUTO, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("ag_gemm a_gathered off the heap",
    weft_ag_gemm(comm, dev, off_heap, dev, 64, dev, 64, 8, 64, 64, BF, BF, NK, WEFT_ALGO_AUTO, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("ag_gemm a inside a_gathered, not in place",
    weft_ag_gemm(comm, heap + 16, heap, dev, 64, dev, 64, 8, 64, 64, BF, BF, NK, WEFT_ALGO_AUTO, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  size_t ws = 0;
  TG("gemm_rs_workspace_size(NULL comm)", weft_gemm_rs_workspace_size(NULL, 8, 8, BF, &ws),
     WEFT_STATUS_INVALID_ARGUMENT);
  T("gemm_rs_workspace_size fp64", weft_gemm_rs_workspace_size(comm, 8, 8, WEFT_DTYPE_FP64, &ws),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("gemm_rs_workspace_size 10 x 3 bf16", weft_gemm_rs_workspace_size(comm, 10, 3, BF, &ws),
    WEFT_STATUS_SUCCESS);
  checked++;
  /* the partial product (60 bytes, rounded to 64), then one staging slot: the fused scatter's
   * two 64-row blocks of 6-byte rows (768), + 16 */
  if (ws != 64 + 784) failures++, printf("FAIL gemm_rs workspace of 10 x 3 bf16, 1 rank: %zu, not 848\n", ws);
  T("gemm_rs workspace too small (past the heap's end)",
    weft_gemm_rs(comm, dev, 64, dev, 64, dev, hend - 256, 64, 64, 64, BF, BF, NK, WEFT_ALGO_AUTO, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("comm_set_autotune 2", weft_comm_set_autotune(comm, 2), WEFT_STATUS_INVALID_ARGUMENT);
  T("gemm_rs algo ring", weft_gemm_rs(comm, dev, 64, dev, 64, dev, heap, 64, 64, 64, BF, BF, NK, WEFT_ALGO_RING, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("gemm_rs lda 60", weft_gemm_rs(comm, dev, 60, dev, 64, dev, heap, 64, 64, 56, BF, BF, NK, WEFT_ALGO_AUTO, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("gemm_ar c off the heap",
    weft_gemm_ar(comm, dev, 64, dev, 64, off_heap, heap, 64, 64, 64, BF, BF, NK, WEFT_ALGO_AUTO, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("gemm_ar c inside the workspace",
    weft_gemm_ar(comm, dev, 64, dev, 64, heap + 64, heap, 64, 64, 64, BF, BF, NK, WEFT_ALGO_AUTO, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  /* alltoall(v): refused before any GPU work (world of one: counts index rank 0) */
  const weft_dtype_t U8 = WEFT_DTYPE_UINT8;
  T("alltoall dtype 9", weft_alltoall(comm, dev, heap, 8, (weft_dtype_t)9, WEFT_ALGO_AUTO, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("alltoall algo ring", weft_alltoall(comm, dev, heap, 8, U8, WEFT_ALGO_RING, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  T("alltoall by LL above its limit",
    weft_alltoall(comm, off_heap, heap, WEFT_ALLTOALL_LL_MAX_BYTES + 1, U8, WEFT_ALGO_LL, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("alltoall recvbuf off the heap (SM)", weft_alltoall(comm, dev, off_heap, 8, U8, WEFT_ALGO_SM, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("alltoall past the heap's end (SM)", weft_alltoall(comm, dev, hend - 16, 32, U8, WEFT_ALGO_SM, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("alltoall sendbuf NULL", weft_alltoall(comm, NULL, heap, 8, U8, WEFT_ALGO_AUTO, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("alltoall in place", weft_alltoall(comm, heap, heap, 8, U8, WEFT_ALGO_AUTO, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("alltoall sendbuf overlapping recvbuf", weft_alltoall(comm, heap + 7, heap, 8, U8, WEFT_ALGO_SM, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("alltoall count overflows", weft_alltoall(comm, dev, heap, SIZE_MAX / 4, WEFT_DTYPE_FP64, WEFT_ALGO_AUTO, NULL),
    WEFT_STATUS_INVALID_ARGUMENT);
  T("alltoall of 0 elements", weft_alltoall(comm, NULL, NULL, 0, U8, WEFT_ALGO_AUTO, NULL), WEFT_STATUS_SUCCESS);
  size_t c8[1] = {8}, c9[1] = {9}, d0[1] = {0}, dbig[1] = {SIZE_MAX - 4}, dfar[1] = {1u << 20};
  size_t cll[1] = {WEFT_ALLTOALL_LL_MAX_BYTES + 1};
  const struct {
    const char *what;
    void *send;
    const size_t *sc, *sd;
    void *recv;
    const size_t *rc, *rd;
    weft_dtype_t dt;
    weft_algo_t algo;
  } a2av[] = {
      {"alltoallv NULL sendcounts", dev, NULL, d0, heap, c8, d0, U8, WEFT_ALGO_AUTO},
      {"alltoallv NULL rdispls", dev, c8, d0, heap, c8, NULL, U8, WEFT_ALGO_AUTO},
      {"alltoallv own send and receive counts differ", dev, c8, d0, heap, c9, d0, U8, WEFT_ALGO_AUTO},
      {"alltoallv sdispls overflows", dev, c8, dbig, heap, c8, d0, U8, WEFT_ALGO_AUTO},
      {"alltoallv rdispls overflows", dev, c8, d0, heap, c8, dbig, U8, WEFT_ALGO_AUTO},
      {"alltoallv rdispls past the heap's end", dev, c8, d0, heap, c8, dfar, U8, WEFT_ALGO_AUTO},
      {"alltoallv recvbuf off the heap", dev, c8, d0, off_heap, c8, d0, U8, WEFT_ALGO_AUTO},
      {"alltoallv recvbuf NULL with elements to receive", dev, c8, d0, NULL, c8, d0, U8, WEFT_ALGO_AUTO},
      {"alltoallv send region overlapping the receive region", heap + 4, c8, d0, heap, c8, d0,
       WEFT_DTYPE_FP32, WEFT_ALGO_AUTO},
      {"alltoallv algo two-shot", dev, c8, d0, heap, c8, d0, U8, WEFT_ALGO_TWO_SHOT},
      {"alltoallv by LL above its limit", off_heap, cll, d0, heap, cll, d0, U8, WEFT_ALGO_LL},
  };
  for (size_t i = 0; i < sizeof a2av / sizeof a2av[0]; i++)
    T(a2av[i].what, weft_alltoallv(comm, a2av[i].send, a2av[i].sc, a2av[i].sd, a2av[i].recv, a2av[i].rc,
                                   a2av[i].rd, a2av[i].dt, a2av[i].algo, NULL),
      WEFT_STATUS_INVALID_ARGUMENT);
  T("comm_size NULL result", weft_comm_size(comm, NULL), WEFT_STATUS_INVALID_ARGUMENT);
  weft_comm_abort(comm);
  T("malloc after abort", weft_malloc(comm, 64, &p), WEFT_STATUS_ABORTED);
  T("put after abort", weft_stream_put(comm, heap, local, 8, 0, NULL), WEFT_STATUS_ABORTED);

  /* ---- the multicast guard (docs/architecture.md, "NVLink multicast is off") ---- */
  char why[128];
  unsetenv("WEFT_ENABLE_MULTICAST");
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  checked++;
  if (weft_multicast_allowed(why, sizeof why)) failures++, printf("FAIL multicast allowed by default\n");
  setenv("WEFT_ENABLE_MULTICAST", "1", 1);
  checked++;
  if (weft_multicast_allowed(why, sizeof why)) failures++, printf("FAIL multicast allowed with NCCL_NVLS_ENABLE=0\n");
  unsetenv("NCCL_NVLS_ENABLE");
  setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
  checked++;
  if (weft_multicast_allowed(why, sizeof why)) failures++, printf("FAIL multicast allowed with TORCH_SYMM_MEM_DISABLE_MULTICAST=1\n");
  unsetenv("WEFT_ENABLE_MULTICAST");

  weft_bootstrap_destroy(comm->bootstrap);
  weft_suballoc_destroy(&comm->heap.alloc);
  free(comm);
  printf("%d checks, %d failed\n", checked, failures);
  return failures ? 1 : 0;
}
