/* ops.c — the table of ops, the communicator's life as users see it (the runtime's half, then
 * every op's state), and the shared machinery (the side stream for copy-engine work). */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/module.h"
#include "../runtime/comm.h"
#include "../runtime/loader.h"
#include "gemm/gemm.h"

static const struct {
  const char *name;
  weft_status_t (*init)(weft_comm_t *);
  void (*destroy)(weft_comm_t *);
} ops_table[] = {
    {"allgather", weft_allgather_init, weft_allgather_destroy},
    {"gemm", weft_gemm_init, weft_gemm_destroy},
    {"reduce", weft_reduce_init, weft_reduce_destroy},
    {"ag_gemm", weft_ag_gemm_init, weft_ag_gemm_destroy},
    {"gemm_rs", weft_gemm_rs_init, weft_gemm_rs_destroy},
    {"gemm_ar", weft_gemm_ar_init, weft_gemm_ar_destroy},
    {"alltoall", weft_alltoall_init, weft_alltoall_destroy},
    {"moe", weft_moe_init, weft_moe_destroy},
};

size_t weft_dtype_size(weft_dtype_t dtype) {
  static const size_t sizes[WEFT_DTYPE_COUNT] = {1, 4, 2, 2, 4, 8};
  return (int)dtype >= 0 && dtype < WEFT_DTYPE_COUNT ? sizes[dtype] : 0;
}

/* g->clusters: the clusters of 1, 2, 4 and 8 CTAs that fit at once, each CTA alone on its SM as a
 * GEMM's is (it asks for the whole opt-in shared memory), by the occupancy of kernels/runtime.cu's
 * probe. */
static weft_status_t gpu_clusters(weft_comm_t *comm, weft_ops_gpu_t *g) {
  struct weft_kernel *probe;
  WEFT_CHECK(weft_module_get_kernel(comm->runtime_module, "weft_rt_occupancy_probe", &probe));
  int smem;
  WEFT_CU(comm, cuDeviceGetAttribute(&smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                     comm->device));
  WEFT_CU(comm,
          cuFuncSetAttribute(probe->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
  for (int i = 0; i < 4; i++) {
    unsigned size = 1u << i;
    CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
    at.value.clusterDim.x = size, at.value.clusterDim.y = at.value.clusterDim.z = 1;
    CUlaunchConfig lc = {.gridDimX = (unsigned)g->sms / size * size, .gridDimY = 1, .gridDimZ = 1,
                         .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1,
                         .sharedMemBytes = (unsigned)smem, .attrs = &at, .numAttrs = 1};
    WEFT_CU(comm, cuOccupancyMaxActiveClusters(&g->clusters[i], probe->function, &lc));
  }
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_ops_init(weft_comm_t *comm) {
  weft_ops_t *o = calloc(1, sizeof *o);
  if (!o) return WEFT_ERR(comm, WEFT_STATUS_OUT_OF_MEMORY, "host allocation failed");
  comm->ops = o;
  pthread_mutex_init(&o->tune_lock, NULL);
  o->autotune = weft_env_is("WEFT_AUTOTUNE", "1");
  WEFT_CU(comm,
          cuDeviceGetAttribute(&o->gpu.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, comm->device));
  /* peak memory bandwidth: double data rate x the bus's bytes (H100 SXM about 3350 GB/s, H200 4800) */
  int mem_khz, bus_bits;
  WEFT_CU(comm, cuDeviceGetAttribute(&mem_khz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, comm->device));
  WEFT_CU(comm, cuDeviceGetAttribute(&bus_bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, comm->device));
  o->gpu.hbm_gbps = (int)(2.0 * mem_khz * 1e3 * (bus_bits / 8) / 1e9);
  WEFT_CHECK(gpu_clusters(comm, &o->gpu));
  WEFT_TRACE("gpu: %d SMs, %d GB/s, clusters of 2/4/8 CTAs at once %d/%d/%d", o->gpu.sms,
             o->gpu.hbm_gbps, o->gpu.clusters[1], o->gpu.clusters[2], o->gpu.clusters[3]);
  uint64_t comm_sms;
  if (!weft_env_u64("WEFT_COMM_SMS", 0, false, &comm_sms) || comm_sms >= (uint64_t)o->gpu.sms)
    return WEFT_ERR(comm, WEFT_STATUS_INVALID_ARGUMENT,
                    "WEFT_COMM_SMS must be a number of SMs below the device's %d", o->gpu.sms);
  o->comm_sms = (int)comm_sms;
  WEFT_CU(comm, cuEventCreate(&o->fork, CU_EVENT_DISABLE_TIMING));
  WEFT_CU(comm, cuStreamCreate(&o->side, CU_STREAM_NON_BLOCKING));
  WEFT_CU(comm, cuEventCreate(&o->join, CU_EVENT_DISABLE_TIMING));
  for (size_t i = 0; i < sizeof ops_table / sizeof ops_table[0]; i++) {
    weft_status_t st = ops_table[i].init(comm);
    if (st != WEFT_STATUS_SUCCESS) return st;
    WEFT_TRACE("op %s ready", ops_table[i].name);
  }
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_ops_fork(weft_comm_t *comm, CUstream stream) {
  WEFT_CU(comm, cuEventRecord(comm->ops->fork, stream));
  WEFT_CU(comm, cuStreamWaitEvent(comm->ops->side, comm->ops->fork, 0));
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_ops_join(weft_comm_t *comm, CUstream stream) {
  WEFT_CU(comm, cuEventRecord(comm->ops->join, comm->ops->side));
  WEFT_CU(comm, cuStreamWaitEvent(stream, comm->ops->join, 0));
  return WEFT_STATUS_SUCCESS;
}

void weft_ops_destroy(weft_comm_t *comm) {
  weft_ops_t *o = comm->ops;
  if (!o) return;
  for (size_t i = sizeof ops_table / sizeof ops_table[0]; i-- > 0;) ops_table[i].destroy(comm);
  if (o->side) weft_cu.cuStreamDestroy(o->side);
  if (o->join) weft_cu.cuEventDestroy(o->join);
  if (o->fork) weft_cu.cuEventDestroy(o->fork);
  weft_autotune_forget(comm);
  pthread_mutex_destroy(&o->tune_lock);
  free(o);
  comm->ops = NULL;
}

weft_status_t weft_comm_init(weft_comm_t **out, const weft_comm_config_t *config) {
  WEFT_ARG(NULL, out, "comm is NULL");
  weft_comm_t *comm;
  WEFT_CHECK(weft_comm_open(&comm, config));
  /* The ops allocate symmetric scratch: collective, so every rank gets here (open agreed). */
  weft_status_t st = weft_comm_agree(comm, weft_ops_init(comm));
  if (st != WEFT_STATUS_SUCCESS) {
    weft_ops_destroy(comm);
    weft_comm_free(comm);
    return st;
  }
  *out = comm;
  return WEFT_STATUS_SUCCESS;
}

weft_status_t weft_comm_destroy(weft_comm_t *comm) {
  WEFT_ARG(NULL, comm, "comm is NULL");
  int freeable;
  weft_status_t st = weft_comm_finish(comm, &freeable);
  if (!freeable) return st;
  weft_ops_destroy(comm);
  weft_comm_free(comm);
  return st;
}

weft_status_t weft_comm_set_autotune(weft_comm_t *comm, int on) {
  WEFT_CHECK(weft_comm_check(comm));
  WEFT_ARG(comm, on == 0 || on == 1, "autotune %d: 0 or 1", on);
  comm->ops->autotune = on;
  return WEFT_STATUS_SUCCESS;
}
